"""Rewording probes: an entry's own question, with its own values, in another wording.

GSM-Symbolic writes each GSM8K question into a template in its own words: sentences merged or split, a
condition stated as a sentence, a phrase moved, "calculate the total" for "how many", a name where the
original says "he", the number attached to another noun phrase ("a 36-minute call", "a call of 36
minutes"). An independent evaluation found a third of its re-parameterised questions ending in
``extraction_failed`` on templates outside the dev set, while our re-parameterisation probes (new values,
names, number words, objects, currency: builder/eval/reparam_probe.py) are read 92-100% right. The
difference is the rewording, which those probes never vary. This module writes it, one deterministic
transformation per probe, so each miss names the wording that caused it:

- the fine-tuning data's template rewordings (builder/finetune_rewording.py, imported): synonyms, unit
  spellings, "$5" as "5 dollars", a sentence beside the reasoning inserted before the question;
- structural ones, from the way templates 0-29 differ from their GSM8K originals: **sentences merged**
  (", and"), **sentence split** ("She eats 3 ... and bakes ..." as two sentences), **condition stated**
  ("If he has 64 eggs, how many ...?" as "He has 64 eggs. How many ...?"), **condition moved** (the
  question first, "if ..." after), **phrase moved** ("On Friday, he picks ..." as "He picks ... on
  Friday."), **question form** ("How many N will S V?" as "What is the number of N that S will V?";
  "Calculate the total ..." as "What is the total ...?"), **name for pronoun** and **pronoun for name**,
  **relative clause** ("Sophie is an avid gardener. She ..." as "Sophie, who is an avid gardener, ..."),
  **passive** ("John picks 4 bananas" as "4 bananas are picked by John"), **number attached elsewhere**
  ("a 10-foot shark" as "a shark of 10 feet"; "100 per hectare" as "100 for each hectare");
- **all structural + names**: every structural rewording that applies, in turn, and the people renamed (as
  GSM-Symbolic renames them: other first names of the same gender, none a dev set uses).

Every transformation keeps every number the question states, written as it was (checked: a rewording that
changes the multiset of stated numbers is dropped), so the expected answer is the entry's answer to its
original question: the GSM8K reference, which the importer accepted the entry's program for. The kind
``original`` is the question unchanged (the control: what the device reads without any rewording); the kind
``amount in cents`` is the one exception to the numbers kept: each amount under a dollar written in cents ("$0.25"
as "25 cents"), the same amount, which the device must read in the template's dollars.
Entries are those no dev set references (``dev_ids`` of build/base/split.json); rows carry ``half`` (tune /
check by GSM8K row, :func:`builder.eval.added_clause.half_of`): fixes are designed on tune only.

    python -m builder.eval.reword_probe write OUT.jsonl --bundle B-all.arcb [--split split.json] [--entries N]
    arc-build eval --bundle B-all.arcb --queries OUT.jsonl --systems arc --no-probes --json EV/eval.json
    python -m builder.eval.reword_probe report EV/eval.records.jsonl     # per kind and half: right, wrong, misses
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from builder import finetune_rewording as fr
from builder.eval.added_clause import half_of
from builder.eval.gsm_data import GSM8K_TEST
from edge_runtime.entries.metadata import EntryPoint

ORIGINAL = "original"
SYNONYMS, UNITS, CURRENCY_WORDS, ASIDE = "synonyms", "unit spellings", "currency in words", "aside inserted"
MERGED, SPLIT, STATED, MOVED = "sentences merged", "sentence split", "condition stated", "condition moved"
PHRASE, FORM, NAME_FOR, PRONOUN_FOR = "phrase moved", "question form", "name for pronoun", "pronoun for name"
RELATIVE, PASSIVE, ATTACHED = "relative clause", "passive", "number attached elsewhere"
CENTS = "amount in cents"

_NUMBER = re.compile(r"\d+(?:[.,/]\d+)*")
_WORD_NUMBER = re.compile(r"\b(?:" + "|".join(sorted({*fr.ONES, *fr.TENS}, key=len, reverse=True)) + r")\b", re.I)
_SPLIT = re.compile(r"(?<=[.?!])\s+(?=[A-Z0-9\"'$€£])")
_ABBREVIATION = re.compile(r"\b(?:Mr|Mrs|Ms|Dr|St|vs)\.$")
_CAPITAL = re.compile(r"\b[A-Z][a-z]+\b")
_PRONOUNS = {"he": ("him", "his", "male"), "she": ("her", "her", "female")}
_AUX = ("do", "does", "did", "will", "would", "can", "could", "should", "must", "is", "are", "was", "were",
        "has", "have", "had")


# ---- sentences ------------------------------------------------------------------------------------------------

def split_sentences(text: str) -> list[str]:
    """Sentences of a question (not split after "Mr." or inside "$1.50"); double spaces go, as GSM-Symbolic's do."""
    out: list[str] = []
    for piece in _SPLIT.split(re.sub(r"\s+", " ", text.strip())):
        if out and _ABBREVIATION.search(out[-1]):
            out[-1] += " " + piece
        else:
            out.append(piece)
    return [s for s in out if s]


#: Words that start a sentence and are lower-cased inside one; any other capitalised word (a name, "Post-it") stays.
_STARTERS = frozenset("""the a an he she they it we you there this that these those each every one then his her
their its if but so on in at after before when while since once over for by during last yesterday today some
all both many most no none another other what how which who""".split())


def _lower_first(text: str, keep: Callable[[str], bool] = lambda word: False) -> str:
    word = text.split(" ", 1)[0]
    if keep(word) or word.lower() not in _STARTERS:
        return text
    return text[:1].lower() + text[1:]


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def stated_numbers(text: str) -> Counter[str]:
    """Every number a text states, digits as written and number words lower-cased: a rewording keeps them all."""
    return Counter(m.group(0) for m in _NUMBER.finditer(text)) + Counter(
        m.group(0).lower() for m in _WORD_NUMBER.finditer(text))


@dataclass(frozen=True)
class People:
    """First names by gender (Faker's en_US tables, as reparam_probe reads them): who "he" or "she" can be."""

    genders: Mapping[str, str]
    #: the replacements of :func:`rename` (reparam_probe.Names without the dev sets' names); None: no renaming
    names: Any = None

    @classmethod
    def load(cls) -> People:
        from builder.eval.gsm_data import DEV_SETS
        from builder.eval.reparam_probe import Names, dev_names

        names = Names.load(dev_names(DEV_SETS))
        return cls(names.genders, names)

    def rename(self, text: str, rng: random.Random) -> str | None:
        """Each person renamed consistently to another of the same gender, or None (no one named, no names)."""
        if self.names is None:
            return None
        from builder.eval.reparam_probe import swap_names

        return swap_names(text, self.names, rng)

    def named(self, text: str) -> dict[str, str]:
        """Each person the text names, with a gender: the capitalised words that are first names."""
        return {w: self.genders[w] for w in dict.fromkeys(_CAPITAL.findall(text)) if w in self.genders}

    def is_name(self, word: str) -> bool:
        return word.strip(",.'s’") in self.genders or word == "I"


# ---- the structural transformations (each: text -> text, or None where it does not apply) ----------------------

def merge_sentences(text: str, rng: random.Random, people: People) -> str | None:
    """Two neighbouring statements (not the final question) joined by ", and"."""
    parts = split_sentences(text)
    pairs = [i for i in range(len(parts) - 2) if parts[i].endswith(".") and parts[i + 1].endswith(".")]
    if not pairs:
        return None
    i = rng.choice(pairs)
    joined = parts[i][:-1] + ", and " + _lower_first(parts[i + 1], people.is_name)
    return " ".join(parts[:i] + [joined] + parts[i + 2:])


_VERB_AFTER_AND = re.compile(r"^(?P<head>(?P<subject>He|She|They|[A-Z][a-z]+) [^,]*?\d[^,]*?),? and "
                             r"(?P<verb>[a-z]+(?:s|ed))\b(?P<tail>.*\d.*)$")


def split_sentence(text: str, rng: random.Random, people: People) -> str | None:
    """A statement "S v1 ... and v2 ..." (a number on each side, ``S`` a person) as two sentences, the second
    starting with S's pronoun: "She eats 3 ... and bakes muffins ... with 4." → "She eats 3 .... She bakes ..."."""
    parts = split_sentences(text)
    options = []
    for i, part in enumerate(parts[:-1]):
        m = _VERB_AFTER_AND.match(part)
        if m is None or m.group("verb") in _STARTERS or m.group("verb") in ("is", "was", "has", "as", "us", "less"):
            continue
        subject = m.group("subject")
        gender = people.named(subject).get(subject)
        pronoun = {"male": "He", "female": "She"}.get(gender or "", subject if subject in ("He", "She", "They") else "")
        if pronoun:
            options.append((i, m.group("head") + ". " + pronoun + " " + m.group("verb") + m.group("tail")))
    if not options:
        return None
    i, new = rng.choice(options)
    return " ".join(parts[:i] + [new] + parts[i + 1:])


_CONDITION = re.compile(r"^If (?P<condition>[^?]+?), (?P<asked>(?:how|what|which|who|calculate|find|determine)\b.+)$",
                        re.IGNORECASE)


def state_condition(text: str, rng: random.Random, people: People) -> str | None:
    """The final "If A, how many B?" as "A. How many B?"."""
    parts = split_sentences(text)
    m = _CONDITION.match(parts[-1])
    if m is None:
        return None
    return " ".join(parts[:-1] + [_upper_first(m.group("condition")) + ".", _upper_first(m.group("asked"))])


def move_condition(text: str, rng: random.Random, people: People) -> str | None:
    """The final "If A, how many B?" as "How many B if A?"."""
    parts = split_sentences(text)
    m = _CONDITION.match(parts[-1])
    if m is None or not m.group("asked").endswith("?"):
        return None
    condition = _lower_first(m.group("condition"), people.is_name)
    return " ".join(parts[:-1] + [_upper_first(m.group("asked")[:-1]) + " if " + condition + "?"])


_LEADING = re.compile(r"^(?P<phrase>(?:On|In|At|After|Before|During|Last|Yesterday|Today|For|When|While|Since|Once|"
                      r"Over|By)\b[^,;]{0,60}), (?P<rest>[a-z][^?;]*\.)$")


def move_phrase(text: str, rng: random.Random, people: People) -> str | None:
    """A statement's leading phrase moved to its end: "On Friday, he picks ..." → "He picks ... on Friday."."""
    parts = split_sentences(text)
    options = [i for i, p in enumerate(parts[:-1]) if _LEADING.match(p) and not p.startswith("If ")]
    if not options:
        return None
    i = rng.choice(options)
    m = _LEADING.match(parts[i])
    assert m is not None
    phrase = _lower_first(m.group("phrase"), people.is_name)
    moved = _upper_first(m.group("rest")[:-1]) + " " + phrase + "."
    return " ".join(parts[:i] + [moved] + parts[i + 1:])


_HOW = re.compile(r"^(?P<lead>.*?\b)?[Hh]ow (?P<much>many|much) (?P<noun>(?:[a-z'-]+ ){0,4}?)(?P<aux>"
                  + "|".join(_AUX) + r") (?P<rest>[^?]+)\?$")
_IMPERATIVE = re.compile(r"^(?P<lead>.*?\b)?(?:[Cc]alculate|[Ff]ind|[Dd]etermine|[Cc]ompute|[Ww]ork out) "
                         r"(?P<what>the [^?]+?)[.?]$")


def question_form(text: str, rng: random.Random, people: People) -> str | None:
    """The final question asked another way: "How many N will S V?" → "What is the number of N that S will V?"
    ("How much": "the amount of"); "Calculate the total ..." → "What is the total ...?"."""
    parts = split_sentences(text)
    last = parts[-1]
    m = _HOW.match(last)
    if m is not None:
        lead = m.group("lead") or ""
        if lead and not lead.endswith(", "):
            return None
        noun, aux, rest = m.group("noun").strip(), m.group("aux"), m.group("rest")
        if noun and (_ENDS_OBJECT.match(" " + noun.split()[0]) or noun.split()[0] in _STARTERS):
            return None  # "how much in dollars does she make": no noun right after "how much"
        first, _, after = rest.partition(" ")
        subject_first = first.lower() in ("he", "she", "it", "they", "we", "you", "i") or people.is_name(first)
        if subject_first:
            clause = f"{first} {aux} {after}".strip()
        elif aux in ("is", "are", "was", "were", "has", "have", "had") and first.lower() != "there":
            clause = f"{aux} {rest}"
        else:
            return None
        if not subject_first and not noun:
            return None  # "how much are her earnings": no noun to count
        measure = "number" if m.group("much") == "many" else "amount"
        asked = f"what is the {measure} of {noun + ' ' if noun else ''}that {clause}?"
        return " ".join(parts[:-1] + [(lead + asked) if lead else _upper_first(asked)])
    m = _IMPERATIVE.match(last)
    if m is None:
        return None
    lead = m.group("lead") or ""
    if lead and not lead.endswith(", "):
        return None
    asked = "what is " + m.group("what") + "?"
    return " ".join(parts[:-1] + [(lead + asked) if lead else _upper_first(asked)])


def name_for_pronoun(text: str, rng: random.Random, people: People) -> str | None:
    """A sentence's subject pronoun ("He", "she" after the final question's auxiliary) as the one person of
    that gender the question names: "How many emails does he respond to" → "... does Jessica respond to"."""
    named = people.named(text)
    by_gender = Counter(named.values())
    out, changed = [], False
    for k, part in enumerate(split_sentences(text)):
        if k:
            for pronoun, (_, _, gender) in _PRONOUNS.items():
                person = [n for n, g in named.items() if g == gender]
                if by_gender[gender] != 1:
                    continue
                new = re.sub(rf"^{pronoun.capitalize()}\b", person[0], part)
                new = re.sub(rf"\b({'|'.join(_AUX)}) {pronoun}\b", rf"\1 {person[0]}", new)
                changed |= new != part
                part = new
        out.append(part)
    return " ".join(out) if changed else None


def pronoun_for_name(text: str, rng: random.Random, people: People) -> str | None:
    """A later sentence's subject name as its pronoun, where the question names no one else of that gender:
    "Kenneth picks ... Then Kenneth ..." → "... Then he ..."."""
    named = people.named(text)
    by_gender = Counter(named.values())
    parts = split_sentences(text)
    out, changed, seen = [], False, set()
    for part in parts:
        for name, gender in named.items():
            if name in seen and by_gender[gender] == 1:
                pronoun = "He" if gender == "male" else "She"
                new = re.sub(rf"^{name}\b(?!['’])", pronoun, part)
                new = re.sub(rf"\b({'|'.join(_AUX)}) {name}\b(?!['’])", rf"\1 {pronoun.lower()}", new)
                changed |= new != part
                part = new
        seen.update(n for n in named if re.search(rf"\b{n}\b", part))
        out.append(part)
    return " ".join(out) if changed else None


_INTRO = re.compile(r"^(?P<name>[A-Z][a-z]+) (?P<verb>is|was|has|had) (?P<rest>[^,;?]+)\.$")


def relative_clause(text: str, rng: random.Random, people: People) -> str | None:
    """"NAME is/has X. He/She V ..." as "NAME, who is/has X, V ...": the first statement becomes a clause of
    the second ("Sophie, who is an avid gardener, received 18 ...")."""
    parts = split_sentences(text)
    for i in range(len(parts) - 1):
        m = _INTRO.match(parts[i])
        if m is None or m.group("name") not in people.genders:
            continue
        pronoun = "He" if people.genders[m.group("name")] == "male" else "She"
        nxt = parts[i + 1]
        if not nxt.startswith(pronoun + " ") or nxt.endswith("?"):
            continue
        joined = f"{m.group('name')}, who {m.group('verb')} {m.group('rest')}, {nxt[len(pronoun) + 1:]}"
        return " ".join(parts[:i] + [joined] + parts[i + 2:])
    return None


#: Verbs a passive is made of: (present, past, participle).
_VERBS = tuple(tuple(v.split("/")) for v in """buys/bought/bought sells/sold/sold makes/made/made bakes/baked/baked
picks/picked/picked eats/ate/eaten collects/collected/collected uses/used/used orders/ordered/ordered
purchases/purchased/purchased plants/planted/planted paints/painted/painted receives/received/received
finds/found/found catches/caught/caught writes/wrote/written reads/read/read grows/grew/grown
builds/built/built cooks/cooked/cooked drinks/drank/drunk sends/sent/sent gathers/gathered/gathered
harvests/harvested/harvested prepares/prepared/prepared packs/packed/packed""".split())
_OBJECT_PRONOUN = {"He": "him", "She": "her", "They": "them", "We": "us", "I": "me"}
_ENDS_OBJECT = re.compile(r" (?:on|in|at|for|from|to|with|each|per|every|which|that|and|but|during|after|before|"
                          r"last|this|yesterday|today|so|because)\b|[,.]")


def passive(text: str, rng: random.Random, people: People) -> str | None:
    """"S v N things ..." (S a person, v a verb of the table, a number right after it) as "N things are/were
    v-ed by S ...": the number moves to the front, the person to the end."""
    parts = split_sentences(text)
    options = []
    for i, part in enumerate(parts[:-1]):
        for present, past, participle in _VERBS:
            m = re.match(rf"^(?P<s>He|She|They|We|I|[A-Z][a-z]+) (?P<v>{present}|{past}) (?P<obj>\d+(?:\.\d+)? [a-z]+)", part)
            if m is None or m.group("obj").split()[1] in ("as", "times", "more", "fewer", "less", "of", "percent"):
                continue
            if _ENDS_OBJECT.match(" " + m.group("obj").split()[1]) or m.group("obj").split()[1] in _STARTERS:
                continue  # "eats 3 for breakfast": the number counts no noun here
            if not (m.group("s") in _OBJECT_PRONOUN or m.group("s") in people.genders):
                continue
            end = m.end("obj")
            stop = _ENDS_OBJECT.search(part, end)
            obj = part[m.start("obj"):stop.start() if stop else len(part) - 1]
            rest = part[m.start("obj") + len(obj):-1]
            if "," in rest or " and " in rest:
                continue
            one = re.match(r"1\b", obj) is not None
            be = ("is" if one else "are") if m.group("v") == present else ("was" if one else "were")
            agent = _OBJECT_PRONOUN.get(m.group("s"), m.group("s"))
            options.append((i, f"{obj} {be} {participle} by {agent}{rest}."))
    if not options:
        return None
    i, new = rng.choice(options)
    return " ".join(parts[:i] + [new] + parts[i + 1:])


_UNIT_PLURAL = {"foot": "feet", "inch": "inches", "mile": "miles", "minute": "minutes", "hour": "hours",
                "pound": "pounds", "day": "days", "week": "weeks", "year": "years", "gallon": "gallons",
                "ounce": "ounces", "meter": "meters", "page": "pages", "second": "seconds", "month": "months",
                "yard": "yards", "liter": "liters", "kilogram": "kilograms", "mph": "mph", "acre": "acres",
                "story": "stories", "piece": "pieces", "song": "songs", "question": "questions"}
_COMPOUND = re.compile(r"\b(?P<det>[Aa]n?|\d+|one|two|three|four|five|six|seven|eight|nine|ten) (?P<n>\d+(?:\.\d+)?)-"
                       r"(?P<unit>" + "|".join(_UNIT_PLURAL) + r") (?P<noun>[a-z]+)\b")
_PER = re.compile(r"(?<=\w) per (?=[a-z])")


def attach_elsewhere(text: str, rng: random.Random, people: People) -> str | None:
    """The number attached to another noun phrase: "a 10-foot shark" → "a shark of 10 feet", "2 6-inch remoras"
    → "2 remoras of 6 inches"; else "100 pineapples per hectare" → "100 pineapples for each hectare"."""
    def post(m: re.Match[str]) -> str:
        det, n, unit, noun = m.group("det"), m.group("n"), m.group("unit"), m.group("noun")
        if det.lower() in ("a", "an"):
            det = ("An" if det[0] == "A" else "an") if noun[0] in "aeiou" else ("A" if det[0] == "A" else "a")
        return f"{det} {noun} of {n} {unit if n == '1' else _UNIT_PLURAL[unit]}"

    out = _COMPOUND.sub(post, text)
    if out == text:
        out = _PER.sub(" for each ", text)
    return out if out != text else None


_UNDER_A_DOLLAR = re.compile(r"\$0?\.(\d\d)\b(?!\.\d)")


def amounts_in_cents(text: str) -> str | None:
    """Each amount under a dollar as cents ("$0.25" as "25 cents"): the same amount, its number written otherwise (the
    one kind whose stated numbers change; the device reads it in the template's dollars, edge_runtime.read.measures)."""
    out = _UNDER_A_DOLLAR.sub(lambda m: f"{int(m.group(1))} cents", text)
    return out if out != text else None


# ---- the fine-tuning data's rewordings (builder/finetune_rewording.py), on the template -------------------------

def _on_template(change: Callable[[str, random.Random], str]) -> Callable[[EntryPoint, random.Random], str | None]:
    def apply(entry: EntryPoint, rng: random.Random) -> str | None:
        template = change(entry.template, rng)
        if template == entry.template:
            return None
        return _render(entry, template)

    return apply


def _render(entry: EntryPoint, template: str) -> str:
    by_name = {p.name: p for p in entry.params}
    return template.format(**{k: by_name[k].text(v) for k, v in entry.original_values.items()})


TEXT_KINDS: dict[str, Callable[[str, random.Random, People], str | None]] = {
    MERGED: merge_sentences, SPLIT: split_sentence, STATED: state_condition, MOVED: move_condition,
    PHRASE: move_phrase, FORM: question_form, NAME_FOR: name_for_pronoun, PRONOUN_FOR: pronoun_for_name,
    RELATIVE: relative_clause, PASSIVE: passive, ATTACHED: attach_elsewhere,
}
TEMPLATE_KINDS: dict[str, Callable[[EntryPoint, random.Random], str | None]] = {
    SYNONYMS: _on_template(fr.synonyms), UNITS: _on_template(fr.units), CURRENCY_WORDS: _on_template(fr.currency),
    ASIDE: _on_template(fr.aside),
}
#: Every structural rewording that applies, one after another, and the people renamed (other first names of the
#: same gender, none a dev set uses): GSM-Symbolic renames every template's people besides rewording it.
COMBINED = "all structural + names"
KINDS = (ORIGINAL, *TEMPLATE_KINDS, *TEXT_KINDS, COMBINED, CENTS)


@dataclass(frozen=True)
class Probe:
    query: str
    answer: Any
    kind: str
    entry_id: str
    gsm8k_row: int
    half: str
    verification: str

    def row(self) -> dict[str, Any]:
        return asdict(self)


def gold_answers(path: Path = GSM8K_TEST) -> dict[int, float]:
    """GSM8K's reference answer by row ("#### 1,234" → 1234.0)."""
    out: dict[int, float] = {}
    with open(path, encoding="utf-8") as handle:
        for row, line in enumerate(handle):
            if line.strip():
                out[row] = float(json.loads(line)["answer"].rsplit("####", 1)[1].strip().replace(",", ""))
    return out


def probes_for(entry: EntryPoint, answer: Any, people: People, half: str, verification: str = "unverified",
               seed: str = "reword-probe") -> list[Probe]:
    """One probe per kind that applies to ``entry``'s question (its template with its original values), each
    stating exactly the numbers the original states; deterministic in ``seed`` and the entry's id."""
    original = _render(entry, entry.template)
    row = int(entry.id.rsplit("-", 1)[1]) if entry.id.startswith("gsm8k-") else -1
    numbers = stated_numbers(original)
    out = [Probe(original, answer, ORIGINAL, entry.id, row, half, verification)]
    seen = {original}
    for kind, change in TEMPLATE_KINDS.items():
        text = change(entry, random.Random(f"{seed}:{entry.id}:{kind}"))
        if text is not None and text not in seen and stated_numbers(text) == numbers:
            seen.add(text)
            out.append(Probe(text, answer, kind, entry.id, row, half, verification))
    combined, changes = original, 0
    for kind, change in TEXT_KINDS.items():
        text = change(original, random.Random(f"{seed}:{entry.id}:{kind}"), people)
        if text is not None and text not in seen and stated_numbers(text) == numbers:
            seen.add(text)
            out.append(Probe(text, answer, kind, entry.id, row, half, verification))
        more = change(combined, random.Random(f"{seed}:{entry.id}:{kind}:combined"), people)
        if more is not None and stated_numbers(more) == numbers:
            combined, changes = more, changes + 1
    renamed = people.rename(combined, random.Random(f"{seed}:{entry.id}:names"))
    if changes and renamed is not None and renamed not in seen and stated_numbers(renamed) == numbers:
        out.append(Probe(renamed, answer, COMBINED, entry.id, row, half, verification))
    if (cents := amounts_in_cents(original)) is not None:
        out.append(Probe(cents, answer, CENTS, entry.id, row, half, verification))
    return out


def generate(entries: Iterable[EntryPoint], gold: Mapping[int, float], people: People,
             verification: Mapping[str, str] | None = None) -> list[Probe]:
    """Every entry's probes (GSM8K entries with a reference only), tune and check halves by GSM8K row."""
    out: list[Probe] = []
    for entry in entries:
        if not entry.id.startswith("gsm8k-"):
            continue
        row = int(entry.id.rsplit("-", 1)[1])
        if row not in gold:
            continue
        answer = int(gold[row]) if float(gold[row]).is_integer() else gold[row]
        out += probes_for(entry, answer, people, half_of(row), (verification or {}).get(entry.id, "unverified"))
    return out


# ---- figures --------------------------------------------------------------------------------------------------

def report(records: Iterable[dict[str, Any]], system: str = "arc") -> str:
    """Markdown per kind and half: served right / wrong, the hits' paths and the misses' reasons; also restricted
    to the entries whose *original* question is served right (so a kind's losses are the rewording's)."""
    mine = [r for r in records if r["system"] == system]
    base_ok = {r["expected_entry"] for r in mine if r["kind"] == ORIGINAL and r["served"] and r["correct"]}
    lines = ["| kind | half | rows | served right | served wrong | right where original is | misses | hits by path |",
             "|---|---|---:|---:|---:|---:|---|---|"]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in mine:
        groups.setdefault((r["kind"], r.get("x_half") or half_of(int(r["expected_entry"].rsplit("-", 1)[1]))),
                          []).append(r)
    order = {k: i for i, k in enumerate(KINDS)}
    for (kind, half), rows in sorted(groups.items(), key=lambda kv: (order.get(kv[0][0], 99), kv[0][1])):
        right = sum(r["served"] and r["correct"] for r in rows)
        wrong = sum(r["served"] and not r["correct"] for r in rows)
        based = [r for r in rows if r["expected_entry"] in base_ok]
        based_right = sum(r["served"] and r["correct"] for r in based)
        misses = Counter(r.get("miss_reason") or "?" for r in rows if not r["served"])
        paths = Counter(r["path"] for r in rows if r["served"])
        lines.append(f"| {kind} | {half} | {len(rows)} | {right} ({100 * right / len(rows):.1f}%) | {wrong} | "
                     f"{based_right}/{len(based)} | " + ", ".join(f"{k} {n}" for k, n in misses.most_common())
                     + " | " + ", ".join(f"{k} {n}" for k, n in paths.most_common()) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write", help="write rewording probes for the entries of a bundle that no dev set references")
    w.add_argument("out", type=Path)
    w.add_argument("--bundle", type=Path, required=True)
    w.add_argument("--split", type=Path, default=Path("build/base/split.json"))
    w.add_argument("--entries", type=int, default=None, help="entries sampled (by a fixed hash of their id)")
    r = sub.add_parser("report", help="figures per kind and half from an arc-build eval run's records")
    r.add_argument("records", type=Path)
    r.add_argument("--system", default="arc")
    args = parser.parse_args(argv)
    if args.command == "report":
        with open(args.records, encoding="utf-8") as handle:
            print(report([json.loads(line) for line in handle if line.strip()], args.system), end="")
        return 0
    from edge_runtime.bundles.bundle import read_bundle

    bundle = read_bundle(args.bundle, trusted_keys=None, allow_unsigned=True)
    dev = set(json.loads(args.split.read_text(encoding="utf-8"))["dev_ids"])
    pool = sorted((e for e in bundle.entries.values() if e.id not in dev), key=lambda e: e.id)
    if args.entries is not None:
        pool.sort(key=lambda e: random.Random(f"pick:{e.id}").random())
        pool = sorted(pool[: args.entries], key=lambda e: e.id)
    status = {k: getattr(v, "value", str(v)) for k, v in bundle.verification.items()}
    probes = generate(pool, gold_answers(), People.load(), status)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as handle:
        for probe in probes:
            handle.write(json.dumps(probe.row(), ensure_ascii=False) + "\n")
    counts = Counter(f"{p.kind} / {p.half}" for p in probes)
    print(json.dumps({"entries": len(pool), "probes": len(probes), **dict(sorted(counts.items()))}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
