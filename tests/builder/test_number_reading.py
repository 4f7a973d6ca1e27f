"""The importer and the device read number words from one table (edge_runtime/read/english_words.py).

On every question of the dev sets and of the GSM8K test set: wherever the importer's mention scanner
(builder.gsm8k.scan_numbers, which decides the slots) and the device's (edge_runtime.read.guard.scan, which
reads them back) find a number at the same span, they read the same value; and every digit or
cardinal-word mention the importer makes a slot of reads, through the device's value reader, as the
value the importer planned with. The importer scans with the device's scanner: each of its mentions is a
piece (``mentions.parts``) of one number the device reads, and every number the device reads is there.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from builder.eval.gsm_data import DEV_SETS, GSM8K_TEST
from builder.gsm8k import STRUCTURAL_WORDS, scan_numbers
from edge_runtime.read import english_words, guard, mentions, template_align, template_facts, values

QUESTION_FILES = (*DEV_SETS, GSM8K_TEST)


def _questions() -> list[str]:
    out = []
    for path in QUESTION_FILES:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            out.append(row.get("query") or row["question"])
    return out


@pytest.mark.skipif(not all(Path(p).exists() for p in QUESTION_FILES), reason="dev sets / GSM8K test not in /work/shared/data")
def test_importer_and_device_read_every_shared_mention_of_the_dev_questions_alike():
    questions = _questions()
    assert len(questions) > 2000
    shared = 0
    disagreements = []
    for q in questions:
        device = {(m.start, m.end): m.values[0] for m in guard.scan(q)}
        for m in scan_numbers(q):
            if (m.start, m.end) in device:
                shared += 1
                if not guard.same_value(float(m.value), device[(m.start, m.end)]):
                    disagreements.append((q[m.start:m.end], m.value, device[(m.start, m.end)]))
            if m.kind in ("digits", "word"):
                read = float(Fraction(values.parse_quantity(m.text).value))
                if not guard.same_value(read, float(m.value)):
                    disagreements.append((m.text, m.value, read))
    assert shared > 10_000
    assert disagreements == []


@pytest.mark.skipif(not all(Path(p).exists() for p in QUESTION_FILES), reason="dev sets / GSM8K test not in /work/shared/data")
def test_importer_reads_every_number_mention_of_the_dev_questions_as_the_device_does():
    """Same numbers, same spans, same values: the importer's mentions, grouped by the device mention each is a
    piece of, are the device's mentions; what else it adds are the words the device does not read as numbers."""
    pieces = 0
    for q in _questions():
        device = [(m.start, m.end, m.values[0]) for m in mentions.scan(q)]
        importer = scan_numbers(q)
        assert sorted({m.stated for m in importer if m.stated is not None}) == device, q
        for m in importer:
            if m.stated is None:
                assert m.text.lower() in english_words.DEVICE_UNREAD_WORDS and m.kind == "structural", (q, m)
                continue
            assert m.stated[0] <= m.start < m.end <= m.stated[1], (q, m)
            pieces += m.stated[:2] != (m.start, m.end)
    assert pieces > 500  # "2/5", "two thirds", "a pair": read whole by both, written apart by programs


@pytest.mark.parametrize("text, device, importer", [
    ("On days one and two, Mack saw 50 birds", ["one", "two", "50"], ["one", "two", "50"]),
    ("She gives one fifty-dollar bill", ["one", "fifty"], ["one", "fifty"]),
    ("She saw 90 spiders, 1/3rd as many millipedes", ["90", "1/3"], ["90", "1/3"]),
    ("One-fourth of the 12 cakes and three fourths of the pies", ["One-fourth", "12", "three fourths"],
     ["One-fourth", "12", "three", "fourths"]),
    ("2/5 of a pair, twice, 3 1/2 cups", ["2/5", "a pair", "twice", "3 1/2"], ["2", "5", "pair", "twice", "3", "1/2"]),
    ("on the fourth day, 25% daily", ["25"], ["fourth", "25", "daily"]),
])
def test_one_scanner_cut_into_the_pieces_a_program_writes(text, device, importer):
    assert [m.text for m in mentions.scan(text)] == device
    assert [m.text for m in scan_numbers(text)] == importer


def test_one_word_table_in_both_orders():
    """The device reads its words with the value as read first; the importer's view is the same tuples
    reversed (its value as read is the last): no word, no value of its own."""
    assert guard.STRUCTURAL == english_words.DEVICE_NUMBER_WORDS
    assert STRUCTURAL_WORDS == {w: tuple(reversed(v)) for w, v in english_words.NUMBER_WORDS.items()}
    assert not set(english_words.DEVICE_NUMBER_WORDS) & set(english_words.DEVICE_UNREAD_WORDS)
    for word, readings in english_words.NUMBER_WORDS.items():
        stem = word[:-1] if word.endswith("s") and word[:-1] in english_words.FRACTIONS else word
        if stem in english_words.FRACTIONS:
            assert readings == (1 / english_words.FRACTIONS[stem], english_words.FRACTIONS[stem]), word
    for word, denominator in values._ORDINALS.items():
        assert english_words.FRACTIONS[word] == denominator


@pytest.mark.parametrize("word, stem", [
    ("dollars", "dollar"), ("boxes", "box"), ("berries", "berry"), ("inches", "inch"), ("glass", "glass"),
    ("bus", "bus"), ("axes", "axe"), ("Dollars", "dollar"), ("is", "is"),
    ("bonuses", "bonus"), ("bonus", "bonus"), ("buses", "bus"), ("houses", "house"), ("causes", "cause"),
    ("excuses", "excuse"), ("fuses", "fuse"), ("campuses", "campus"),
])
def test_one_plural_stemmer_for_the_guard_and_the_aligner(word, stem):
    assert english_words.plural_stem(word) == stem
    assert template_facts.stem(word) == stem  # the guard reads the words around a slot through it
    if len(word) > 3:
        assert template_align._default_words().norm(word.lower()) == stem
