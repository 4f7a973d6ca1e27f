"""Does an aligned question's final question ask for what the template's asks for?

The aligner (``template_align``) reads a question as the template reworded around its slots. The final question is
what the entry's reasoning answers, so a change there is held to the renames the rest of the question made: a word
that appears in the final question and nowhere before ("have left" → "spend", "hours" → "minutes") asks for another
quantity. The helpers here compare the two final questions' words, normalised as the reading pack's ``AlignWords``
compares them; a template token that stands for a slot starts with ``SLOT``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from edge_runtime.read.template_align import AlignWords

SLOT = "\x00"


def target_start(t_tokens: list[str]) -> int:
    """Index of the first token of the template's final question (its last sentence with a '?')."""
    ends = [i for i, t in enumerate(t_tokens) if t in (".", "?", "!")]
    asked = [i for i in ends if t_tokens[i] == "?"]
    last = asked[-1] if asked else (ends[-1] if ends else len(t_tokens))
    before = [i for i in ends if i < last]
    return before[-1] + 1 if before else 0


def asks_the_same(t_final: list[str], q_final: list[str], renamed: set[tuple[str, str]], vocab: AlignWords) -> bool:
    """The final questions (normalised tokens) differ only in how they pose the question: without the words of
    its frame, the question's words are the template's in the same order, each the same word or the rename the
    question made before its final question. A word the rest of the question renamed away that the final
    question keeps would ask for the other role, so it does not count as the same."""
    if not vocab.question_frame:
        return False
    frame = {vocab.norm(w) for w in vocab.question_frame}
    asked = [w for w in t_final if not w.startswith(SLOT) and w.isalpha() and w not in frame]
    posed = [w for w in q_final if w.isalpha() and w not in frame and not vocab.is_quantity(w)]
    renamed_away = {t for t, q in renamed if t != q}
    return len(asked) == len(posed) and all(
        (a == b and a not in renamed_away) or (a, b) in renamed for a, b in zip(asked, posed))


def loses_most(t_final: list[str], q_final: list[str], renamed_from: dict[str, set[str]], vocab: AlignWords) -> bool:
    """The question's final question keeps fewer than half of the words that name what the template's asks for (from
    its question word on, besides the frame: "how many", "what is the"), each kept or renamed as the question renamed
    it before. One reworded for the same quantity keeps most of them ("How much money does he make" → "How many
    dollars does he make"); one asking for another quantity keeps few ("what percentage of this distance has he
    covered" → "how many kilometers does he still have left to travel")."""
    frame = {vocab.norm(w) for w in vocab.question_frame} | {vocab.norm(w) for w in vocab.common}
    asked = {w for w in asking(t_final) if not w.startswith(SLOT) and w.isalpha() and w not in frame
             and not vocab.is_quantity(w)}
    posed = {w for w in asking(q_final) if w.isalpha() and w not in frame}
    kept = {w for w in asked if w in posed or any(w in renamed_from.get(b, ()) for b in posed)}
    return bool(asked) and 2 * len(kept) < len(asked)


_QUESTION_WORDS = frozenset("how what which who whom whose calculate compute find determine".split())


def asking(final: list[str]) -> list[str]:
    """A final question's tokens from its first question word on (a condition before it states givens)."""
    start = next((i for i, w in enumerate(final) if re.split(r"['’]", w)[0] in _QUESTION_WORDS), 0)  # "what's" too
    return final[start:]


def content(words: list[str], vocab: AlignWords) -> tuple[str, ...]:
    """The words of a phrase that name something, compared as ``vocab.norm`` does (a possessive as its name)."""
    bare = (re.sub(r"['’]s?$", "", w) for w in words)
    return tuple(vocab.norm(w) for w in bare if w.isalpha() and w not in vocab.common and not vocab.is_quantity(w))


def loose(words: list[str], vocab: AlignWords) -> set[str]:
    """The content words of a phrase, each without a final "e" (see ``without_e``)."""
    return {without_e(w) for w in content(words, vocab)}


def _after_determiner(words: set[str], stretch: list[str], vocab: AlignWords) -> bool:
    """Each of ``words`` (loose spellings) follows a determiner in ``stretch`` ("his uncle", "a neighbor")."""
    spelled = [without_e(vocab.norm(w)) for w in stretch]
    determiners = {vocab.norm(d) for d in vocab.determiners}
    return all(any(spelled[i] == w and vocab.norm(stretch[i - 1]) in determiners for i in range(1, len(stretch)))
               for w in words)


def without_e(stem: str) -> str:
    """A stem compared without a final "e": the plural ending rule stems "quiches" to "quich", "quiche" stays."""
    return stem[:-1] if len(stem) > 3 and stem.endswith("e") else stem


def renamed_from(before: set[tuple[tuple[str, ...], tuple[str, ...]]]) -> dict[str, set[str]]:
    """Each word a rename before the final question put in place of template words -> those template words
    ("comic books" → "magazines": magazine -> {comic, book})."""
    sources: dict[str, set[str]] = {}
    for t_phrase, q_phrase in before:
        if not t_phrase:
            continue  # words inserted ("$5" → "5 dollars"), not a template word renamed
        for word in q_phrase:
            if word not in t_phrase:
                sources.setdefault(word, set()).update(t_phrase)
    return sources


def renamed_consistently(word: str, before: set[tuple[tuple[str, ...], tuple[str, ...]]],
                          target: list[tuple[tuple[str, ...], tuple[str, ...]]]) -> bool:
    """``word`` reaches the final question by a rename the question makes before it too, and the template's
    own ``word`` is renamed away there: "the rest play video games or music; 10 bake ... how many play music"
    → "the rest read or bake; 10 dance ... how many bake" names the same roles with other hobbies."""
    return (any(word in q and (t, q) in before for t, q in target)
            and any(word in t and word not in q for t, q in before))


def names_the_pronoun(word: str, t_words: list[str], pronoun_names: dict[str, set[str]], story: list[str],
                       vocab: AlignWords) -> bool:
    """``word`` names the person a pronoun of the template's final question stands for: the only person the
    template names ("How many books will *she* need" of a story about Wendy alone → "will *Wendy* need"), or the
    name the question put in that pronoun's place everywhere it changed it before ("If *Marissa* wants ..., does
    *Marissa* need")."""
    return any(p in vocab.pronouns and (story == [word] or pronoun_names.get(p) == {word}) for p in t_words)


@dataclass(frozen=True)
class FinalRenames:
    """What a question renamed, to judge a stretch of its final question that differs from the template's.

    It asks for the same thing only if every word that names something is renamed as the rest of the question
    renamed it: each of the question's words is the template's, a word a rename before put in place of one of the
    template's words here ("groceries → household items", then "the price of Stephen's household items"), or, for a
    template pronoun, a person of the story or the name the question gave one ("take him" → "take Priya"; whose role
    it is, the guard checks); and each of the template's words is kept or renamed so. (A thing of the story for
    "its" was allowed once, "its height" → "the bamboo's height", and dropped: "its price" → "the helmet's price"
    asks about another thing the story names.) A word that appears here and nowhere before ("have left" →
    "spend", "carrots" → "vegetables", "hours" → "minutes") asks for another quantity, whatever the rest of the
    question keeps. One exception: a name or thing that each text mentions only in its final question, and the
    other text nowhere, may be renamed, if it is a name in both ("How much did Bentley pay" → "did Diego pay") or
    sits in the condition before the asking words, named with a determiner ("If he sold them to his uncle" → "to a
    neighbor"; not a verb: "gives" → "receives"): the asked quantity is the same. Words are compared as ``loose``
    spells them."""

    renamed_from: dict[str, set[str]]
    story: list[str]  # the people the template names
    q_people: set[str]  # the people the question names
    t_before: set[str]  # the content words of the template before its final question
    q_before: set[str]  # the same, of the question
    t_all: set[str]  # every content word of the template
    q_all: set[str]
    vocab: AlignWords

    @classmethod
    def of(cls, renamed_from: dict[str, set[str]], story: list[str], q_people: list[str], t_norm: list[str],
           t_start: int, q_norm: list[str], q_start: int, vocab: AlignWords) -> FinalRenames:
        """From an alignment: the renames before the final question, the template's people, the question's, and
        both texts' normalised tokens with the index where each one's final question starts."""
        return cls({without_e(k): {without_e(w) for w in v} for k, v in renamed_from.items()},
                   [without_e(w) for w in story], {without_e(vocab.norm(p.lower())) for p in q_people},
                   loose(t_norm[:t_start], vocab), loose(q_norm[:q_start], vocab), loose(t_norm, vocab),
                   loose(q_norm, vocab), vocab)

    def same_ask(self, t_words: list[str], q_words: list[str], pronoun_names: dict[str, set[str]], *,
                 condition: bool) -> bool:
        """Whether the template's changed words ``t_words`` and the question's ``q_words`` in their place ask for the
        same thing; ``condition``: they lie before the final question's asking words."""
        vocab = self.vocab
        frame = loose(list(vocab.question_frame), vocab)  # "how many" posed as "what is the number of"
        content_t = loose([w for w in t_words if not w.startswith(SLOT)], vocab) - frame
        content_q = loose(q_words, vocab) - frame
        pronoun_here = any(w in {vocab.norm(p) for p in vocab.pronouns | vocab.referring} for w in t_words)
        once_t = {w for w in content_t if w not in self.t_before and w not in self.q_all}
        once_q = {w for w in content_q if w not in self.q_before and w not in self.t_all and w not in self.renamed_from}
        names = bool(once_t) and once_t <= set(self.story) and bool(once_q) and once_q <= self.q_people
        if condition:  # a name, or a thing named with a determiner ("to his uncle" → "to a neighbor"); not a verb
            one_off = names or (bool(once_t) and bool(once_q) and _after_determiner(once_t, t_words, vocab)
                                and _after_determiner(once_q, q_words, vocab))
        else:
            one_off = names

        def explained(word: str) -> bool:
            sources = self.renamed_from.get(word, set())
            return (word in content_t or bool(sources & content_t) or one_off and word in once_q
                    or pronoun_here and (word in self.story or word in self.q_people or bool(sources & set(self.story))
                                         or names_the_pronoun(word, t_words, pronoun_names, self.story, vocab)))

        kept = content_q | {t for w in content_q for t in self.renamed_from.get(w, ())} | (once_t if one_off else set())
        return all(explained(w) for w in content_q) and content_t <= kept
