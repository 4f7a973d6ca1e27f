"""IS2's second fast path: the question is the entry's template reworded around the slots.

Agents and people keep a question's skeleton while changing names, objects, units and the
odd word ("Benny saw a 10-foot shark" → "Michael saw a 140-foot dolphin"; "$1.50 each" →
"£2.75 each"). A word-level alignment of the template against the question (plural endings,
currency symbols and percent spellings compared loosely) splits both into stretches that
match and stretches that differ. The path reads values only where that is unambiguous:

- a differing stretch without slots may change words (a name, an object), never a quantity:
  a number added, removed or changed there ("another set", "after an hour" dropped) means other
  reasoning, and the path declines; a unit may be renamed (ounces → pounds), not added or removed;
  one exception: whole sentences inserted before the final question that name no operation ("also",
  "more", "times", "add" ...) and count nothing the template counts ("Each car rental is $500 per
  day.") are read past, and the guard (IS2) judges their numbers as it does any unexplained number;
- a comparison the template does not write ("60 meters *less* each sprint"), one of its comparison words renamed
  ("3 *times* older" → "10 *years* older"), a distributive word dropped with nothing in its place ("each sprint" →
  "for all the sprints"), or a unit of time renamed where the question still names the template's ("3 times a month
  ... run a week?") changes a quantity by words: the path declines;
- two template words may not trade places: "10 dollar pencils ... 4 pens" for "10 dollar pens
  ... 4 pencils" swaps the roles of the values;
- the final question (what the reasoning answers) may not put a word of the rest of the template
  in place of its own ("how many pencils" where it asked for pens), and may change a word only as
  the rest of the question renamed it (final_question.FinalRenames): "convert to kelvin" → "convert
  to fahrenheit", "have left" → "spend" ask for something else;
- a differing stretch with slots must hold exactly as many numbers as it has numeric slots
  (and the named option of each choice slot), which it takes in order; no other quantity, and
  no value that becomes a share of something ("1 mile" → "1/3 of the total distance");
- a slot repeated in the template must read the same value everywhere;
- a percent may not become another word or go ("5% more" → "0.05 times more" states another number);
- a unit may not become another unit in one place and keep its name in another ("2500 *kilometers* ... an
  additional 4000 miles" of a template in miles: a conversion the reasoning does not make);
- no two template words may become the same word of the question ("15 for a hat" where the
  template's hat keeps its name elsewhere gives "hat" two roles), counting the words just before
  and after the values ("he *ate* 2/4 of them" → "Keisha *bought* 2/4 of them" where she also
  bought them: her purchase and what she ate become one act);
- enough of the template's literal words must survive in order (``min_anchor_ratio``).

Renames that reuse each other's words ("hat, scarf, sweater" → "beanie, hat, tunic") pull a word
alignment off course. When it declines, the question is aligned once more by shape, every name
(a run of naming words: "socks", "leg warmers") standing for any other, so each name meets the
name in its place; there each template name must become one name throughout, and the rules above
apply unchanged.

If anything is off, this path declines (None) and the model path decides.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from fractions import Fraction
from functools import cached_property

from edge_runtime.answer.currency import SYMBOLS as CURRENCY_SYMBOLS
from edge_runtime.entries.metadata import Param
from edge_runtime.read import final_question as fq
from edge_runtime.read.measures import unit_of
from edge_runtime.read.template_match import same_number, spelt_alike

_NAME = "\x01"  # the shape of any run of naming words, in the alignment by shape
_CURRENCY = set(CURRENCY_SYMBOLS)
_DIGITS = r"\d+(?:[.,/]\d+)*"


def _digit_spans(text: str) -> list[str]:
    return re.findall(rf"(?<![\w.]){_DIGITS}", text)


@dataclass(frozen=True)
class AlignWords:
    """The words of a language the aligner reads a question by: a reading pack's (``ReadingPack.align_words``).

    The rules of the module docstring are structural; which words state a quantity, add an operation, name a
    unit of time or are too common to mark a swap is the language's. Empty (the default, ``plain/1``), the
    aligner compares tokens by case only, only digits and "%" are quantities, and it takes a question only where
    its words are the template's and the values alone differ (``renames``)."""

    quantity: frozenset[str] = frozenset()  # words that state a quantity ("three", "half", "dozen")
    adding: frozenset[str] = frozenset()  # words that add an operation without a number ("another")
    operation: frozenset[str] = frozenset()  # words by which an inserted sentence takes part in the reasoning
    comparison: frozenset[str] = frozenset()  # words that change the quantity beside them ("more", "less", "times")
    distributive: frozenset[str] = frozenset()  # words that give a quantity per one of something ("each", "per")
    time_units: frozenset[str] = frozenset()  # units of time, which may be stated with an article alone
    common: frozenset[str] = frozenset()  # words too common to mark a swap of roles when they move
    percent: frozenset[str] = frozenset({"%"})  # spellings of percent, compared as one
    month_days: Mapping[str, int] = field(default_factory=dict)  # a month's name states its days
    compound_number: str = ""  # a regex for a number word written with a hyphen, one token ("thirty-four")
    #: the words that only pose a question about a quantity ("how many", "what is the number of", "did"): a final
    #: question whose other words are the template's, in order, asks for the same thing however it is posed
    question_frame: frozenset[str] = frozenset()
    stem: Callable[[str], str] = str.lower  # how a word longer than three letters is compared (plural endings)
    #: words that stand for a person named before ("she"), and the people a text names, in order ("Wendy"): a final
    #: question may name the person its template's pronoun stands for, when that can only be one person
    pronouns: frozenset[str] = frozenset()
    #: words that point back at a person or thing named before ("its height" → "the bamboo's height" names it)
    referring: frozenset[str] = frozenset()
    determiners: frozenset[str] = frozenset()  # words that name a thing after them ("his uncle", "a neighbor")
    people: Callable[[str], list[str]] = lambda text: []
    number_spans: Callable[[str], list[str]] = _digit_spans  # the number-like spans of a text, in order
    #: whether a word outside the slots may be renamed ("Benny" → "Michael"): only with words to tell a rename from a
    #: changed quantity ("twice" → "thrice") or an added operation ("also"); without them, only the values may differ
    renames: bool = False

    @cached_property
    def token(self) -> re.Pattern[str]:
        compound = f"{self.compound_number}|" if self.compound_number else ""
        return re.compile(rf"{_DIGITS}|{compound}[A-Za-z]+(?:'[a-z]+)?|[^\w\s]", re.IGNORECASE)

    def norm(self, token: str) -> str:
        """How two tokens are compared: case, plural endings, currency and percent spellings ignored."""
        if token in _CURRENCY:
            return "$"
        if token in self.percent:
            return "%"
        if token in self.month_days:  # a month's name states its days: June → September is a rename, June → July is not
            return f"{self.month_days[token]} days"
        if token[:1].isdigit() or len(token) <= 3:
            return token
        return self.stem(token)

    def is_quantity(self, token: str) -> bool:
        return token[:1].isdigit() or token in self.month_days or token.split("-")[0] in self.quantity


def _default_words() -> AlignWords:
    """The default pack's words (en-word-problems/1), for callers that name no pack."""
    from edge_runtime.read.packs.en_word_problems import ALIGN_WORDS

    return ALIGN_WORDS


def _tokens(text: str, vocab: AlignWords) -> list[tuple[str, int, int]]:
    return [(m.group(0).lower(), m.start(), m.end()) for m in vocab.token.finditer(text)]


def _template_tokens(template: str, vocab: AlignWords) -> list[str]:
    out: list[str] = []
    for literal, name, _, _ in string.Formatter().parse(template):
        out += [t for t, _, _ in _tokens(literal, vocab)]
        if name is not None:
            out.append(fq.SLOT + name)
    return out


def aligned_values(template: str, params: tuple[Param, ...], question: str, *,
                   min_anchor_ratio: float = 0.6, words: AlignWords | None = None) -> dict[str, str] | None:
    """Each parameter's text in ``question`` if the question is the template reworded around its slots, else None.
    ``words``: the reading pack's (``ReadingPack.align_words``); None, the default pack's."""
    vocab = words if words is not None else _default_words()
    t_tokens = _template_tokens(template, vocab)
    q_tokens = _tokens(question, vocab)
    literal = [t for t in t_tokens if not t.startswith(fq.SLOT)]
    if not literal or not q_tokens:
        return None
    t_norm = [t if t.startswith(fq.SLOT) else vocab.norm(t) for t in t_tokens]
    q_norm = [vocab.norm(t) for t, _, _ in q_tokens]
    literal_counts = Counter(t for t in t_norm if not t.startswith(fq.SLOT))
    if sum((literal_counts & Counter(q_norm)).values()) < min_anchor_ratio * len(literal):
        return None  # too few of the template's words are in the question at all (the cheap test first)
    by_word = SequenceMatcher(None, t_norm, q_norm, autojunk=False).get_opcodes()
    story = [vocab.norm(p.lower()) for p in vocab.people(template)]  # the people the template names
    if _renames_one_to_one(t_norm, q_norm, by_word, vocab, by_shape=False):
        values = _read_alignment(t_tokens, t_norm, len(literal), q_tokens, question, by_word, params, min_anchor_ratio,
                                 vocab, story=story)
        if values is not None:
            return values
    if not vocab.renames:
        return None  # the alignment by shape exists for renames
    shape_ops = _shape_opcodes(t_norm, q_norm, vocab)
    if shape_ops == by_word or not _renames_one_to_one(t_norm, q_norm, shape_ops, vocab, by_shape=True):
        return None
    return _read_alignment(t_tokens, t_norm, len(literal), q_tokens, question, shape_ops, params, min_anchor_ratio,
                           vocab, names_one_to_one=True, story=story)


def renamed_role_asked(template: str, question: str, *, words: AlignWords | None = None) -> str | None:
    """The word the question's final question asks with that its statements put in place of another of the
    template's words, or None: the aligned path's rule (``fq.renamed_from``) for the model paths, which read a
    question the aligner declined ("comic books → magazines, toys → action figures", then "If he removes 4 action
    figures, how many magazines ..." for "If he removes {n} comic books, how many toys ...": the roles traded).
    A pronoun of the template's final question may become any name, and a person named there is the guard's to match
    (question_words.match_people), so neither counts here."""
    vocab = words if words is not None else _default_words()
    t_tokens = _template_tokens(template, vocab)
    q_tokens = _tokens(question, vocab)
    t_norm = [t if t.startswith(fq.SLOT) else vocab.norm(t) for t in t_tokens]
    q_norm = [vocab.norm(t) for t, _, _ in q_tokens]
    target_start = fq.target_start(t_tokens)
    before: set[tuple[tuple[str, ...], tuple[str, ...]]] = set()
    target: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
    for op, i1, i2, j1, j2 in SequenceMatcher(None, t_norm, q_norm, autojunk=False).get_opcodes():
        if op != "equal":
            phrase = (fq.content([t for t in t_tokens[i1:i2] if not t.startswith(fq.SLOT)], vocab),
                      fq.content([t for t, _, _ in q_tokens[j1:j2]], vocab))
            (before.add(phrase) if i2 <= target_start else target.append(phrase))
    renamed_from = fq.renamed_from(before)
    pronouns = {vocab.norm(w) for w in vocab.pronouns}
    named = {vocab.norm(w.lower()) for w in vocab.people(question)}  # people: the guard matches them on its own
    asking = _role_words(q_norm[fq.target_start([t for t, _, _ in q_tokens]):], vocab) - named
    t_final = set(fq.asking(t_norm[target_start:]))
    for t_phrase, q_phrase in target:
        for word in q_phrase:
            if word in asking and _trades_role(word, t_phrase, t_final, renamed_from, pronouns):
                return word
    return None


def _role_words(final: list[str], vocab: AlignWords) -> set[str]:
    """The words of a final question, from its question word on, that can name a role: not the frame ("how many", "the
    quantity of"), not a unit of measure ("how much fabric in feet": a unit renamed throughout is the unit check's).
    Words of a condition before the question word state givens ("If she drove 325 km a day, how many ...")."""
    frame = {vocab.norm(w) for w in vocab.question_frame}
    return {w for w in fq.asking(final) if w.isalpha() and w not in frame and unit_of(w) is None}


def _trades_role(word: str, t_phrase: Sequence[str], t_final: set[str], renamed_from: dict[str, set[str]],
                 pronouns: set[str]) -> bool:
    """A word of the question's final question, in place of the template's ``t_phrase``, that its statements put in
    place of template words other than the same role's (the words the template's final question asks with, from its
    question word on, ``t_final``, and those of ``t_phrase``): "magazines" for "comic books" in "If he removes 4
    action figures, how many magazines" where the template asks "how many toys". The rename of a word the template
    asks with is the same role ("Carla" → "Katelyn", then "that Katelyn will need" for "will Carla need"), wherever
    the question's form puts it; a pronoun in ``t_phrase`` may become any name (the guard matches people)."""
    same_role = t_final | set(t_phrase)
    if pronouns & set(t_phrase):
        return False
    return word in renamed_from and word not in same_role and not renamed_from[word] & same_role


def _read_alignment(t_tokens: list[str], t_norm: list[str], n_literal: int, q_tokens: list[tuple[str, int, int]],
                    question: str, opcodes: list[tuple[str, int, int, int, int]], params: tuple[Param, ...],
                    min_anchor_ratio: float, vocab: AlignWords, *, names_one_to_one: bool = False,
                    story: list[str] | None = None) -> dict[str, str] | None:
    """The slot values an alignment (difflib opcodes of template tokens, normalised as ``t_norm``, against
    question tokens; ``n_literal`` template words besides the slots) reads, if every differing stretch obeys
    the rules in the module docstring. ``names_one_to_one``: the alignment
    renames each name one way throughout, so two names trading places is a consistent swap of roles
    (the final question follows it), not a swap of values."""
    matched = sum(i2 - i1 for op, i1, i2, _, _ in opcodes if op == "equal")
    if matched < min_anchor_ratio * n_literal:
        return None  # too little of the template survives: a different question, or a paraphrase
    by_name = {p.name: p for p in params}
    values: dict[str, str] = {}
    renamed: set[tuple[str, str]] = set()  # (template word, the question's word in its place), before the target
    swapped: set[tuple[str, str]] = set()  # the same, anywhere
    renamed_away: set[str] = set()  # template words a changed stretch before the target does not keep
    pronoun_names: dict[str, set[str]] = {}  # a template pronoun -> the names the question puts in its place before
    target_start = fq.target_start(t_tokens)
    template_words = {w for w in t_norm if w.isalpha() and w not in vocab.common}
    q_named = {vocab.norm(t) for t, _, _ in q_tokens}
    changed_t: list[str] = []  # the words of every changed stretch, template's and question's: a comparison or an
    changed_q: list[str] = []  # "each" may move to another stretch ("Bagels cost $2 each" → "Each bagel costs $2")
    # changed words of the final question (template, question), and whether the stretch lies in a condition before
    # the asking words ("If he ...,")
    in_target: list[tuple[list[str], list[str], bool]] = []
    final = t_norm[target_start:]
    asking_start = target_start + len(final) - len(fq.asking(final))
    phrases_before: set[tuple[tuple[str, ...], tuple[str, ...]]] = set()  # (template phrase, question's), before the target
    phrases_target: list[tuple[tuple[str, ...], tuple[str, ...]]] = []  # the same, in the final question
    for op, i1, i2, j1, j2 in opcodes:
        if op == "equal":
            continue
        stretch = t_tokens[i1:i2]
        slots = [t[1:] for t in stretch if t.startswith(fq.SLOT)]
        words = [t for t in stretch if not t.startswith(fq.SLOT)]
        text = question[q_tokens[j1][1]:q_tokens[j2 - 1][2]] if j2 > j1 else ""
        q_words = [t for t, _, _ in q_tokens[j1:j2]]
        if not slots and len(words) == len(q_words) and all(map(spelt_alike, words, q_words)):
            continue  # "Two years ago" written "2 years ago": the same constant
        if any(vocab.is_quantity(w) for w in words):
            return None  # a constant of the reasoning sits in a changed stretch: it changed or moved
        changed_t.extend(words)
        changed_q.extend(q_words)
        if _renames_a_period(words, q_words, q_named, vocab):
            return None
        if not vocab.renames and [vocab.norm(w) for w in words] != [vocab.norm(w) for w in q_words if not vocab.is_quantity(w)]:
            return None  # a word changed, and the pack has no words to tell a rename from another quantity
        q_plain = [w for w in q_words if not vocab.is_quantity(w)]
        pairs = [(vocab.norm(a), vocab.norm(b)) for a, b in zip(words, q_plain)] if len(q_plain) == len(words) else []
        if len(q_plain) == len(words) and any(a.lower() in vocab.comparison and b.lower() != a.lower()
                                              for a, b in zip(words, q_plain)):
            return None  # a comparison renamed ("3 *times* older" → "10 *years* older"): a product became a sum
        changed = {(a, b) for a, b in pairs if a != b and a.isalpha() and a not in vocab.common}
        swapped.update(changed)
        if sum(vocab.norm(w) == "%" for w in words) != sum(vocab.norm(w) == "%" for w in q_words):
            return None  # "5% of the price" → "0.05 times of the price": a share written as a factor
        phrase = (fq.content(words, vocab), fq.content(q_words, vocab))
        if i2 <= target_start:
            renamed.update(changed)
            renamed_away.update({vocab.norm(w) for w in words} - {vocab.norm(w) for w in q_words})
            for a, b in pairs:
                if a in vocab.pronouns and b != a:
                    pronoun_names.setdefault(a, set()).add(b)
            phrases_before.add(phrase)
        else:
            phrases_target.append(phrase)
        if not slots:
            if op == "insert" and i2 <= target_start and _aside(question, q_tokens, j1, j2, template_words, vocab):
                continue  # a sentence stated beside the reasoning: the guard judges its numbers
            if any(vocab.is_quantity(w) or w in vocab.adding for w in q_words):
                return None  # a quantity added (or a constant replaced) outside the slots
            if sum(vocab.norm(w) in vocab.time_units for w in words) != sum(vocab.norm(w) in vocab.time_units for w in q_words):
                return None  # a unit of time added or dropped: "after an hour" states a quantity
            if i2 > target_start:
                in_target.append(([vocab.norm(w) for w in words], [vocab.norm(w) for w in q_words], i2 <= asking_start))
            continue
        fraction = any(a.startswith(fq.SLOT) and mid == "/" and b.startswith(fq.SLOT)
                       for a, mid, b in zip(stretch, stretch[1:], stretch[2:]))  # "{a}/{b}"
        read = _read_stretch(slots, by_name, text, q_words, vocab, fraction=fraction)
        if read is None:
            return None
        if "of" not in words and any(re.search(rf"{re.escape(span)}\s+of\b", text) for span in read.values()):
            return None  # "2 miles" → "1/3 of the total distance": a share of another quantity, not the value
        if i2 > target_start:
            taken = {t for span in read.values() for t, _, _ in _tokens(span, vocab)}
            in_target.append(([vocab.norm(w) for w in words], [vocab.norm(w) for w in q_words if w not in taken],
                              i2 <= asking_start))
        for name, span in read.items():
            if not same_number(values.setdefault(name, span), span):
                return None  # a repeated slot reads two different values
    if not names_one_to_one and any((b, a) in swapped for a, b in swapped):
        return None  # two template words traded places: the values' roles swapped
    q_words_all = [t for t, _, _ in q_tokens]
    q_norm_all = [vocab.norm(t) for t in q_words_all]
    q_final = q_norm_all[fq.target_start(q_words_all):]
    if in_target and fq.asks_the_same(t_norm[target_start:], q_final, renamed, vocab):
        in_target = []  # posed another way ("What is the number of boxes that Marie did order?"), the same question
    renamed_from = fq.renamed_from(phrases_before)
    pronouns = {vocab.norm(w) for w in vocab.pronouns}
    asking = _role_words(q_final, vocab)
    t_final = set(fq.asking(t_norm[target_start:]))
    if in_target and fq.loses_most(t_norm[target_start:], q_final, renamed_from, vocab):
        return None  # "what percentage of the distance has he covered" → "how many km are left": another question
    # One-to-one names keep the final question on the template's roles where it renames one name for another; a
    # template name it takes up in another place must have been renamed away there ("hat → beanie, scarf → hat"),
    # not kept ("how many boys" → "what is the number of girls" where the girls keep their name).
    elsewhere = {w for w in t_norm[:target_start] if w.isalpha() and w not in vocab.common}
    if names_one_to_one:
        elsewhere -= renamed_away
    renames = fq.FinalRenames.of(renamed_from, story or [], vocab.people(question), t_norm, target_start, q_norm_all,
                                 len(q_norm_all) - len(q_final), vocab)
    for t_words, q_words, _ in in_target:
        if any(w in elsewhere and w not in t_words and not fq.renamed_consistently(w, phrases_before, phrases_target)
               and not fq.names_the_pronoun(w, t_words, pronoun_names, story or [], vocab) for w in q_words):
            return None  # the final question asks for a quantity the template gives another role
        if any(w in asking and _trades_role(w, t_words, t_final, renamed_from, pronouns) for w in q_words):
            return None  # the final question names what another template word became: "comic books → magazines"
            # before it, then "how many toys" → "how many magazines" asks for the other role
    # each stretch that changes words for words is judged alone (two that trade words are a swap); words only
    # dropped or only added are judged together, as an alignment may split one rename into a deletion and an insertion
    one_sided: list[tuple[list[str], list[str], bool]] = []
    for t_words, q_words, condition in in_target:
        if fq.content(t_words, vocab) and fq.content(q_words, vocab):
            if not renames.same_ask(t_words, q_words, pronoun_names, condition=condition):
                return None  # the final question asks for something else
        else:
            one_sided.append((t_words, q_words, condition))
    if one_sided and not renames.same_ask([w for t, _, _ in one_sided for w in t], [w for _, q, _ in one_sided for w in q],
                                          pronoun_names, condition=all(c for _, _, c in one_sided)):
        return None
    if set(values) != set(by_name) or _changes_a_quantity_word(changed_t, changed_q, vocab):
        return None
    return {p.name: values[p.name] for p in params}


def _changes_a_quantity_word(words: list[str], q_words: list[str], vocab: AlignWords) -> bool:
    """The changed stretches together (template words, the question's) change a quantity by their words: a comparison
    the template does not write ("60 meters *less* each sprint"), or a distributive word dropped with nothing in its
    place ("60 meters each sprint" → "for all the sprints"; "a sprint" stands for "per sprint")."""
    t, q = Counter(vocab.norm(w) for w in words), Counter(vocab.norm(w) for w in q_words if not vocab.is_quantity(w))
    if any(w in vocab.comparison for w in q - t):  # "twice" read for a slot is its value, no comparison
        return True
    dropped = sum(n for w, n in t.items() if w in vocab.distributive)
    return dropped > sum(n for w, n in q.items() if w in vocab.distributive or w in ("a", "an"))


def _renames_a_period(words: list[str], q_words: list[str], q_named: set[str], vocab: AlignWords) -> bool:
    """A changed stretch renames a unit of time while the question still names the template's ("3 times a *month*"
    of a template that runs "3 times a week", whose final question asks "a week"): no rename throughout."""
    t, q = {vocab.norm(w) for w in words}, {vocab.norm(w) for w in q_words}
    renamed = {w for w in t if w in vocab.time_units} - q
    return bool(renamed & q_named and {w for w in q if w in vocab.time_units} - t)


def _aside(question: str, q_tokens: list[tuple[str, int, int]], j1: int, j2: int, t_words: set[str],
           vocab: AlignWords) -> bool:
    """Question tokens ``j1:j2`` (an insertion: ``j2 > j1``) are whole sentences inserted between the
    template's that state numbers beside the reasoning ("Each car rental is $500 per day.", "The shop
    opened in 1998."): no question, no word naming an operation ("also", "more", "times", "add" ...:
    "Additionally, there are 3 times as many yellow squares as red squares."), and every number an
    amount of money, a year, or a count of something the template does not count ("a squirrel
    dropped one fry" where the template counts fries; "He ate 2 of them" counts the template's own)."""
    if j2 <= j1:
        return False
    ends = (".", "!")
    before = question[:q_tokens[j1][1]].rstrip()
    whole = (not before or before[-1] in ".!?") and q_tokens[j2 - 1][0] in ends
    # the alignment may take the sentence's full stop from the one before it: ". Each car rental is $500 per day"
    shifted = q_tokens[j1][0] in ends and j2 < len(q_tokens) and q_tokens[j2][0] in ends
    tokens = [t for t, _, _ in q_tokens[j1:j2]]
    if not (whole or shifted) or "?" in tokens or any(t in vocab.operation for t in tokens):
        return False
    for k, token in enumerate(tokens):
        if not vocab.is_quantity(token):
            continue
        if (k and tokens[k - 1] in _CURRENCY) or re.fullmatch(r"1[89]\d\d|20\d\d", token):
            continue  # "$500", "in 1998"
        after = tokens[k + 1:k + 3]
        if not after or not after[0].isalpha() or after[0] in vocab.common:
            return False  # "2 of them", "ate 2.", "3 to a friend": it may count what the reasoning counts
        if any(vocab.norm(w) in t_words for w in after if w.isalpha() and w not in vocab.common):
            return False  # "one fry", "3 red squares": the template counts it
    return True


def _is_name_word(norm: str, vocab: AlignWords) -> bool:
    """A word that names a person, an object or an activity: what a reworded question renames."""
    return norm.isalpha() and norm not in vocab.common and not vocab.is_quantity(norm) and norm not in vocab.adding


def _shape_opcodes(t_norm: list[str], q_norm: list[str], vocab: AlignWords) -> list[tuple[str, int, int, int, int]]:
    """Align by shape, each run of naming words standing for any other, when aligning by words failed.

    Renames that reuse each other's words ("hat, scarf, sweater" → "beanie, hat, tunic"; "pens ...
    notebooks" → "notebooks ... markers") pull a word alignment off course: "hat" meets "hat" in
    another role. Aligned by shape, each name ("socks", "leg warmers") meets the name in its place,
    and each rename is a stretch of its own that the usual rules (and ``_renames_one_to_one``) check."""
    t_units, q_units = _name_units(t_norm, vocab), _name_units(q_norm, vocab)
    out: list[tuple[str, int, int, int, int]] = []

    def emit(op: str, i1: int, i2: int, j1: int, j2: int) -> None:
        if op == "equal" and out and out[-1][0] == "equal" and out[-1][2] == i1:
            _, a1, _, b1, _ = out.pop()
            i1, j1 = a1, b1
        out.append((op, i1, i2, j1, j2))

    def start(units: list[tuple[str, int, int]], k: int, n: int) -> int:
        return units[k][1] if k < len(units) else n

    shapes = SequenceMatcher(None, [u[0] for u in t_units], [u[0] for u in q_units], autojunk=False)
    for op, i1, i2, j1, j2 in shapes.get_opcodes():
        if op != "equal":
            emit(op, start(t_units, i1, len(t_norm)), start(t_units, i2, len(t_norm)),
                 start(q_units, j1, len(q_norm)), start(q_units, j2, len(q_norm)))
            continue
        for (_, a1, a2), (_, b1, b2) in zip(t_units[i1:i2], q_units[j1:j2]):
            emit("equal" if t_norm[a1:a2] == q_norm[b1:b2] else "replace", a1, a2, b1, b2)
    return out


def _name_units(norm: list[str], vocab: AlignWords) -> list[tuple[str, int, int]]:
    """(shape, start, end) per token, a run of naming words taken as one unit of shape ``_NAME``."""
    units: list[tuple[str, int, int]] = []
    for k, word in enumerate(norm):
        if _is_name_word(word, vocab) and units and units[-1][0] == _NAME and units[-1][2] == k:
            units[-1] = (_NAME, units[-1][1], k + 1)
        else:
            units.append((_NAME if _is_name_word(word, vocab) else word, k, k + 1))
    return units


def _renames_one_to_one(t_norm: list[str], q_norm: list[str], opcodes: list[tuple[str, int, int, int, int]],
                        vocab: AlignWords, *, by_shape: bool) -> bool:
    """No two naming words of the template become the same word of the question: "15 for a hat" where
    the template's hat keeps its name gives "hat" two roles.

    Aligned ``by_shape``, where every name meets the name in its place, each name (a run of naming
    words) must also become one name throughout: "hat → beanie, scarf → hat" renames roles, but
    "A → B, B → C" with "B" kept in the final question gives B two roles, and no word of a name may stand for two
    template names ("questions" → "number of tests" where "tests" keeps its name). Aligned by words, only
    one-word renames count, and a word may be paraphrased two ways ("ate" → "consumed", "had
    consumed"; "person who attends" → "guest")."""
    forward: dict[tuple[str, ...], set[tuple[str, ...]]] = {}
    backward: dict[tuple[str, ...], set[tuple[str, ...]]] = {}
    named: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
    for op, i1, i2, j1, j2 in opcodes:
        if any(t.startswith(fq.SLOT) for t in t_norm[i1:i2]):
            pairs = _around_values(t_norm[i1:i2], q_norm[j1:j2], vocab)
        elif op == "equal":
            pairs = [((t,), (t,)) for t in t_norm[i1:i2]]
        elif op == "replace" and i2 - i1 == j2 - j1:  # word for word ("dollar pencils" → "dollar pens")
            pairs = [((t,), (q,)) for t, q in zip(t_norm[i1:i2], q_norm[j1:j2])]
        elif op == "replace" and by_shape:  # name for name ("socks" → "leg warmers")
            pairs = [(tuple(w for w in t_norm[i1:i2] if _is_name_word(w, vocab)),
                      tuple(w for w in q_norm[j1:j2] if _is_name_word(w, vocab)))]
        else:
            continue
        for t, q in pairs:
            if t and q and all(_is_name_word(w, vocab) for w in t + q):
                forward.setdefault(t, set()).add(q)
                backward.setdefault(q, set()).add(t)
                named.append((t, q))
    if not all(len(v) == 1 for v in backward.values()):
        return False
    # a unit is no paraphrase of another: "miles" read as "kilometers" in one place and kept in another is a
    # conversion the reasoning does not make (renamed throughout, "oz" for "grams", it is the same reasoning)
    if any(len({unit_of(q[0]) for q in images if len(q) == 1} - {None}) > 1
           for t, images in forward.items() if len(t) == 1 and unit_of(t[0])):
        return False
    if not by_shape:
        return True
    # by shape, the last word of a longer name counts too: "how many *questions*" → "what is the number of *tests*"
    # is the name ("number", "test"), but "test" is a whole name of its own elsewhere (not a word that only poses a
    # question, nor one the template's name has too; a name that shares words with the other is the same name read
    # with a neighbour: "either play video games"). The last word: "play video games" names games, not "play".
    frame = {vocab.norm(w) for w in vocab.question_frame}
    return all(len(v) == 1 for v in forward.values()) and not any(
        not set(other) & set(t) for t, q in named if len(q) > 1 and q[-1] not in frame and q[-1] not in t
        for other in backward.get((q[-1],), ()))


def _around_values(t_words: Sequence[str], q_words: Sequence[str], vocab: AlignWords) -> list[tuple[tuple[str], tuple[str]]]:
    """Word-for-word pairs of a stretch with slots: the words before its first slot and after its last, where the
    question's stretch has as many words before its first number and after its last ("he *ate* {n}/{d} of them" →
    "Keisha *bought* 2/4 of them": "ate" became "bought", which must then be no other template word's name)."""
    slots = [k for k, t in enumerate(t_words) if t.startswith(fq.SLOT)]
    numbers = [k for k, q in enumerate(q_words) if vocab.is_quantity(q)]
    if not slots or not numbers:
        return []
    pairs: list[tuple[tuple[str], tuple[str]]] = []
    for t, q in ((t_words[:slots[0]], q_words[:numbers[0]]), (t_words[slots[-1] + 1:], q_words[numbers[-1] + 1:])):
        if len(t) == len(q):
            pairs += [((a,), (b,)) for a, b in zip(t, q)]
    return pairs


def _read_stretch(slots: list[str], by_name: dict[str, Param], text: str, q_words: list[str], vocab: AlignWords, *,
                  fraction: bool = False) -> dict[str, str] | None:
    """The values of a differing stretch's slots: its numbers in order, its choices by name, or its whole text.
    ``fraction``: the template writes two of the slots as a fraction ("{a}/{b} of the votes"), which the
    question writes as one token ("2/5"): its numerator and denominator are the two values."""
    if any(name not in by_name for name in slots):
        return None
    kinds = [_kind(by_name[name]) for name in slots]
    if kinds == ["text"]:
        return {slots[0]: text.strip()} if text.strip() and not any(vocab.is_quantity(w) for w in q_words) else None
    if "text" in kinds:
        return None  # free text next to another slot: no way to tell where one ends
    numbers = vocab.number_spans(text)
    numeric_slots = [name for name, kind in zip(slots, kinds) if kind == "number"]
    split = re.fullmatch(r"(\d+)\s*/\s*(\d+)", numbers[0].strip()) if fraction and len(numbers) == 1 else None
    if split and len(numeric_slots) == 2:
        numbers = [split.group(1), split.group(2)]
    if len(numbers) != len(numeric_slots):
        return None
    out = dict(zip(numeric_slots, numbers))
    rest = text
    for span in numbers:
        rest = rest.replace(span, " ", 1)
    for name, kind in zip(slots, kinds):
        if kind != "choice":
            continue
        named = [str(c) for c in by_name[name].choices or () if re.search(rf"\b{re.escape(str(c).lower())}\b", rest.lower())]
        if len(named) != 1:
            return None
        out[name] = named[0]
        rest = re.sub(rf"\b{re.escape(named[0])}\b", " ", rest, count=1, flags=re.IGNORECASE)
    if any(vocab.is_quantity(token) for token, _, _ in _tokens(rest, vocab)):
        return None  # a quantity beside the values: "140 or 150", "7 24-inch" read into one slot
    return out


def _kind(param: Param) -> str:
    if param.choices is not None:
        return "choice"
    if param.type in (int, float, Fraction):
        return "number"
    return "text"
