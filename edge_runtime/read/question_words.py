"""What a question asks, read by English words: its sentences, its final question, the noun that question
asks for, and the content words two clauses are compared by.

The guard's last check (does the question ask for what the entry answers?) and the set-aside phrases
(``disclaimers.py``) read questions this way; the words are English, so these belong to the
``en-word-problems/1`` reading pack's rules (docs/reading-packs.md), not to the guard's structural checks.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from edge_runtime.read.english_words import plural_stem

STOP_WORDS = frozenset("""
a an the of for to and or but than that this these those then there their they them he she his her him it its
is are was were be been being am do does did has have had will would can could should shall may might must
in on at by with from into onto over under about after before during per each every all any some many much more
most less few own other another same such so as if when while what which who whom whose how why where
you your we our us i me my not no nor only also just too very again further once here out up down off
total number amount altogether together left remaining many much
mr mrs ms dr
""".split())  # the titles of a name ("Mr. Tanaka") are part of the name, not a word of what is asked
WORD = re.compile(r"[a-z]+")


stem = plural_stem


def content_words(text: str) -> set[str]:
    return {stem(w) for w in WORD.findall(text.lower().replace("’", "'").replace("'s", "")) if w not in STOP_WORDS and len(w) > 1}


def fixed_compounds(text: str, stemmer: Callable[[str], str] = stem) -> frozenset[tuple[str, str]]:
    """Stems of two words side by side where the second never comes without the first in the story (``text`` but its
    final question): the name a story always gives a thing ("canvas bags", "a board game"), not one kind among others
    ("red apples and green apples")."""
    start, end = final_sentence(text)
    words = [stemmer(w) for w in WORD.findall((text[:start] + " . " + text[end:]).lower())]
    before: dict[str, set[str]] = {}
    for i, word in enumerate(words):
        before.setdefault(word, set()).add(words[i - 1] if i else "")
    return frozenset((next(iter(a)), b) for b, a in before.items() if len(a) == 1 and "" not in a)


def compound_modifiers(story_compounds: frozenset[tuple[str, str]], asking: str, asked: set[str] | frozenset[str],
                       stemmer: Callable[[str], str] = stem) -> set[str]:
    """Stems of the asking's words that modify, right before it, a word the entry asks with (``asked``), where the
    entry's story always names that thing so (``story_compounds``, :func:`fixed_compounds`): "how much profit did she
    earn on her *canvas* bags", where the story sells "canvas bags" and the entry asks about "her bags", names the
    same thing more fully, not a given it asks about instead."""
    words = [stemmer(w) for w in WORD.findall(asking.lower())]
    return {a for a, b in zip(words, words[1:]) if b in asked and (a, b) in story_compounds}


#: A sentence ends at . ? ! followed by a capital, a digit or a quote ("vs. calories" and "lbs. by" go on), not at
#: the full stop of a title before a name ("Mr. Tanaka", "Dr. Lee": the final question "how much capital does
#: Mr. Tanaka have" is one sentence).
_TITLES = ("Mr", "Mrs", "Ms", "Dr", "St", "Jr", "Sr", "Prof", "Mt")
_SENTENCE = re.compile("".join(rf"(?<!\b{t}\.)" for t in _TITLES) + r"(?<=[.?!])\s+(?=[A-Z0-9\"'“‘$])|\n+")


def sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence (a split after . ? ! that is not inside a number)."""
    spans, start = [], 0
    for match in _SENTENCE.finditer(text):
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(text)))
    return [(s, e) for s, e in spans if text[s:e].strip()]


_WH = re.compile(
    r"\b(?:how|what|which|who|whom|whose|when|where|calculate|compute|find|determine|figure out|work out)\b", re.IGNORECASE)
_AUX = frozenset("""more less longer fewer much many of the a an total in additional extra""".split())


def final_sentence(text: str) -> tuple[int, int]:
    """(start, end) of the final question: the last sentence with a '?' (else the last sentence)."""
    spans = sentences(text)
    if not spans:
        return 0, len(text)
    asked = [(s, e) for s, e in spans if "?" in text[s:e]]
    return (asked or spans)[-1]


def target_clause(text: str) -> str:
    """The final question: the last sentence with a '?' (else the last sentence), from its question word on."""
    if not text.strip():
        return ""
    s, e = final_sentence(text)
    clause = text[s:e]
    wh = list(_WH.finditer(clause))
    if wh:
        clause = clause[wh[0].start():]
    return clause.strip()


def asked_noun(clause: str) -> set[str]:
    """The words naming the quantity a question asks for: "how many *corn chips*", "the number of *pens*"
    (empty when the question names none: "how long", "how much does it cost")."""
    low = clause.lower()
    match = re.search(r"\bhow\s+(?:many|much)\s+((?:[a-z]+\s+){0,3})", low + " ") or re.search(
        r"\b(?:number|amount|count)\s+of\s+((?:[a-z]+\s+){0,3})", low + " ")
    if not match:
        return set()
    words: set[str] = set()
    for word in match.group(1).split():
        if word in _VERBS:
            break
        if word not in _AUX and word not in STOP_WORDS:
            words.add(stem(word))
    return words


#: Words that turn one asked quantity into another, by kind: a negation ("did *not* buy") or a comparison ("how
#: many *more* ... *than*"). A final question that gains or loses one asks for something else, whatever else it
#: keeps; content_words drops them all as stop words. Words that say how a quantity is shared or what remains
#: ("each", "every", "per", "left") are not counted: rewordings trade them freely ("each day" for "every day",
#: "still have" for "have left"), and counting them refused 57 right answers of our rewording probes.
ASKING_MODIFIERS = {
    **dict.fromkeys("not no never nor without".split(), "negation"),
    **dict.fromkeys("more less fewer most least than additional extra".split(), "comparison"),  # "additional": an increment
    **dict.fromkeys("average mean".split(), "mean"),  # "pay for each of them on average" is not the total
    **dict.fromkeys("both altogether together combined".split(), "sum"),  # "both DVDs" is not "the first DVD"
}


def asking_modifiers(clause: str) -> Counter[str]:
    """The kinds of asking modifier a final question holds, counted ("didn't" and "cannot" negate too)."""
    text = clause.lower().replace("’", "'").replace("n't", " not").replace("cannot", "can not")
    return Counter(ASKING_MODIFIERS[w] for w in WORD.findall(text) if w in ASKING_MODIFIERS)


def modifier_change(template_asks: str, question_asks: str, kinds: frozenset[str] | None = None) -> str | None:
    """How the question's final question changes the template's asking modifiers ("adds a negation", "drops a
    comparison"); None when it keeps them. ``kinds`` limits the comparison to some kinds of modifier."""
    t_mod, q_mod = asking_modifiers(template_asks), asking_modifiers(question_asks)
    if kinds is not None:
        t_mod = Counter({k: n for k, n in t_mod.items() if k in kinds})
        q_mod = Counter({k: n for k, n in q_mod.items() if k in kinds})
    if _JOINED.search(template_asks) and _JOINED.search(question_asks):
        # "how many letters are in Anya's and her sister's names *together*": two things joined by "and" are asked
        # for as a sum already, with the word or without it
        t_mod["sum"] = q_mod["sum"] = max(t_mod["sum"], q_mod["sum"], 1)
    added, dropped = sorted((q_mod - t_mod).elements()), sorted((t_mod - q_mod).elements())
    return f"adds a {added[0]}" if added else f"drops a {dropped[0]}" if dropped else None


_JOINED = re.compile(r"\w\s+and\s+\w", re.IGNORECASE)


_VERBS = frozenset("""do does did is are was were will would can could should has have had must might may""".split())


_CAPITALISED = re.compile(r"\b[A-Z][a-z]+\b")
_NOT_PEOPLE = frozenset("""january february march april may june july august september october november december monday
tuesday wednesday thursday friday saturday sunday because since although though unless until whereas""".split())


def people(text: str) -> list[str]:
    """The capitalised words that name someone (or some place or brand) in order of first mention: not a word the
    text also writes in lower case, a stop word, a month or a day."""
    lower = set(WORD.findall(text))
    return list(dict.fromkeys(w for w in _CAPITALISED.findall(text)
                              if w.lower() not in lower and w.lower() not in STOP_WORDS and w.lower() not in _NOT_PEOPLE))


_CONDITION = re.compile(r"\b(?:if|when|after|before|given|assuming|suppose|since|because)\b", re.IGNORECASE)


def roles_asked_about(text: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """Whom the final question asks about, whom its condition names, and the people of the whole text in order of
    first mention. The asking part runs from the question word to a condition ("how many does Sam have *if* Kim has
    4"); the condition is the rest of the final sentence ("If Kim has 4, ..."), so a condition stated in a sentence
    of its own names no one here. A text that asks nothing asks with its last sentence ("Calculate ...")."""
    spans = sentences(text)
    asked = [(s, e) for s, e in spans if "?" in text[s:e]]
    if not asked and spans:  # an instruction ("Calculate the average age ..."): its first word is its verb
        start = spans[-1][0] + len(text[spans[-1][0]:]) - len(text[spans[-1][0]:].lstrip())
        text = text[:start] + re.sub(r"^\w+", lambda m: m.group().lower(), text[start:])
        asked = spans[-1:]
    story = tuple(people(text))
    if not asked or not story:
        return (), (), story
    final = text[slice(*asked[-1])]
    asking = _asking_part(final)
    condition = final.replace(asking, " ")
    return (tuple(p for p in people(asking) if p in story), tuple(p for p in people(condition) if p in story), story)


def _asking_part(final: str) -> str:
    """A final question from its question word to a condition ("how many does Sam have *if* Kim has 4")."""
    return _CONDITION.split(target_clause(final), maxsplit=1)[0]


_PRONOUNS = frozenset("he she him her his hers they them their theirs".split())


def _asking_words(text: str, *, instruction: bool = False) -> set[str]:
    """The lower-cased words of the asking part of the text's final question; with ``instruction``, of its last
    sentence where it asks nothing ("Calculate the total time they took.")."""
    spans = sentences(text)
    finals = [text[s:e] for s, e in spans if "?" in text[s:e]] or ([text[s:e] for s, e in spans[-1:]] if instruction
                                                                    else [])
    return set(WORD.findall(_asking_part(finals[-1]).lower())) if finals else set()


def asks_with_pronoun(text: str) -> bool:
    """The text's final question asks about someone by a pronoun ("How many does *she* have?")."""
    return bool(_PRONOUNS & _asking_words(text))


_GROUP = frozenset("they them their theirs".split())


def asks_about_a_group(text: str) -> bool:
    """The text's final question (or instruction) asks about its people together by a plural pronoun ("the total time
    *they* all took", "how much do *they* have left")."""
    return bool(_GROUP & _asking_words(text, instruction=True))


def match_people(template: tuple[str, ...], question: tuple[str, ...]) -> dict[str, str] | None:
    """Who in the question is who in the template: a name both texts use is the same person wherever it is first
    mentioned (statements reordered keep their people), the others pair off in order of first mention (names
    changed keep their places). None when the two stories do not name as many people."""
    if len(template) != len(question):
        return None
    kept = set(template) & set(question)
    renamed = dict(zip((p for p in template if p not in kept), (p for p in question if p not in kept)))
    return {p: p if p in kept else renamed[p] for p in template}


def other_people(template: tuple[str, ...], question: tuple[str, ...]) -> bool:
    """The question names other people of the story than the template, in the same place: not one named for a
    pronoun or a pronoun for one ("does *she* have" → "does *Martha* have" names more, never someone else), but one
    person for another, or two compared the other way round ("than Liam" ↔ "than Mitchell")."""
    t, q = tuple(dict.fromkeys(template)), tuple(dict.fromkeys(question))
    if not t or not q:
        return False
    return (not set(t) <= set(q) and not set(q) <= set(t)) or (len(t) == len(q) and t != q)


def more_people(template: tuple[str, ...], question: tuple[str, ...], *, template_pronoun: bool = False) -> bool:
    """The question asks about the template's people and others of the story besides ("the weight of Cy" → "the
    combined weight of Ada and Cy"): a total over more of them, another quantity. Where the template asks with a
    pronoun (``template_pronoun``), the name the question puts there is that person, not one more ("does *he* deliver
    to District B" → "does *James* deliver to District B")."""
    t, q = set(template), set(question)
    return bool(t) and t < q and not template_pronoun


def asked_people_change(template: tuple[str, ...], question: tuple[str, ...], story: tuple[str, ...], *,
                        template_pronoun: bool = False, template_group: bool = False) -> str | None:
    """Why the question asks about other people than the template (people matched, ``match_people``), or None: more
    of them (``more_people``), or some of its story's people by name where the template asks about them together
    by a plural pronoun (``template_group``: "the total time *they* all took" → "the total time Kenji and Jun took")."""
    if more_people(template, question, template_pronoun=template_pronoun):
        return "the question asks about more people of its story than the entry's question does"
    if template_group and not template and question and set(question) < set(story):
        return "the question asks about some of the people of its story by name, the entry's about them all"
    return None


#: "one" picking one of the things asked about: "for *one of* them", "will *one playlist* last" (not "twenty-one",
#: "one-third", "each one", "no one", "one more").
_ONE_ASKED = re.compile(r"(?<![-\w])(?<!\beach )(?<!\bevery )(?<!\bany )(?<!\bno )one\b(?!-)"
                        r"(?:\s+of\b|\s+(?P<thing>[a-z]+))", re.IGNORECASE)


def narrows_to_one(template_target: str, asked: str) -> bool:
    """Whether the question's final question (``asked``) narrows what the template's (``template_target``, slots as
    ``#``) asks about several things to one of them: "one of ..." where the template does not say "one of" or
    "each", or "one <thing>" where the template asks about those things in the plural ("how many hours will *one
    playlist* last" for "will the # playlists last"). "One ticket" for "the ticket", "at one time", "in one week"
    (a slot's value) and "the cheaper one" are not."""
    template = template_target.lower()
    if re.search(r"\b(?:one|each) of\b", template):
        return False
    template_words = {w: plural_stem(w) for w in WORD.findall(template)}
    for one in _ONE_ASKED.finditer(asked):
        thing = (one.group("thing") or "").lower()
        if not thing:
            return True  # "one of them"
        plural = [w for w, s in template_words.items() if s == plural_stem(thing) and w != s]
        if plural and not re.search(rf"#\s+{re.escape(thing)}\b", template):
            return True
    return False
