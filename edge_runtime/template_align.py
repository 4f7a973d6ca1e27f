"""IS2's second fast path: the question is the entry's template reworded around the slots.

Agents and people keep a question's skeleton while changing names, objects and the odd
word ("Benny saw a 10-foot shark" → "Michael saw a 140-foot dolphin"). A word-level
alignment of the template against the question finds each slot's value between literal
neighbours that survived unchanged. A slot counts only when it is *anchored*: the words on
both sides of it matched, and what lies between them is exactly one value. If any slot is
not anchored, this path declines and the model path decides.
"""

from __future__ import annotations

import re
import string
from difflib import SequenceMatcher
from fractions import Fraction

from edge_runtime.draft import number_spans
from edge_runtime.metadata import Param

_TOKEN = re.compile(r"\d+(?:[.,/]\d+)*|[A-Za-z]+(?:'[a-z]+)?|[^\w\s]")
_SLOT = "\x00"
#: Words that carry a quantity: if one appears or disappears outside the slots, the question changed.
_QUANTITY_WORDS = set(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million "
    "billion half halves third thirds quarter quarters fourth fourths fifth fifths sixth eighth tenth dozen dozens "
    "twice thrice double triple once pair couple percent hour hours minute minutes day days week weeks month months "
    "year years".split()
)


def _is_quantity(token: str) -> bool:
    return token[:1].isdigit() or token in _QUANTITY_WORDS or token == "%"


def _tokens(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(0).lower(), m.start(), m.end()) for m in _TOKEN.finditer(text)]


def _template_tokens(template: str) -> list[str]:
    out: list[str] = []
    for literal, field, _, _ in string.Formatter().parse(template):
        out += [t for t, _, _ in _tokens(literal)]
        if field is not None:
            out.append(_SLOT + field)
    return out


def aligned_values(template: str, params: tuple[Param, ...], question: str, *, min_anchor_ratio: float = 0.6) -> dict[str, str] | None:
    """Each parameter's text in ``question`` if every slot is anchored by unchanged neighbours, else None."""
    t_tokens = _template_tokens(template)
    q_tokens = _tokens(question)
    q_words = [t for t, _, _ in q_tokens]
    literal = [t for t in t_tokens if not t.startswith(_SLOT)]
    matcher = SequenceMatcher(None, t_tokens, q_words, autojunk=False)
    mapped: dict[int, int] = {}
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            mapped[block.a + k] = block.b + k
    if not literal or sum(1 for i, t in enumerate(t_tokens) if i in mapped) < min_anchor_ratio * len(literal):
        return None  # too little of the template survives: this is a different question, or a paraphrase
    by_name = {p.name: p for p in params}
    values: dict[str, str] = {}
    slot_regions: list[tuple[int, int]] = []
    i = 0
    while i < len(t_tokens):
        if not t_tokens[i].startswith(_SLOT):
            i += 1
            continue
        j = i
        while j + 1 < len(t_tokens) and t_tokens[j + 1].startswith(_SLOT):
            j += 1  # adjacent slots ("{count} {size}-inch") share one pair of anchors
        left = mapped.get(i - 1) if i > 0 else -1
        right = mapped.get(j + 1) if j + 1 < len(t_tokens) else len(q_tokens)
        if left is None or right is None or right - left < 2:
            return None
        slot_regions.append((left + 1, right))
        names = [t[1:] for t in t_tokens[i : j + 1]]
        if len(names) == 1:
            spans = [question[q_tokens[left + 1][1] : q_tokens[right - 1][2]].strip()]
        elif right - left - 1 == len(names):
            spans = [question[q_tokens[k][1] : q_tokens[k][2]] for k in range(left + 1, right)]
        else:
            return None
        for name, span in zip(names, spans):
            if not _is_one_value(by_name[name], span) or values.get(name, span) != span:
                return None
            values[name] = span
        i = j + 1
    if set(values) != set(by_name):
        return None
    # Every quantity outside the slots must be the template's own, unchanged: a changed constant
    # ("half" → "one quarter") or an added number means different reasoning, not new values.
    covered = set(mapped.values())
    for start, end in slot_regions:
        covered.update(range(start, end))
    for i, token in enumerate(t_tokens):
        if not token.startswith(_SLOT) and _is_quantity(token) and i not in mapped:
            return None
    if any(_is_quantity(q_words[j]) for j in range(len(q_words)) if j not in covered):
        return None
    return {p.name: values[p.name] for p in params}


def _is_one_value(param: Param, span: str) -> bool:
    if param.choices is not None:
        return span.lower() in {str(c).lower() for c in param.choices}
    if param.type in (int, float, Fraction):
        spans = number_spans(span)
        return len(spans) == 1 and len(spans[0]) >= len(span.strip("$€£%. ")) - 1
    return bool(span)
