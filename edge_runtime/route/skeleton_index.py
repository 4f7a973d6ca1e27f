"""IS1's second index: entries by the skeleton of their template, for questions reworded around the slots.

A sentence embedding moves a lot when the names and objects of a question change ("John has 10
hectares of a pineapple field" → "Kenneth has 10 square meters of raspberry field": the static
table puts it below the threshold, with another entry first). The template's skeleton — its
function words and phrasing, numbers masked — barely moves. This index scores entries by the
TF-IDF-weighted overlap of word bigrams (numbers and slots as ``#``) between the question and
each template, through an inverted index: a few hundred dictionary lookups per question.

It only proposes candidates: the aligned path (``template_align.py``) accepts one only if the
question really is the template reworded, and the guard checks it after that.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from edge_runtime.read.english_words import CARDINALS

_WORD = re.compile(r"\d+(?:[.,/]\d+)*|[a-z]+(?:'[a-z]+)?|[$€£%?]")
_NUMBER_WORDS = frozenset(CARDINALS) - {"million"}
_CURRENCY = {"€": "$", "£": "$"}


@dataclass(frozen=True)
class SkeletonCandidate:
    entry_id: str
    score: float  # cosine of the TF-IDF bigram vectors, in [0, 1]


def _words(text: str) -> list[str]:
    out = []
    for word in _WORD.findall(text.lower()):
        if word[0].isdigit() or word in _NUMBER_WORDS:
            word = "#"
        elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out.append(_CURRENCY.get(word, word))
    return out


def _collapsed(words: list[str]) -> list[str]:
    """Runs of ``#`` as one: "thirty two" and "7 24" are one number slot."""
    out: list[str] = []
    for word in words:
        if not (word == "#" and out and out[-1] == "#"):
            out.append(word)
    return out


def _bigrams(collapsed: list[str]) -> Counter[str]:
    return Counter(f"{a} {b}" for a, b in zip(collapsed, collapsed[1:]))


def skeleton_words(template: str) -> list[str]:
    """The template's words with every slot and number as ``#``."""
    parts: list[str] = []
    for literal, field, _, _ in string.Formatter().parse(template):
        parts.append(literal)
        if field is not None:
            parts.append(" 0 ")
    return _words("".join(parts))


class SkeletonIndex:
    """Inverted index of template bigrams (numpy postings); ``search`` returns the best-scoring entries."""

    def __init__(self, templates: Iterable[tuple[str, str]]) -> None:
        skeletons = [(eid, _collapsed(skeleton_words(t))) for eid, t in templates]
        self._exact: dict[str, list[str]] = defaultdict(list)
        for eid, words in skeletons:
            self._exact[" ".join(words)].append(eid)
        vectors = [(eid, _bigrams(words)) for eid, words in skeletons]
        self._ids = [eid for eid, _ in vectors]
        documents = Counter(gram for _, vector in vectors for gram in vector)
        count = max(1, len(vectors))
        self._idf = {gram: math.log((1 + count) / (1 + df)) + 1.0 for gram, df in documents.items()}
        self._unseen_idf = math.log(1 + count) + 1.0  # a bigram no template has
        rows: dict[str, list[tuple[int, float]]] = defaultdict(list)
        norms = np.ones(len(vectors), dtype=np.float64)
        for i, (_, vector) in enumerate(vectors):
            weights = {gram: tf * self._idf[gram] for gram, tf in vector.items()}
            norms[i] = math.sqrt(sum(w * w for w in weights.values())) or 1.0
            for gram, weight in weights.items():
                rows[gram].append((i, weight))
        self._norms = norms
        self._postings = {gram: (np.array([i for i, _ in items], dtype=np.int32),
                                 np.array([w for _, w in items], dtype=np.float64)) for gram, items in rows.items()}

    def __len__(self) -> int:
        return len(self._ids)

    def exact(self, question: str) -> list[str]:
        """The entries whose template skeleton the question has word for word (numbers masked): the
        template path's candidates with one dictionary lookup, however large the bundle."""
        return self._exact.get(" ".join(_collapsed(_words(question))), [])

    def search(self, question: str, k: int = 3, min_score: float = 0.3) -> list[SkeletonCandidate]:
        grams = _bigrams(_collapsed(_words(question)))
        known = [(g, tf * self._idf[g]) for g, tf in grams.items() if g in self._idf]
        if not known:
            return []
        q_norm = math.sqrt(sum(w * w for _, w in known)
                           + sum((tf * self._unseen_idf) ** 2 for g, tf in grams.items() if g not in self._idf))
        index = np.concatenate([self._postings[g][0] for g, _ in known])
        weight = np.concatenate([self._postings[g][1] * w for g, w in known])
        scores = np.bincount(index, weights=weight, minlength=len(self._ids)) / (self._norms * q_norm)
        best = np.argsort(-scores)[:k]
        return [SkeletonCandidate(self._ids[i], round(float(scores[i]), 4)) for i in best if scores[i] >= min_score]
