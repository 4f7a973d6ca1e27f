"""Re-parameterised questions of our own, for entries whose template no dev set exercises.

An independent evaluation found many ``extraction_failed`` misses on GSM-Symbolic templates outside the
dev set's 30: the readers were only ever looked at on those 30. This module writes probes for every
other entry of a bundle, the way GSM-Symbolic varies a question, from the entry's own template:

- **exact**: the template with new values (integers drawn from a wider range than the importer's
  round trips: a third of the original to three times it), written as the template writes them;
- **names**: the same question with each person's first name replaced by another of the same
  gender (names from Faker's en_US tables, none that the dev set uses);
- **number words**: the same question with small whole values written as words ("seven");
- **names + number words**: both;
- **objects**: each plain noun a value counts ("{k} eggs") renamed throughout to another countable thing;
- **currency**: dollar amounts in euros or pounds;
- **names + objects + currency + number words**: every change at once;
- **statements reordered**: two neighbouring statements that each hold a value exchanged (the final question
  stays last), the same values: a reader that reads by position gives them to the wrong slots.

The expected answer of every variant is what the device answers to the *exact* rendering, asked of
that entry (``entry_id``: IS1 skipped) with the guard off, and only when it read back exactly the
drawn values: so a probe measures reading, not the entry's reasoning (that is the independent
verification's job, builder/independent_check.py); entry code runs only in the device's sandbox.
Rows carry ``half`` (tune / check by seed row, :func:`builder.eval.added_clause.half_of`).

    python -m builder.eval.reparam_probe write OUT.jsonl --bundle B.arcb [--model DIR] [--entries 150]
    arc-build eval --bundle B.arcb --queries OUT.jsonl --systems arc --no-probes
    python -m builder.eval.added_clause report OUT.records.jsonl      # per kind and half
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from builder.eval.added_clause import half_of
from builder.eval.gsm_data import DATA
from edge_runtime.entries.metadata import EntryPoint, Param
from edge_runtime.read.english_words import ONES, TENS
from edge_runtime.read.question_words import sentences

EXACT = "exact"
NAMES = "names"
WORDS = "number words"
BOTH = "names + number words"
OBJECTS = "objects"
CURRENCY = "currency"
ALL = "names + objects + currency + number words"
REORDERED = "statements reordered"
PHRASES = "names + objects as two-word names"
KINDS = (EXACT, NAMES, WORDS, BOTH, OBJECTS, CURRENCY, ALL, REORDERED, PHRASES)

#: Countable things a count can be of (singular, plural): the probe's own list, unrelated to any reader's.
_THINGS = tuple(tuple(p.split("/")) for p in """marble/marbles sticker/stickers pencil/pencils cookie/cookies
book/books card/cards shell/shells bead/beads stamp/stamps balloon/balloons candle/candles button/buttons
crayon/crayons toy/toys puzzle/puzzles ribbon/ribbons brick/bricks coin/coins feather/feathers pebble/pebbles
muffin/muffins cupcake/cupcakes lemon/lemons peach/peaches plum/plums carrot/carrots onion/onions potato/potatoes
tomato/tomatoes notebook/notebooks folder/folders magnet/magnets lantern/lanterns kite/kites bottle/bottles
jar/jars basket/baskets blanket/blankets towel/towels scarf/scarves glove/gloves sock/socks hat/hats
chair/chairs table/tables lamp/lamps plate/plates bowl/bowls spoon/spoons fork/forks cup/cups""".split())
#: Things named in two words, as GSM-Symbolic's templates rename "pens" to "colored pencils" and "sugar cubes" to
#: "peppermints": renames of another word count break the word bigrams a skeleton index matches on.
_THING_PHRASES = tuple(tuple(p.replace("_", " ").split("/")) for p in """paper_cup/paper_cups glass_jar/glass_jars
toy_car/toy_cars comic_book/comic_books tennis_ball/tennis_balls gift_card/gift_cards candy_bar/candy_bars
rubber_duck/rubber_ducks party_hat/party_hats water_bottle/water_bottles coffee_mug/coffee_mugs
flower_pot/flower_pots picture_frame/picture_frames sea_shell/sea_shells golf_ball/golf_balls
photo_album/photo_albums hair_clip/hair_clips key_chain/key_chains tea_bag/tea_bags cereal_box/cereal_boxes""".split())
#: Words after a number that are units, times, money or collectives, not objects: renaming them would change the
#: reasoning ("33 pairs of shoes" counts shoes two at a time), so the probe never does.
_NOT_OBJECTS = frozenset("""feet foot inches inch yards yard miles mile meters metres meter metre centimeters
kilometers hours hour minutes minute seconds days day weeks week months month years year dollars dollar cents
cent pounds pound ounces ounce grams gram kilograms liters litres gallons gallon cups quarts pints times percent
points people persons students children kids adults friends members workers employees players pairs pair dozens
dozen millimeters millimetres pennies nickels dimes quarters""".split())

_NAME = re.compile(r"\b[A-Z][a-z]+\b")
#: First names that are also common words or dates: never treated as a person.
_NOT_NAMES = frozenset("""April May June August Will Mark Bill Rose Lily Holly Ivy Grace Hope Joy Dawn Summer
Autumn Art Sky Page Faith Chase Hunter Carol Penny Ruby Pearl Jade Amber Crystal Heather Olive Daisy Iris Violet
Sunday Monday Tuesday Wednesday Thursday Friday Saturday Christian Frank Sandy Rich Buck Drew Gene""".split())
#: The device's number words by value (edge_runtime.read.english_words): a probe writes what the device reads.
_WORD_OF = {value: word for word, value in (*ONES.items(), *TENS.items())}


def number_word(value: int) -> str | None:
    """English words for 2–20 and the tens to 90, else None (GSM-Symbolic writes small numbers as words)."""
    if 2 <= value <= 20 or value in range(30, 100, 10):
        return _WORD_OF[value]
    return None


@dataclass(frozen=True)
class Names:
    """First names by gender: ``genders`` recognises a person in a question (any name of one gender only),
    ``female`` / ``male`` are the replacements, without the ones a dev set already uses."""

    female: tuple[str, ...]
    male: tuple[str, ...]
    genders: Mapping[str, str]

    @classmethod
    def load(cls, exclude: Iterable[str] = ()) -> Names:
        from faker.providers.person.en_US import Provider

        female = set(Provider.first_names_female) - set(Provider.first_names_male) - _NOT_NAMES
        male = set(Provider.first_names_male) - set(Provider.first_names_female) - _NOT_NAMES
        used = set(exclude)
        genders = {**{n: "female" for n in female}, **{n: "male" for n in male}}
        return cls(tuple(sorted(female - used)), tuple(sorted(male - used)), genders)


def swap_names(text: str, names: Names, rng: random.Random) -> str | None:
    """``text`` with each first name replaced consistently by another of its gender; None if it names no one."""
    genders = names.genders
    found = [w for w in dict.fromkeys(_NAME.findall(text)) if w in genders]
    if not found:
        return None
    taken = set(_NAME.findall(text))
    mapping: dict[str, str] = {}
    for word in found:
        pool = [n for n in (names.female if genders[word] == "female" else names.male) if n not in taken]
        if not pool:
            return None
        mapping[word] = rng.choice(pool)
        taken.add(mapping[word])
    return re.sub(r"\b(" + "|".join(map(re.escape, mapping)) + r")\b", lambda m: mapping[m.group(1)], text)


def _singular(plural: str) -> str:
    if plural.endswith("ies"):
        return plural[:-3] + "y"
    if plural.endswith(("ches", "shes", "xes", "sses", "oes")):
        return plural[:-2]
    return plural[:-1]


def swap_objects(template: str, rng: random.Random, things: tuple[tuple[str, ...], ...] = _THINGS) -> str | None:
    """``template`` with each plural noun that directly follows a slot ("{k} eggs") renamed throughout, singular
    and plural, to another countable thing of ``things``; None if no slot counts a plain noun."""
    nouns = [m.group(1) for m in re.finditer(r"\{\w+\} ([a-z]{3,}s)\b", template)
             if m.group(1) not in _NOT_OBJECTS]
    nouns = list(dict.fromkeys(nouns))
    if not nouns:
        return None
    present = set(re.findall(r"[a-z]+", template.lower()))
    mapping: dict[str, str] = {}
    for plural in nouns:
        pool = [t for t in things if t[0] not in present and t[1] not in present and t[1] not in mapping.values()]
        if not pool:
            return None
        singular, other = rng.choice(pool)
        mapping[plural] = other
        mapping[_singular(plural)] = singular
    pattern = re.compile(r"(?<!\{)\b(" + "|".join(sorted(map(re.escape, mapping), key=len, reverse=True))
                         + r")\b(?!\})", re.IGNORECASE)  # never a slot's own name

    def rename(m: re.Match[str]) -> str:
        word = mapping[m.group(1).lower()]
        return word.capitalize() if m.group(1)[0].isupper() else word

    out = pattern.sub(rename, template)
    for singular in {mapping[_singular(p)] for p in nouns}:  # "an egg" -> "a marble", "a box" -> "an onion"
        article = "an" if singular[0] in "aeiou" else "a"
        out = re.sub(rf"\b([Aa])n? ({singular})\b", lambda m: (article.capitalize() if m.group(1) == "A" else article)
                     + " " + m.group(2), out)
    return out


def swap_currency(text: str, rng: random.Random) -> str | None:
    """``text`` with its dollar amounts in euros or pounds (the symbol only: the numbers stay); None without $."""
    if "$" not in text or re.search(r"\bdollars?\b|\bcents?\b", text):
        return None
    return text.replace("$", rng.choice(["€", "£"]))


def draw_values(entry: EntryPoint, rng: random.Random) -> dict[str, Any]:
    """New values inside each parameter's domain: whole numbers from a third of the original to three times it
    (a value of 1 stays: "1 potted plant" would need the noun's plural), others ±50%."""
    values: dict[str, Any] = {}
    for p in entry.params:
        values[p.name] = _draw(p, rng)
    return values


def _draw(p: Param, rng: random.Random) -> Any:
    original = p.original
    if p.choices or not isinstance(original, (int, float)) or isinstance(original, bool) or p.reading:
        return original
    for _ in range(50):
        if float(original).is_integer():
            if abs(original) <= 1:
                return original
            low, high = max(2, round(abs(original) / 3)), max(round(abs(original) * 3), 6)
            value: Any = rng.randint(low, high) * (1 if original > 0 else -1)
            if value == original:
                continue
        else:
            value = round(float(original) * rng.uniform(0.5, 1.5), 2)
        try:
            return p.validate(value)
        except Exception:  # noqa: BLE001 - outside the domain: draw again
            continue
    return original


def render(entry: EntryPoint, values: Mapping[str, Any], words: bool, rng: random.Random,
           template: str | None = None) -> tuple[str, bool]:
    """``template`` (the entry's by default) with ``values``; with ``words``, each whole value that has a word form
    becomes it with probability 1/2 (at least one when any can). Returns (text, whether any was written as a word)."""
    template = template or entry.template
    by_name = {p.name: p for p in entry.params}
    texts = {k: by_name[k].text(v) for k, v in values.items()}
    if words:
        candidates = [k for k, v in values.items() if isinstance(v, int) and not isinstance(v, bool)
                      and number_word(v) and texts[k] == str(v) and _stands_alone(template, k)]
        chosen = [k for k in candidates if rng.random() < 0.5] or candidates[:1]
        for k in chosen:
            texts[k] = number_word(values[k]) or texts[k]
        if not chosen:
            return template.format(**texts), False
    return template.format(**texts), bool(words)


def _stands_alone(template: str, slot: str) -> bool:
    """Every mention of ``slot`` is a number on its own: not part of "2/{k}", "${k}", "{k}%" or "1,{k}"."""
    for match in re.finditer(re.escape("{" + slot + "}"), template):
        before = template[match.start() - 1] if match.start() else " "
        after = template[match.end()] if match.end() < len(template) else " "
        if before in "/$.,€£" or before.isdigit() or after in "/%" or after.isdigit():
            return False
    return True


@dataclass(frozen=True)
class Probe:
    query: str
    answer: Any
    kind: str
    entry_id: str
    gsm8k_row: int
    half: str
    values: dict[str, Any]
    verification: str

    def row(self) -> dict[str, Any]:
        return asdict(self)


def dev_names(paths: Iterable[Path]) -> set[str]:
    """Every capitalised word of the dev sets' questions (so probe names are none the dev set uses)."""
    out: set[str] = set()
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    out.update(_NAME.findall(json.loads(line)["query"]))
    return out


def dev_rows(path: Path) -> set[int]:
    with open(path, encoding="utf-8") as handle:
        return {int(json.loads(line)["gsm8k_row"]) for line in handle if line.strip()}


def generate(entries: Iterable[EntryPoint], ask: Callable[[EntryPoint, str, dict[str, Any]], Any],
             names: Names, verification: Mapping[str, str], seed: str = "reparam-probe", draws: int = 5) -> list[Probe]:
    """Up to eight probes per entry whose exact rendering ``ask`` answered within ``draws`` draws of values (``ask``
    returns None when the device missed or did not read the values back); the same entries give the same probes."""
    out: list[Probe] = []
    for entry in entries:
        rng = random.Random(f"{seed}:{entry.id}")
        for _ in range(draws):  # values whose answer leaves the entry's domain (negative change) are drawn again
            values = draw_values(entry, rng)
            if values == entry.original_values:
                continue
            exact, _ = render(entry, values, False, rng)
            answer = ask(entry, exact, values)
            if answer is not None:
                break
        else:
            continue
        row = int(entry.id.rsplit("-", 1)[1]) if entry.id.startswith("gsm8k-") else -1
        make = lambda q, kind: Probe(q, answer, kind, entry.id, row, half_of(row), values,  # noqa: E731
                                     verification.get(entry.id, "unverified"))
        out.append(make(exact, EXACT))
        named = swap_names(exact, names, rng)
        if named is not None:
            out.append(make(named, NAMES))
        worded, any_word = render(entry, values, True, rng)
        if any_word:
            out.append(make(worded, WORDS))
            both = swap_names(worded, names, random.Random(f"{seed}:{entry.id}:both"))
            if both is not None:
                out.append(make(both, BOTH))
        renamed = swap_objects(entry.template, random.Random(f"{seed}:{entry.id}:objects"))
        if renamed is not None:
            out.append(make(render(entry, values, False, rng, renamed)[0], OBJECTS))
        priced = swap_currency(exact, random.Random(f"{seed}:{entry.id}:currency"))
        if priced is not None:
            out.append(make(priced, CURRENCY))
        if renamed is not None or priced is not None:
            text = render(entry, values, True, rng, renamed)[0]
            text = swap_currency(text, random.Random(f"{seed}:{entry.id}:currency")) or text
            text = swap_names(text, names, random.Random(f"{seed}:{entry.id}:all")) or text
            out.append(make(text, ALL))
        reordered = reorder_statements(entry.template, random.Random(f"{seed}:{entry.id}:reorder"))
        if reordered is not None:
            out.append(make(render(entry, values, False, rng, reordered)[0], REORDERED))
        phrased = swap_objects(entry.template, random.Random(f"{seed}:{entry.id}:phrases"), _THING_PHRASES)
        if phrased is not None:
            text = render(entry, values, False, rng, phrased)[0]
            out.append(make(swap_names(text, names, random.Random(f"{seed}:{entry.id}:phrases-names")) or text, PHRASES))
    return out


def reorder_statements(template: str, rng: random.Random) -> str | None:
    """``template`` with two neighbouring statements exchanged, each holding a slot, none of them the final
    question; None when it has no such pair. Word problems mostly state their givens in any order, so the
    expected answer stays that of the exact rendering (a reordering that changes what a pronoun refers to may
    make a question ill-formed; such a row counts as a wrong answer only if it is served)."""
    spans = sentences(template)
    if len(spans) < 3:
        return None
    body = spans[:-1]  # the final question stays last
    pairs = [i for i in range(len(body) - 1)
             if "{" in template[body[i][0]:body[i][1]] and "{" in template[body[i + 1][0]:body[i + 1][1]]]
    if not pairs:
        return None
    i = rng.choice(pairs)
    (s1, e1), (s2, e2) = body[i], body[i + 1]
    return template[:s1] + template[s2:e2] + template[e1:s2] + template[s1:e1] + template[e2:]


def device_asker(client: Any, dropped: dict[str, int]) -> Callable[[EntryPoint, str, dict[str, Any]], Any]:
    """Ask the device (guard off) for ``entry`` on the exact rendering; the answer if it read ``values`` back.
    ``dropped`` counts why the others gave none (a miss reason, or "read other values")."""
    from edge_runtime.proto import edge_pb2 as pb

    def ask(entry: EntryPoint, query: str, values: dict[str, Any]) -> Any:
        response = client.invoke(query, entry_id=entry.id, timeout_s=30)
        why = ""
        if response.outcome != pb.HIT or not response.answer_json:
            why = pb.MissReason.Name(response.miss_reason).lower()
        elif any(abs(float(json.loads(response.parameters_json or "{}").get(k, float("nan"))) - float(v)) > 1e-9
                 for k, v in values.items()):
            why = "read other values"
        if why:
            dropped[why] = dropped.get(why, 0) + 1
            return None
        return json.loads(response.answer_json)

    return ask


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write", help="write probes for the entries of a bundle that no dev template exercises")
    w.add_argument("out", type=Path)
    w.add_argument("--bundle", type=Path, required=True)
    w.add_argument("--model", type=Path, default=None, help="target-model artefact (default: found under build/)")
    w.add_argument("--entries", type=int, default=150, help="entries sampled (by a fixed hash of their id)")
    args = parser.parse_args(argv)

    from builder.eval.edge_process import EdgeServerProcess
    from builder.eval.runner import bundle_model_dir
    from edge_runtime.bundles.bundle import read_bundle
    from edge_runtime.serving.client import EdgeClient

    bundle = read_bundle(args.bundle, trusted_keys=None, allow_unsigned=True)
    key = bytes.fromhex(bundle.manifest["public_key"])
    skip = dev_rows(DATA / "gsm_symbolic_dev.jsonl")
    pool = [e for e in bundle.entries.values()
            if not (e.id.startswith("gsm8k-") and int(e.id.rsplit("-", 1)[1]) in skip)]
    pool.sort(key=lambda e: random.Random(f"pick:{e.id}").random())
    chosen = pool[: args.entries]
    names = Names.load(dev_names([DATA / "gsm_symbolic_dev.jsonl", DATA / "gsm_plus_dev.jsonl"]))
    model = args.model or bundle_model_dir(bundle, print)
    status = {k: getattr(v, "value", str(v)) for k, v in bundle.verification.items()}
    with EdgeServerProcess(args.bundle, key, model_dir=model, guard=False, log=print) as server, \
            EdgeClient(server.address, timeout_s=30) as client:
        from tqdm import tqdm

        dropped: dict[str, int] = {}
        probes = generate(tqdm(chosen, desc="exact renderings", unit="entry"), device_asker(client, dropped), names,
                          status)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as handle:
        for probe in probes:
            handle.write(json.dumps(probe.row(), ensure_ascii=False, default=str) + "\n")
    counts: dict[str, int] = {}
    for p in probes:
        counts[f"{p.kind} / {p.half}"] = counts.get(f"{p.kind} / {p.half}", 0) + 1
    print(json.dumps({"entries": len(chosen), "answered": len({p.entry_id for p in probes}),
                      "exact rendering not answered": dropped, **counts}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
