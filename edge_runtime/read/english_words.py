"""The English number words and plural endings, in one place for the device and the builder.

The importer (builder side) decides which numbers of a question become slots; the device reads
the numbers of a new question back into those slots. When the two read "half", "two thirds" or
"boxes" from tables of their own, they drift apart (they had: 20 number words only the importer
knew, and the values of 10 shared words stored in opposite order). This module is device code, so
the builder may import it and the device never imports the builder.

``NUMBER_WORDS`` lists every word that states a number without being a cardinal, with the value
it reads as first and then the other values a program may write for it ("half": 0.5, or the 2 of
``x / 2``). ``DEVICE_UNREAD_WORDS`` are the ones the device does not count as a stated number alone: a
rate word ("weekly") names a unit more than a number, and the ordinals past "fifth" ("the fourth day")
or "once" are rarely quantities. The device reads the fraction words among them after a count
("one-fourth", "three eighths": edge_runtime/read/mentions.py). The importer uses the rest to explain a
program's constant (builder/gsm8k.py), never as a number the question states.
"""

from __future__ import annotations

ONES: dict[str, int] = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen".split())}
TENS: dict[str, int] = {w: 10 * i for i, w in enumerate(
    "twenty thirty forty fifty sixty seventy eighty ninety".split(), start=2)}
SCALES: dict[str, int] = {"hundred": 100, "thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}
#: The cardinal words a scanner looks for (scales past a million are read by the value reader only).
CARDINALS: tuple[str, ...] = (*ONES, *TENS, "hundred", "thousand", "million")
#: Fraction words by their denominator ("a third" is 1/3).
FRACTIONS: dict[str, int] = {"half": 2, "third": 3, "quarter": 4, "fourth": 4, "fifth": 5, "sixth": 6,
                             "seventh": 7, "eighth": 8, "ninth": 9, "tenth": 10, "hundredth": 100}

#: Words that alone name a multiple, the verbs too ("she tripled the slices"): the value reader reads them in a slot,
#: and those above one are what a slot standing for a multiple may hold (the drafter's spans, the importer's slots).
MULTIPLIERS: dict[str, int] = {"once": 1, "twice": 2, "thrice": 3, "double": 2, "doubled": 2, "doubles": 2, "triple": 3,
                               "tripled": 3, "triples": 3, "quadruple": 4, "quadrupled": 4, "quadruples": 4}

#: The number words the device's mention scanner reads (edge_runtime.read.guard.scan), the value as read first.
DEVICE_NUMBER_WORDS: dict[str, tuple[float, ...]] = {
    "half": (0.5, 2), "halves": (0.5, 2), "halved": (0.5, 2), "halve": (0.5, 2), "twice": (2,), "double": (2,),
    "doubled": (2,), "doubles": (2,), "triple": (3,), "tripled": (3,), "triples": (3,), "thrice": (3,),
    "quadruple": (4,), "quadrupled": (4,), "dozen": (12,), "dozens": (12,), "third": (1 / 3, 3), "thirds": (1 / 3, 3),
    "quarter": (0.25, 4), "quarters": (0.25, 4), "fifth": (0.2, 5), "fifths": (0.2, 5), "tenth": (0.1, 10),
    "pair": (2,), "pairs": (2,),
}
#: Number words only the importer reads, to explain a program's constant (see the module docstring).
DEVICE_UNREAD_WORDS: dict[str, tuple[float, ...]] = {
    "fourth": (0.25, 4), "fourths": (0.25, 4), "sixth": (1 / 6, 6), "sixths": (1 / 6, 6), "seventh": (1 / 7, 7),
    "eighth": (0.125, 8), "eighths": (0.125, 8), "ninth": (1 / 9, 9), "tenths": (0.1, 10), "hundredth": (0.01, 100),
    "once": (1,), "couple": (2,),
    "weekly": (7,), "daily": (1,), "hourly": (60,), "monthly": (12,), "annual": (12,), "yearly": (12,),
    "percent": (100,), "percentage": (100,),
}
#: Every word that states a number without being a cardinal.
NUMBER_WORDS: dict[str, tuple[float, ...]] = {**DEVICE_NUMBER_WORDS, **DEVICE_UNREAD_WORDS}


#: Nouns ending in "-us" whose plural adds "es" (the stem keeps the "us"; "house" and "excuse" lose only the "s").
_US_NOUNS = frozenset("bonus bus campus virus circus cactus status chorus genius octopus walrus census surplus syllabus "
                      "stimulus focus fungus abacus apparatus prospectus platypus hippopotamus nucleus".split())


def plural_stem(word: str) -> str:
    """A crude stem: plural endings off (dollars -> dollar, boxes -> box, berries -> berry), lower case.

    The one stemmer of the guard's word overlap and the template aligner's token comparison (they had
    one each, which disagreed on four-letter words: "axes"). The importer's variable-name matching keeps
    its own cruder rule (one "s" off, five letters kept): this stemmer there changes 4 of 1 219 entries."""
    w = word.lower()
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 4 and w.endswith(("ches", "shes", "xes", "sses")):
        return w[:-2]
    if w.endswith("uses") and w[:-2] in _US_NOUNS:
        return w[:-2]  # bonuses -> bonus, as "bonus" keeps its s; houses, causes, excuses lose one s
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


#: Forms of common irregular verbs (past, participle, "goes") and nouns (plurals) -> the base word: "bought" asks as
#: "buy" does, "feet" counts what "foot" counts. Regular forms stem by their endings.
IRREGULAR_FORMS: dict[str, str] = {
    form: base for base, forms in {
        "buy": "bought", "sell": "sold", "spend": "spent", "pay": "paid", "make": "made", "take": "took taken",
        "give": "gave given", "eat": "ate eaten", "get": "got gotten", "have": "had", "win": "won", "lose": "lost",
        "find": "found", "keep": "kept", "hold": "held", "write": "wrote written", "drive": "drove driven",
        "ride": "rode ridden", "fly": "flew flown", "grow": "grew grown", "throw": "threw thrown", "catch": "caught",
        "teach": "taught", "bring": "brought", "think": "thought", "send": "sent", "build": "built", "swim": "swam swum",
        "sing": "sang sung", "drink": "drank drunk", "begin": "began begun", "see": "saw seen", "go": "went gone goes",
        "come": "came", "do": "did done does", "say": "said", "tell": "told", "sit": "sat", "stand": "stood",
        "sleep": "slept", "feed": "fed", "meet": "met", "lend": "lent", "dig": "dug", "hang": "hung", "shoot": "shot",
        "steal": "stole stolen", "wear": "wore worn", "tear": "tore torn", "break": "broke broken",
        "choose": "chose chosen", "freeze": "froze frozen", "rise": "rose risen", "fall": "fell fallen",
        "run": "ran", "leave": "left", "feel": "felt", "know": "knew known", "draw": "drew drawn", "lay": "laid",
        "weave": "wove woven", "sweep": "swept", "spin": "spun", "wake": "woke",
        "person": "people", "foot": "feet", "child": "children", "man": "men", "woman": "women", "tooth": "teeth",
        "mouse": "mice", "goose": "geese", "loaf": "loaves", "shelf": "shelves", "half": "halves", "wolf": "wolves",
        "knife": "knives", "wife": "wives", "calf": "calves", "thief": "thieves", "scarf": "scarves",
    }.items() for form in forms.split()}


#: Words that join phrases rather than name anything: a phrase of the question begins and ends next to one.
FUNCTION_WORDS = frozenset("""a an the of for to and or but in on at by with from into onto as is are was were be been has
have had do does did it its he she his her him they them their we our you your i my me this that these those there each
every all any some many much more most less few how what which who whom when where if then than so not no also just
can could will would should may might must per please""".split())


def word_stem(word: str) -> str:
    """A stem that also takes verb endings off, so a verb asks the same in any tense ("planted", "plants" and
    "plant"; "bakes" and "baked"; "bought" and "buy"), and a noun in either number ("cookie", "cookies"; "feet",
    "foot"). A final "e" and a doubled consonant are dropped and a final "y" is spelled "i", so the forms meet
    ("used" and "use", "tried" and "try"); two words may meet by accident ("plane", "plan"), never one word miss
    itself."""
    w = word.lower()
    w = IRREGULAR_FORMS.get(w, w)
    w = plural_stem(w)
    if len(w) > 4 and w.endswith("ied"):
        w = w[:-3] + "y"
    else:
        for end in ("ing", "ed"):
            if len(w) >= len(end) + 2 and w.endswith(end) and not w.endswith("eed"):
                w = w[: -len(end)]
                if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
                    w = w[:-1]  # "stopped" -> "stop"
                break
    if len(w) > 2 and w.endswith("e"):
        w = w[:-1]
    return w[:-1] + "i" if len(w) > 2 and w.endswith("y") else w


#: Words whose swap reverses a relation or an operation of a word problem ("sold" for "bought", "younger" for
#: "older", "spends" for "earns", "48 shirts *or* 110" for "and"): one put in the other's place is never a rename.
#: Each pair once, in base forms.
OPPOSITE_PAIRS: tuple[tuple[str, str], ...] = tuple(tuple(p.split("/")) for p in """buy/sell give/receive gain/lose
win/lose add/remove increase/decrease more/fewer more/less older/younger faster/slower longer/shorter taller/shorter
higher/lower heavier/lighter bigger/smaller larger/smaller earn/spend borrow/lend above/below before/after
arrive/leave enter/exit deposit/withdraw profit/loss earlier/later ahead/behind cheaper/costlier and/or
same/different""".split())


#: Verbs by the way a thing moves for whoever acts: to them ("buys", "gets", "earns"; "saves" and "keeps" hold it: "he
#: *saves* $5 on cheddar" is no "*spends* $5") or away from them ("eats", "sells", "gives"). A verb of one way in place
#: of one of the other reverses an operation as an opposite does ("She *ate* 2 slices" → "She *bought* 2 slices"); a
#: rewording keeps the way ("ate" → "had", "consumed"). A trade moves goods one way and money the other, so its two
#: sides are one act ("buys" / "spends", "sells" / "earns").
TO_THEM = "buy get receive earn find collect gather pick win gain borrow save keep".split()
AWAY = "eat sell give spend lose throw donate lend drop waste".split()
_ONE_TRADE = {("buy", "spend"), ("earn", "sell")}


def opposites() -> dict[str, frozenset[str]]:
    """Each word stem of ``OPPOSITE_PAIRS`` and of the two ways of ``TO_THEM`` and ``AWAY`` -> the stems of its
    opposites."""
    out: dict[str, set[str]] = {}
    for a, b in (*OPPOSITE_PAIRS, *((a, b) for a in TO_THEM for b in AWAY if (a, b) not in _ONE_TRADE)):
        out.setdefault(word_stem(a), set()).add(word_stem(b))
        out.setdefault(word_stem(b), set()).add(word_stem(a))
    return {k: frozenset(v) for k, v in out.items()}
