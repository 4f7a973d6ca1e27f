"""A sentence's fronted phrase moved to its end (or back), put where the template has it before aligning.

Reworded questions move a sentence's leading phrase to its end and back: "If he has 64 eggs and 2 trays,
how many eggs won't he place?" is asked as "How many eggs won't he place if he has 64 eggs and 2 trays?";
"On Friday, he picks ..." as "He picks ... on Friday.". A word alignment (template_align.py) sees one
stretch of the template deleted and the same words inserted elsewhere; a stretch with slots deleted holds
no numbers, so the aligned path declines, and the model path, which copies numbers in the order the
question states them, disagrees with a right draft. Measured on our rewording probes
(builder/eval/reword_probe.py): a condition moved to the end was served 37% of the time, a phrase moved 71%.

The move is undone only where it is a move of the same words within one sentence, at a comma: the
template's phrase opens a sentence and ends at its comma, and the question has exactly those words (each
slot a number) at the end of the sentence aligned with it, or the reverse (the question's phrase opens the
sentence and ends at its comma; or the template's words after its fronted phrase open the question's).
Inside the phrase nothing may differ, so every number keeps the words it was stated with; the restored
question then goes through every rule of the aligned path, and the guard judges the question as asked. A
move across sentences is never undone: the order of sentences may be the order of the operations ("He
doubles his money. Then he spends $5.").
"""

from __future__ import annotations

from difflib import SequenceMatcher

from edge_runtime.read.final_question import SLOT as _SLOT
from edge_runtime.read.template_align import AlignWords, _default_words, _template_tokens, _tokens

_ENDS = (".", "?", "!")
_PUNCT = (",", ".", "?", "!", ";", ":")


def restore_moved_phrase(template: str, question: str, *, words: AlignWords | None = None) -> str | None:
    """``question`` with one phrase moved back to where ``template`` has it (see the module docstring), else None.

    ``words``: the reading pack's (``ReadingPack.align_words``); None, the default pack's."""
    vocab = words if words is not None else _default_words()
    t_tokens = _template_tokens(template, vocab)
    q_tokens = _tokens(question, vocab)
    if not q_tokens:
        return None
    t_norm = [t if t.startswith(_SLOT) else vocab.norm(t) for t in t_tokens]
    q_norm = [vocab.norm(t) for t, _, _ in q_tokens]
    ops = SequenceMatcher(None, t_norm, q_norm, autojunk=False).get_opcodes()
    deleted = [op for op in ops if op[0] != "equal" and op[2] > op[1] and all(q in _PUNCT for q in q_norm[op[3]:op[4]])]
    inserted = [op for op in ops if op[0] != "equal" and op[4] > op[3] and all(t in _PUNCT for t in t_norm[op[1]:op[2]])]
    for a in deleted:
        t1, t2 = _trim(t_norm, a[1], a[2])
        if t2 <= t1 or any(t in _ENDS for t in t_norm[t1:t2]):
            continue
        for b in inserted:
            if b is a:
                continue
            q1, q2 = _trim(q_norm, b[3], b[4])
            if q2 <= q1 or any(q in _ENDS for q in q_norm[q1:q2]) or not _same_words(t_norm[t1:t2], q_norm[q1:q2], vocab):
                continue
            restored = _restore(t_norm, q_norm, q_tokens, question, ops, (t1, t2), (q1, q2), a)
            if restored is not None:
                return restored
    return None


def _trim(tokens: list[str], i: int, j: int) -> tuple[int, int]:
    while i < j and tokens[i] in _PUNCT:
        i += 1
    while j > i and tokens[j - 1] in _PUNCT:
        j -= 1
    return i, j


def _same_words(phrase: list[str], words: list[str], vocab: AlignWords) -> bool:
    """``words`` are ``phrase`` word for word, each slot one to three number tokens."""
    if not phrase:
        return not words
    head, rest = phrase[0], phrase[1:]
    if not head.startswith(_SLOT):
        return bool(words) and words[0] == head and _same_words(rest, words[1:], vocab)
    return any(all(vocab.is_quantity(w) for w in words[:n]) and _same_words(rest, words[n:], vocab)
               for n in range(1, min(3, len(words)) + 1))


def _sentence_start(tokens: list[str], i: int) -> bool:
    return i == 0 or tokens[i - 1] in _ENDS


def _maps_to(ops: list[tuple[str, int, int, int, int]], i: int) -> int | None:
    """The question index an equal stretch aligns template index ``i`` with, else None."""
    for op, i1, i2, j1, _ in ops:
        if op == "equal" and i1 <= i < i2:
            return j1 + i - i1
    return None


def _sentence_end(tokens: list[str], i: int) -> int | None:
    for k in range(i, len(tokens)):
        if tokens[k] in _ENDS:
            return k
    return None


def _restore(t_norm: list[str], q_norm: list[str], q_tokens: list[tuple[str, int, int]], question: str,
             ops: list[tuple[str, int, int, int, int]], phrase: tuple[int, int], moved: tuple[int, int],
             deletion: tuple[str, int, int, int, int]) -> str | None:
    (t1, t2), (q1, q2) = phrase, moved
    t_end = _sentence_end(t_norm, t2)
    q_end = _sentence_end(q_norm, q2)
    if t_end is None or q_end is None or _maps_to(ops, t_end) != q_end:
        return None  # the phrase and the words are not in one sentence of the template and the question
    span_start, span_end = q_tokens[q1][1], q_tokens[q2 - 1][2]
    text = question[span_start:span_end]
    at = q_tokens[deletion[3]][1] if deletion[3] < len(q_tokens) else len(question)
    if _sentence_start(t_norm, t1) and t2 < len(t_norm) and t_norm[t2] == "," and q_end == q2 and at <= span_start:
        # fronted in the template, at the sentence's end in the question: "How many B if A?" -> "if A, How many B?"
        return question[:at] + text + ", " + question[at:span_start].rstrip() + question[span_end:]
    comma_before = t1 > 0 and t_norm[t1 - 1] == ","
    comma_after = q2 < len(q_norm) and q_norm[q2] == ","
    if t_end == t2 and _sentence_start(q_norm, q1) and comma_before != comma_after and at > q_tokens[q2 - 1][2]:
        # at the sentence's end in the template, first in the question's: "If A, How many B?" -> "How many B if A?";
        # or what follows the template's fronted phrase, first in the question: "B on Friday." -> "on Friday B."
        cut = q_tokens[q2][2] if comma_after else span_end  # the phrase's comma goes with it
        return question[:span_start] + question[cut:at].strip() + " " + text + question[at:]
    return None
