"""Which literals are parameters: :func:`plan_parameters` maps a program's literals to its question's numbers.

Step 4 of the package docstring, as the steps it takes: restore GSM-Hard's replaced values, score
every (literal, mention) pair, assign greedily, lift unit conversions, turn number words into
slots; then join repeats, add free slots for numbers no literal reads, freeze parameters a
constant may have been computed from, and name each parameter.
"""

from __future__ import annotations

import ast
import keyword
import re
from collections.abc import Sequence
from typing import Any

from builder.gsm8k import Mention, context_words, replaced_numbers, scan_numbers, words_after
from builder.pot_import.matching import (
    STOP_WORDS,
    UNIT_CONSTANTS,
    all_names,
    compound_word,
    fraction_piece,
    hyphenated_measure,
    lifted_form,
    literal_form,
    name_tokens,
    plain_values,
    sanitise,
    similarity,
    unit_name,
    unit_word,
    value_matches,
)
from builder.pot_import.plan import ParamPlan, Plan
from builder.pot_import.program import RESERVED_NAMES, Literal, PalProgram, close_to, is_docstring, numeric_node
from builder.pot_import.suspects import added_operands, derived_from, stated_twice
from edge_runtime.entries.metadata import format_value
from edge_runtime.errors import ArcError
from edge_runtime.read.english_words import MULTIPLIERS, plural_stem
from edge_runtime.read.values import parse_quantity


def plan_parameters(
    question: str, program: PalProgram, variant: str = "", docstring: str = "", frozen: Sequence[str] = (),
    free_numbers: bool = True, structural_words: bool = True, freeze_derived: bool = True, fixed: Sequence[str] = (),
    traded: Sequence[tuple[int, int]] = (),
) -> Plan:
    """Map the program's literals to the question's mentions.

    1. GSM-Hard: a literal equal to a number the variant question put in place of an original
       mention gets that mention's value back (values only: the variant and its program do not
       always agree on *which* quantity was replaced, so the mention is chosen in step 2).
    2. Every literal, assignments ``var = <number>`` first, then in source order, takes a free
       mention with the same value (or percent forms of it), best variable/context word overlap
       first; unit constants inside expressions need some word overlap. A literal whose value is a
       mention another literal already took shares that parameter ("70 corn chips each").
    3. Mentions written as words that cannot be rendered as digits ("half", "twice") stay constants;
       a parameter that a constant not stated in the question was computed from is frozen too (the
       program precomputed something from it, so it cannot vary) — unless ``freeze_derived`` is
       False: an independent program that checks an entry reads every number it can (a stale
       constant there makes it disagree, which only costs the entry a parameter), and the importer
       then leaves the suspects (``Plan.suspects``) to the independent check, which cannot clear one
       whose number a mention no parameter reads states too (:func:`builder.pot_import.suspects.stated_twice`).
    4. ``traded``: pairs of mentions of one value (their starts) whose parameters take each other's mention, where the
       independent check found the guess of step 2 crossed (:func:`builder.independent_check._traded_agreement`).
    """
    mentions = scan_numbers(question)
    restored = _restored_values(question, program, variant, docstring, mentions)
    for lit in program.literals:
        if lit.excluded is None:
            value = restored.get(lit.id, lit.value)
            probe = Literal(**{**lit.__dict__, "value": value})
            lit.excluded = unit_name(probe)
    pool = [lit for lit in program.literals if not lit.excluded]
    added = added_operands(program.func)  # the literals a sum or a difference adds: never a ratio word, maybe a suspect
    candidates = _candidates(question, pool, mentions, restored, program.func, added)
    assigned, taken = _assign(candidates, program, mentions, question)
    _pair_operands(program, pool, mentions, restored, assigned, taken)
    _lift_conversions(question, pool, mentions, restored, assigned, taken)
    params, constants, unexplained = _params_of(question, program, restored, assigned, structural_words,
                                                _fraction_literals(program.func, pool))
    traded_pairs = _trade_mentions(params, traded)
    _name_params(params, program, question, all_names(program.func))
    suspects, suspected_constants = derived_from(program, params, restored, mentions, set(assigned), added)
    derived = suspects if freeze_derived else {}
    twinned = stated_twice([p for p in params if p.name not in frozen], mentions)
    frozen_all = set(frozen) | set(derived)
    kept = [p for p in params if p.name not in frozen_all]
    for p in params:
        if p.name in frozen_all:
            why = suspects.get(p.name) or "a failed round trip"
            constants.append(f"{format_value(p.original)} ({p.name}, kept constant: {why})")
    settled = free_numbers and not unexplained and not frozen_all  # no constant may come from a stated number
    read = {mm.index for mm, _ in assigned.values()}  # mentions a literal reads
    if free_numbers and not unexplained:  # a parameter kept constant leaves the others' repeats theirs
        _join_repeats(question, kept, mentions, read)
    used = {m.index for p in kept for m in (p.mentions or (p.mention,))}
    spans = [(m.start, m.end) for p in kept for m in (p.mentions or (p.mention,))]
    unused_mentions = [m for m in mentions if m.kind in ("digits", "word") and m.index not in used
                       and m.index not in read
                       and not any(a < m.end and m.start < b for a, b in spans)]  # "One" of "One third"
    unused = [repr(m.text) for m in unused_mentions]
    if settled:
        kept += _free_params(question, unused_mentions, program, restored, {p.name for p in kept} | all_names(program.func),
                             fixed)
    return Plan(kept, restored, constants, unused, sorted(frozen_all & {p.name for p in params}), unexplained,
                traded_pairs, {p.name: (suspects[p.name], tuple(sorted(suspected_constants[p.name])), p.name in twinned)
                               for p in kept if p.name in suspects},
                sorted((set(derived) - set(frozen)) & {p.name for p in params}))


def _trade_mentions(params: Sequence[ParamPlan], traded: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Step 4: each pair's two parameters (one mention each, of one value) read each other's mention; returns the
    pairs traded."""
    done: list[tuple[int, int]] = []
    for a, b in traded:
        p = next((p for p in params if p.mention.start == a and not p.mentions), None)
        q = next((q for q in params if q.mention.start == b and not q.mentions), None)
        if p is not None and q is not None and close_to(float(p.mention.value), float(q.mention.value)):
            p.mention, q.mention = q.mention, p.mention
            done.append((a, b))
    return done


def _restored_values(question: str, program: PalProgram, variant: str, docstring: str,
                     mentions: Sequence[Mention]) -> dict[int, Any]:
    """Step 1: literal id -> the original question's value, for literals a GSM-Hard variant replaced."""
    restored: dict[int, Any] = {}
    if variant and variant.strip() and variant.strip() != (docstring or question).strip():
        replacements = replaced_numbers(variant, question, mentions)
        for form in ("value", "percent"):  # exact values first: a scaled match is only a fallback
            for rep in replacements:
                if form == "percent" and not rep.mention.percent:
                    continue
                target = literal_form(rep.variant_value, form)
                for lit in program.literals:
                    if lit.id not in restored and not lit.excluded and close_to(float(lit.value), target):
                        value: Any = literal_form(rep.mention.value, form)
                        restored[lit.id] = float(value) if isinstance(lit.value, float) else value
    return restored


def _candidates(question: str, pool: Sequence[Literal], mentions: Sequence[Mention],
                restored: dict[int, Any], func: ast.FunctionDef, added: set[int]) -> list[list[Any]]:
    """Step 2's pairs [score, literal, mention, form, value] a literal may read, best first (``added``: the nodes of
    ``func`` a sum or a difference adds, :func:`builder.pot_import.suspects.added_operands`)."""
    plain = plain_values(mentions)
    fractions = _written_fractions(func, pool, restored)
    counted = _in_sums_of_stated(func, pool, restored, mentions)
    worded = {m.index: float(m.value) for m in mentions if _worded_fraction(m)}
    candidates = []
    for lit in pool:
        value = float(restored.get(lit.id, lit.value))
        pair = fractions.get(id(lit.node))
        stated_fraction = pair is not None and bool(pair[1]) and any(close_to(pair[0] / pair[1], w)
                                                                     for w in worded.values())
        if value == 0.0 and not lit.direct:
            continue  # 0 inside an expression is arithmetic, not a quantity
        for mention in mentions:
            form = value_matches(value, mention, question)
            if form is None or stated_fraction and mention.index not in worded:
                continue  # the 3 of "* 2 / 3" of "two-thirds" reads the fraction, never "3 miles" beside it
            if id(lit.node) in added and not lit.direct and _scales(mention, value):
                continue  # "Two years ago ... half Jan's age": ``jan_age - 2`` is the two years, never the half
            sim = similarity(lit, question, mention, mention.value in plain)
            if (not lit.direct and sim <= 0 and (value in UNIT_CONSTANTS or value == 1.0) and mention.kind != "structural"
                    and not hyphenated_measure(question, mention) and id(lit.node) not in counted):
                continue  # "/ 60" next to "60%", "+ 1" next to "1 dog": arithmetic, not that mention
            score = (sim - (0.3 if mention.kind == "structural" else 0) - (0.2 if form != "value" else 0)
                     - (0.5 if compound_word(question, mention) else 0))
            if fraction_piece(question, mention):  # "3/4ths" the program writes "* 3 / 4": those literals read it
                written = re.fullmatch(r"(\d+)\s*/\s*(\d+)", question[mention.stated[0]:mention.stated[1]])
                pair = (float(written[1]), float(written[2])) if written else None
                score += 1.0 if pair is not None and fractions.get(id(lit.node)) == pair else -0.3
            elif id(lit.node) in fractions and mention.index in worded:
                # "two-thirds ... three-fifths" written "* 2 / 3" and "* 3 / 5": the pair whose quotient is the word's
                # value reads it; by words and names alone the 3 of "2 / 3" took "three-fifths"
                num, den = fractions[id(lit.node)]
                score += 1.0 if den and close_to(num / den, float(mention.value)) else -0.3
            candidates.append([score, lit, mention, form, value])
    # ties: keep the order of same-valued literals and mentions ("3 sprints 3 times a week")
    rank_l: dict[int, int] = {}
    rank_m: dict[tuple[float, int], int] = {}
    for value in {c[4] for c in candidates}:
        lits = sorted({c[1].id: c[1] for c in candidates if c[4] == value}.values(), key=lambda lit: lit.order)
        ments = sorted({c[2].index for c in candidates if c[4] == value})
        for i, lit in enumerate(lits):
            rank_l[lit.id] = i
        for i, index in enumerate(ments):
            rank_m[(value, index)] = i
    candidates.sort(key=lambda c: (
        -c[0], 0 if c[1].direct else 1, abs(rank_l[c[1].id] - rank_m[(c[4], c[2].index)]), c[1].order, c[2].index,
    ))
    return candidates


def _worded_fraction(mention: Mention) -> bool:
    """A fraction of more than one part the question states in words ("two-thirds", "three-fifths"), which a program
    writes as two literals. Not one part ("half", "1/3"): its denominator alone reads it, as a reciprocal."""
    value = float(mention.value)
    return mention.kind == "structural" and 0 < value < 1 and not close_to(1 / value, round(1 / value))


def _scales(mention: Mention, value: float) -> bool:
    """Whether a literal of ``value`` would read ``mention`` as a ratio: "twice" as 2, "half" as the 2 of its
    reciprocal. A ratio multiplies or divides; added or subtracted, the number is another quantity of that value. Not
    "half" as 0.5 ("half an hour" is an amount) nor "a dozen" (a count)."""
    if mention.kind != "structural":
        return False
    word = mention.text.lower().split("-")[-1]
    if mention.text.lower() in _MULTIPLIERS:
        return True
    return (word in _FRACTIONS or word.rstrip("s") in _FRACTIONS) and value > 1


def _in_sums_of_stated(func: ast.FunctionDef, pool: Sequence[Literal], restored: dict[int, Any],
                       mentions: Sequence[Mention]) -> set[int]:
    """The literal nodes that are terms of a sum whose other terms are all numbers the question states, two at least
    ("25 + 7 + 13 - 4" of "25 classmates and the 7 girls ... 13 family members ... 4 people"): a count among counts,
    where a unit constant's value (7, 12, 60) is a stated number, not a conversion. Not a one ("+ 1")."""
    values = {id(lit.node): float(restored.get(lit.id, lit.value)) for lit in pool}
    stated = {float(v) for m in mentions if m.parameterisable for v, form in m.literal_values() if form == "value"}
    found: set[int] = set()
    for node in ast.walk(func):
        if not isinstance(node, ast.BinOp) or not isinstance(node.op, (ast.Add, ast.Sub)):
            continue
        terms = _sum_terms(node)
        if len(terms) < 3 or not all(id(t) in values for t in terms):
            continue
        for term in terms:
            others = [values[id(t)] for t in terms if t is not term]
            if values[id(term)] != 1.0 and all(v in stated for v in others):
                found.add(id(term))
    return found


def _sum_terms(node: ast.expr) -> list[ast.expr]:
    """The terms of a chain of + and - (``a + b - c``), as nodes."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        return _sum_terms(node.left) + _sum_terms(node.right)
    return [node]


def _fraction_literals(func: ast.FunctionDef, pool: Sequence[Literal]) -> dict[int, tuple[int, int]]:
    """Literal id -> (numerator id, denominator id) for each fraction the program writes as two literals
    (``x * 2 / 3``, ``2 / 3 * x``)."""
    nodes = {id(lit.node): lit for lit in pool}
    out: dict[int, tuple[int, int]] = {}
    for node in ast.walk(func):
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and id(node.right) in nodes):
            continue
        left = node.left
        numerator = left.right if isinstance(left, ast.BinOp) and isinstance(left.op, ast.Mult) else left
        if id(numerator) in nodes:
            pair = (nodes[id(numerator)].id, nodes[id(node.right)].id)
            out[pair[0]] = out[pair[1]] = pair
    return out


def _written_fractions(func: ast.FunctionDef, pool: Sequence[Literal],
                       restored: dict[int, Any]) -> dict[int, tuple[float, float]]:
    """id of each literal node written as a fraction of two literals ("3 / 4", "x * 3 / 4") -> (numerator,
    denominator): a fraction the question states ("3/4ths") is those two literals, not another "4" of the question."""
    literals = {lit.id: lit for lit in pool}
    value = lambda lid: float(restored.get(lid, literals[lid].value))  # noqa: E731
    return {id(literals[lid].node): (value(num), value(den)) for lid, (num, den) in _fraction_literals(func, pool).items()}


def _assign(candidates: Sequence[list[Any]], program: PalProgram, mentions: Sequence[Mention],
            question: str) -> tuple[dict[int, tuple[Mention, str]], set[int]]:
    """Step 2's choice: (literal id -> (mention, form), the mention indices taken), greedily by score."""
    assigned: dict[int, tuple[Mention, str]] = {}  # literal id -> (mention, form)
    taken: set[int] = set()
    for _score, lit, mention, form, _value in candidates:
        if lit.id in assigned or mention.index in taken:
            continue
        assigned[lit.id] = (mention, form)
        taken.add(mention.index)
    _free_for_ratio_words(candidates, assigned, taken)
    # a literal whose value is a mention another literal took shares that parameter ("70 chips each")
    # (an inline literal too, when the question states its value once and the literal's variable names the same
    # thing as the variable that took it: ``sunday_gingerbread = 10 + more`` after ``saturday_gingerbread = 10``)
    equal = bool(_EQUAL_AMOUNT.search(question))
    for score, lit, mention, form, value in candidates:
        if lit.id in assigned or form != "value" or not mention.parameterisable:
            continue
        stated_once = sum(any(close_to(v, value) for v, _ in m.literal_values()) for m in mentions) == 1
        if score <= 0 and (lit.direct or value in UNIT_CONSTANTS or value < 10) and not (equal and stated_once):
            continue  # a small number inline is arithmetic more often than the stated one; a large one ("500 - price"
            # after ``may = 500``, stated once, in a sentence whose words lie beyond the mention's window) is that number,
            # and so is one the question makes equal to a number it states once ("2 oz of cheese and an equal amount of
            # ham": ``ham = 2``)
        owner = [lid for lid, (m, _) in assigned.items() if m.index == mention.index]
        if not owner or assigned[owner[0]][1] != "value":
            continue
        if not lit.direct and not (equal and stated_once):
            owner_name = program.literal(owner[0]).direct
            if not owner_name or not name_tokens(lit.target or "") & name_tokens(owner_name) or not stated_once:
                continue
        assigned[lit.id] = (mention, form)
    return assigned, taken


def _free_for_ratio_words(candidates: Sequence[list[Any]], assigned: dict[int, tuple[Mention, str]],
                          taken: set[int]) -> None:
    """A literal left without a mention because the one it could read went to another literal, which could read a ratio
    word that no literal took, takes that mention, and the other the word ("5 - 2 ... * 2" of "half as many ... plus
    two extra": the 2 subtracted cannot be the half, so the 2 that scales reads "half" and the other "two").
    (``assigned`` and ``taken`` grow.)"""
    by_literal: dict[int, list[list[Any]]] = {}
    for c in candidates:
        by_literal.setdefault(c[1].id, []).append(c)
    for lid, rows in by_literal.items():
        if lid in assigned:
            continue
        for _score, lit, mention, form, _value in rows:
            holder = next((h for h, (m, _) in assigned.items() if m.index == mention.index), None)
            ratio = next((c for c in by_literal.get(holder, ()) if c[2].index not in taken and _scales(c[2], c[4])),
                         None) if holder is not None else None
            if ratio is not None:
                assigned[holder] = (ratio[2], ratio[3])
                taken.add(ratio[2].index)
                assigned[lit.id] = (mention, form)
                break


#: A question that makes one amount equal to another ("an equal amount of ham", "the same number of"; not "as many
#: as", which compares by a multiple as often: "3/4 times as much money as").
_EQUAL_AMOUNT = re.compile(r"\b(?:equal|same)\s+(?:amount|number|quantity)\b", re.IGNORECASE)


def _pair_operands(program: PalProgram, pool: Sequence[Literal], mentions: Sequence[Mention], restored: dict[int, Any],
                   assigned: dict[int, tuple[Mention, str]], taken: set[int]) -> None:
    """Two literals of one value multiplied or added together ("10 * 10" of "a 10-hour shift ... $10 per hour"), one
    bound to a mention and the other to none, where the question states that value exactly twice: the other reads the
    other mention. Which operand reads which mention cannot matter to the result, and two mentions of the value with
    two operands that use it leave no other reading; alone, the second would stay a constant (an inline 10 reads as a
    unit constant without a word of its own), and a program that reads one mention only checks an entry within a scope.
    (``assigned`` and ``taken`` grow.)"""
    by_node = {id(lit.node): lit for lit in pool}
    for node in ast.walk(program.func):
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Add))):
            continue
        pair = [by_node.get(id(node.left)), by_node.get(id(node.right))]
        if None in pair:
            continue
        a, b = pair
        value = float(restored.get(a.id, a.value))
        if not close_to(value, float(restored.get(b.id, b.value))) or (a.id in assigned) == (b.id in assigned):
            continue
        bound, free = (a, b) if a.id in assigned else (b, a)
        mention, form = assigned[bound.id]
        stating = [m for m in mentions if m.parameterisable and close_to(float(m.value), value)]
        others = [m for m in stating if m.index != mention.index]
        if form == "value" and len(stating) == 2 and len(others) == 1 and others[0].index not in taken:
            assigned[free.id] = (others[0], "value")
            taken.add(others[0].index)


def _lift_conversions(question: str, pool: Sequence[Literal], mentions: Sequence[Mention], restored: dict[int, Any],
                      assigned: dict[int, tuple[Mention, str]], taken: set[int]) -> None:
    """A constant the program precomputed from a stated duration or measure becomes that number, converted
    (``assigned`` and ``taken`` grow)."""
    question_units = {unit_word(w) for w in re.findall(r"[a-z]+", question.lower())}
    if re.search(r"\$\s?\d", question):  # "$5 ... 40 cents": the question counts in dollars too, as 0.4 does
        question_units.add("dollar")
    for lit in pool:
        constant = float(restored.get(lit.id, lit.value))
        if lit.id in assigned or constant == 0:
            continue
        for mention in mentions:
            if mention.index in taken:
                continue
            lifted = lifted_form(constant, mention, question, question_units, lit)
            if lifted is not None:
                assigned[lit.id] = (mention, lifted)
                taken.add(mention.index)
                break


def _params_of(question: str, program: PalProgram, restored: dict[int, Any], assigned: dict[int, tuple[Mention, str]],
               structural_words: bool, fractions: dict[int, tuple[int, int]] | None = None,
               ) -> tuple[list[ParamPlan], list[str], list[str]]:
    """Step 3: (one unnamed parameter per mention the literals read, constant notes, unexplained literals)."""
    constants: list[str] = []
    unexplained: list[str] = []
    by_mention: dict[int, ParamPlan] = {}
    conflicting: set[int] = set()
    params: list[ParamPlan] = []
    worded = _worded_fractions(question, program, restored, assigned, fractions or {}) if structural_words else {}
    for lit in program.literals:
        value = restored.get(lit.id, lit.value)
        shown = format_value(value)
        if lit.excluded:
            constants.append(f"{shown} ({lit.excluded})")
            continue
        if lit.id in worded:
            mention, pair = worded[lit.id]
            if mention.index not in by_mention:
                plan = ParamPlan(name="", literals=[(pair[0], "value"), (pair[1], "one")], mention=mention,
                                 original=float(mention.value), type=float, structural=True)
                by_mention[mention.index] = plan
                params.append(plan)
            continue
        if lit.id not in assigned:
            if float(value) in UNIT_CONSTANTS:
                constants.append(f"{shown} (unit constant, not stated in the question)")
            else:
                constants.append(f"{shown} (not stated in the question)")
                unexplained.append(shown)
            continue
        mention, form = assigned[lit.id]
        reading: str | None = None
        natural = float(mention.value) if form in ("one_plus", "one_minus") else value  # the number it states
        if form == "fraction" and mention.stated is not None:  # "3/5" written 0.6: the whole fraction is the slot
            start, end, whole = mention.stated
            mention = Mention(mention.index, start, end, question[start:end], whole, "structural", mention.percent,
                              mention.money, (), mention.stated)
            form, reading = "value", "fraction"
        elif not mention.parameterisable:
            structural = _structural_slot(question, mention, float(natural)) if structural_words else None
            if structural is None:
                constants.append(f"{shown} (the question's word {mention.text!r}: cannot be re-rendered as digits)")
                continue
            mention, reading = structural
        if mention.index in by_mention:
            if by_mention[mention.index].reading != reading:
                conflicting.add(mention.index)  # "half" as 0.5 here and as the 2 of "/ 2" there: no one reading
            by_mention[mention.index].literals.append((lit.id, form))
            continue
        plan = ParamPlan(name="", literals=[(lit.id, form)], mention=mention, original=mention.value)
        if mention.kind == "structural":
            plan.original, plan.reading, plan.structural = float(natural), reading, True
        by_mention[mention.index] = plan
        params.append(plan)
    for index in conflicting:
        plan = by_mention.pop(index)
        params.remove(plan)
        constants.append(f"{plan.mention.text!r} (read both as a number and as its reciprocal: kept constant)")
    for plan in [p for p in params if p.reading == "fraction"]:  # "3/5" as one slot, and its 5 read by another literal
        if any(o is not plan and plan.mention.start <= o.mention.start < plan.mention.end for o in params):
            params.remove(plan)
            constants.append(f"{plan.mention.text!r} (a fraction one of whose numbers another literal reads: kept constant)")
    return params, constants, unexplained


def _worded_fractions(question: str, program: PalProgram, restored: dict[int, Any],
                      assigned: dict[int, tuple[Mention, str]], fractions: dict[int, tuple[int, int]],
                      ) -> dict[int, tuple[Mention, tuple[int, int]]]:
    """Literal id -> (slot mention, (numerator id, denominator id)) for a fraction the question states in words
    ("Two-thirds of the remaining", "three-quarters of its flights") that the program writes as two literals
    (``* 2 / 3``). Either literal may have taken the mention (step 2 matches the 2 or the 3 of "two-thirds"); the
    other is not stated on its own. As one parameter the pair reads the whole fraction: the numerator literal
    becomes the fraction's value and the denominator 1 (form ``one``), so "one-third" or "3/4" can take its
    place; kept constant, every variant that changes the fraction was refused."""
    out: dict[int, tuple[Mention, tuple[int, int]]] = {}
    for lid, (mention, _form) in assigned.items():
        pair = fractions.get(lid)
        if pair is None or mention.parameterisable or mention.stated is not None and mention.stated[:2] != (
                mention.start, mention.end):
            continue
        other = pair[1] if lid == pair[0] else pair[0]
        if other in assigned and assigned[other][0].index != mention.index:
            continue
        num, den = (float(restored.get(i, program.literal(i).value)) for i in pair)
        if not den or not close_to(num / den, float(mention.value)) or num >= den:
            continue
        slot = _structural_slot(question, mention, float(mention.value))
        if slot is None or slot[1] is not None:
            continue
        out[pair[0]] = out[pair[1]] = (slot[0], pair)
    return out


#: Number words a variant may restate with another number ("twice" → "three times", "half" → "one third").
_MULTIPLIERS = {w for w, n in MULTIPLIERS.items() if n > 1}
_FRACTIONS = {"half", "third", "quarter", "fourth", "fifth", "sixth", "eighth", "tenth"}


def _structural_slot(question: str, mention: Mention, literal: float) -> tuple[Mention, str | None] | None:
    """The mention as a slot for a structural literal, and how it reads, or None if it stays a constant.

    "twice" → 2 and "half" → 0.5 read as the number they name ("twice" as a multiple: only "3 times" or
    "tripled" may take its place, not "3 years"); "half" → the 2 of ``x / 2`` reads as its reciprocal. A
    fraction's article joins the slot ("a third"), so "two thirds" can take its place."""
    low = mention.text.lower()
    word = low.split("-")[-1]
    if re.fullmatch(r"1/\d+", low):  # "1/5": the 0.2 it states, or the 5 a program divides by
        natural = float(mention.value)
        reading = None if close_to(literal, natural) else "reciprocal" if close_to(literal, 1 / natural) else ""
        return (mention, reading) if reading != "" else None
    if low not in _MULTIPLIERS and word not in _FRACTIONS and not (word.endswith("s") and word[:-1] in _FRACTIONS and "-" in low):
        return None
    start, text = mention.start, mention.text
    article = re.search(r"\b(an?|one)\s+$", question[max(0, start - 5):start], re.IGNORECASE)
    if article and word in _FRACTIONS and "-" not in low:
        start -= len(article.group(0))
        text = question[start:mention.end]
    try:
        natural = float(parse_quantity(text).value)
    except (ArcError, ValueError, ZeroDivisionError):
        return None
    if natural and close_to(literal, natural):
        reading = "multiple" if low in _MULTIPLIERS else None
    elif natural and close_to(literal, 1 / natural):
        reading = "reciprocal"
    else:
        return None
    return Mention(mention.index, start, mention.end, text, natural, mention.kind, mention.percent, mention.money,
                   mention.alternatives), reading


def _join_repeats(question: str, params: Sequence[ParamPlan], mentions: Sequence[Mention], taken: set[int]) -> None:
    """A parameter's number stated again for the same thing ("Katherine has 5 hanging baskets ... filling
    all 5 hanging baskets", "5 apple pies ... the five pies") becomes another mention of that parameter, so a
    variant restates both.

    The same number (:func:`_same_number`) and the same thing counted after it (:func:`_counts_the_same`); no
    literal reads the repeat.
    Left a constant, the repeat would refuse every variant that changes both (the guard finds the entry's 5
    missing). Joined, the
    slot binds only when the two agree, and the program, right on the original, reads the value once.
    Only called when every literal is explained: no constant may have been computed from the repeat."""
    joined = {m.index for p in params for m in (p.mentions or (p.mention,))}
    for p in params:
        if p.free or p.structural or p.reading or p.mention.kind not in ("digits", "word"):
            continue
        head = words_after(question, p.mention, 2)
        if not head or head[0] in STOP_WORDS:
            continue
        repeats = tuple(
            m for m in mentions
            if m.index not in joined and m.index not in taken and _same_number(m, p.mention)
            and _counts_the_same(head, words_after(question, m, 2))
        )
        if repeats:
            p.mentions = tuple(sorted((p.mention, *repeats), key=lambda m: m.start))
            joined.update(m.index for m in repeats)


def _same_number(m: Mention, n: Mention) -> bool:
    """Two mentions that state one number the same way, in digits or as a cardinal word ("5 apple pies ... the
    five pies"), each a whole number of its own (not "two" of "two thirds"), both or neither a price or a percent."""
    return (m.kind in ("digits", "word") and n.kind in ("digits", "word") and close_to(float(m.value), float(n.value))
            and m.percent == n.percent and m.money == n.money
            and all(x.stated is None or x.stated[:2] == (x.start, x.end) for x in (m, n)))


def _counts_the_same(first: Sequence[str], second: Sequence[str]) -> bool:
    """Whether the words after two mentions of one number name the same thing: the word right after one is among
    the two after the other ("20 such playlists ... the 20 playlists", "5 hanging baskets ... all 5 hanging
    baskets"), in either number ("500 pieces ... the 500 piece one"), and it is not a function word ("5 of ... 5 of")."""
    if not first or not second:
        return False
    first, second = [plural_stem(w) for w in first], [plural_stem(w) for w in second]  # "500 pieces ... the 500 piece one"
    return (first[0] not in STOP_WORDS and first[0] in second[:2]) or (
        second[0] not in STOP_WORDS and second[0] in first[:2])


def _free_params(question: str, unused: Sequence[Mention], program: PalProgram, restored: dict[int, Any],
                 taken: set[str], fixed: Sequence[str] = ()) -> list[ParamPlan]:
    """Slots for the question's numbers that no literal reads. Only when every literal is explained
    (stated in the question or a unit constant): an unexplained literal may have been computed from
    one of them ("harvests_per_year = 4" from "every 3 months"), which would then have to stay fixed.
    A number equal to any literal's value (in any form) is not free either: the program may use it
    under a name the matching missed ("carrots * 12" for "12-pound bags"). Repeats of one number
    counting the same thing ("30 seconds ... 30 seconds") share a slot. A slot named in ``fixed`` is not made:
    another author's program reads its number and answers otherwise with it (``independent_check.read_free_slots``)."""
    values = [float(restored.get(lit.id, lit.value)) for lit in program.literals]
    groups: dict[tuple[str, str], list[Mention]] = {}
    for mention in unused:
        if any(value_matches(v, mention, question) for v in values):
            continue
        if re.match(r"\s*/\s*\d", question[mention.end:mention.end + 3]) or re.search(r"\d\s*/\s*$", question[:mention.start]):
            continue  # half of a fraction ("2/5 occupied"): the other half may be read, and then this one is too
        if float(mention.value) == 1:
            continue  # "for one of the implants": a program multiplies by 1 without writing it
        if compound_word(question, mention):
            continue  # "a two-speed mower", "a six-inch sub": no slot for a number that names a kind
        head = next(iter(words_after(question, mention, 1)), "")
        groups.setdefault((mention.text.lower(), head), []).append(mention)  # one spelling: one slot
    out: list[ParamPlan] = []
    for group in groups.values():
        first = group[0]
        words = [w for w in words_after(question, first, 3) if w.isalpha() and w not in STOP_WORDS][:2]
        stem = sanitise("unused_" + "_".join(words)) if words else "unused_number"
        name, k = stem, 2
        while name in taken:
            name, k = f"{stem}_{k}", k + 1
        taken.add(name)
        if name in fixed:
            continue  # another author's program reads it and answers otherwise with it: it stays the template's text
        context = context_words(question, first, 4, 4)
        out.append(ParamPlan(
            name=name, literals=[], mention=first, original=first.value,
            description=f"{name.replace('_', ' ')}, not read by the reasoning ({context})",
            free=True, mentions=tuple(group),
        ))
    return out


def _name_params(params: list[ParamPlan], program: PalProgram, question: str, used: set[str]) -> None:
    """Names (the program's variable where the literal is assigned directly) and descriptions."""
    bound_before = _first_bindings(program.func)
    names: set[str] = set()
    for p in params:
        lit = program.literal(p.literal)
        candidate = None
        plain = all(form == "value" for _, form in p.literals)
        converted = any(":" in form for _, form in p.literals)
        if lit.direct and lit.top_level and not lit.in_loop and bound_before.get(lit.direct) == id(lit.node):
            # `eggs_per_day = 16`: the variable itself becomes the parameter; `discount = 0.2` for
            # "20%": the parameter is the percentage and the statement computes the variable from it
            candidate = lit.direct if plain else None if converted else f"{lit.direct}_percent"
        if candidate is None or candidate in names or (candidate != lit.direct and candidate in used):
            words = [w for w in words_after(question, p.mention, 4) if w.isalpha()]
            while words and words[0] in STOP_WORDS:
                words = words[1:]
            base = "_".join(words[:3])
            if p.mention.money:
                base = "price_" + base if base else "price"
            if p.mention.percent:
                base = "percent_" + base if base else "percent"
            if lit.direct and not converted:
                base = f"{lit.direct}_given"
            elif not base:
                base = f"{lit.target or 'value'}_given"
            candidate = sanitise(base)
            if candidate in RESERVED_NAMES or keyword.iskeyword(candidate):
                candidate += "_value"
            stem, k = candidate, 2
            while candidate in names or candidate in used:
                candidate = f"{stem}_{k}"
                k += 1
        names.add(candidate)
        p.name = candidate
    descriptions: set[str] = set()
    for p in params:
        words = p.name.replace("_", " ")
        context = context_words(question, p.mention, 4, 4)
        description = f"{words} ({context})"
        if p.mention.percent:
            description = f"{words}, in percent ({context})"
        k = 2
        while " ".join(description.lower().split()) in descriptions:
            description = f"{words} ({context}) [{k}]"
            k += 1
        descriptions.add(" ".join(description.lower().split()))
        p.description = description


def _first_bindings(func: ast.FunctionDef) -> dict[str, int]:
    """For each variable: id() of the literal node of its first binding when that binding is
    ``var = <literal>`` and ``var`` is not read before it; other variables are absent."""
    out: dict[str, int] = {}
    seen: set[str] = set()
    for stmt in func.body:
        if is_docstring(stmt):
            continue
        reads = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        stores = [n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            node = numeric_node(stmt.value)
            if node is not None and name not in seen:
                out[name] = id(node)
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Tuple) \
                and isinstance(stmt.value, ast.Tuple) and len(stmt.targets[0].elts) == len(stmt.value.elts):
            for te, ve in zip(stmt.targets[0].elts, stmt.value.elts):
                node = numeric_node(ve)
                if isinstance(te, ast.Name) and node is not None and te.id not in seen and te.id not in reads:
                    out[te.id] = id(node)
        seen |= reads | set(stores)
    return out
