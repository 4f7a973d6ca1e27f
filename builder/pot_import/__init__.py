"""Program-of-Thought transcripts → verified cache entries, offline (MiniCache's construction, no LLM).

A transcript is a question plus a Python program that answers it (``def solution():`` whose
docstring is the question, whose literals are the question's numbers, and which returns the
answer). For each transcript this module

1. joins it to a reference question with a gold answer (``no_match_in_gsm8k``);
2. parses and safety-checks the program (``unparsable_program``, ``unsafe_program``); a GSM-Hard
   program's replaced literal is mapped back to the original question's number by diffing the
   GSM-Hard question against the original;
3. runs the program on the original numbers and compares with the gold answer
   (``wrong_on_original``, ``runtime_error``);
4. decides which literals are parameters: a literal whose value (or a number-word / percent form of
   it) is stated in the question is a parameter, mapped to exactly one mention of the question; unit
   constants (60 minutes, 100 percent, 7 days...) that the question does not state stay constants
   (``no_parameters`` when nothing is left). A number word the literal came from ("half" for the 2
   of ``x / 2``, "twice") becomes a parameter read as its number or its reciprocal, so "one third"
   can take its place; so does a unit fraction ("1/5 occupied": ``0.2``, or the 5 of ``/ 5``). A
   constant the program converted from a stated duration or measure ("after 2 weeks" as
   ``days = 14``, "every 3 months" as ``harvests = 4`` in a year) becomes that number with the
   conversion written out (``weeks * 7``, ``12 / months``), when the other unit is in the question
   or the variable's name. A number written into a measure ("12-pound bags") is stated even
   where its value looks like a unit constant. A parameter the program may have precomputed a
   constant from (one or two steps, ``0.3`` from "40% ... the rest equally divided") or that a
   unit-constant literal may repeat stays constant, unless the repeat is unambiguous (the question
   states the value once and the literal's variable shares a word with it). A number of the
   question no literal reads becomes a free slot (the reasoning ignores it, so a variant may
   change it) when every literal is accounted for, never half of a fraction nor a one (a program
   multiplies by 1 without writing it);
5. writes one entry source in the project's format: a root ``@semantic_function`` whose body is the
   program with ``load()`` bindings for the parameters, a ``narrate()`` after every step and
   ``return {"answer": ...}``, plus an ``entry_point`` whose template is the original question with
   each parameter's mention replaced by its slot;
6. validates the entry with exactly the device's code: registers and compiles it, matches the
   original question through the template fast path (``template_mismatch``), runs the compiled entry
   and compares with gold (``wrong_on_original``), then N round trips — other values rendered into
   the template, extracted by the fast path, run compiled, compared with the original program run
   on the same values (``round_trip_failed`` below pass rate alpha).

Each transcript is a MiniCache group of one (:mod:`builder.pot_groups`); a failed round trip is
retried with the offending parameters kept constant.

Entries' ``question``: ``Registry.check_entry`` requires ``template.format(originals)`` to equal the
question (whitespace- and case-normalised), and values render as digits. So where a parameter is
written differently in the original question ("three", "80,000", "2.50"), the entry's ``question``
is the original with those mentions written as digits; the verbatim original is kept in the module
docstring and in ``index.json``, and the template fast path still matches the verbatim original.

Modules, in the order a transcript passes them:

- ``transcripts`` — step 1, and the rejection reasons every step may give;
- ``program`` — steps 2-3: the program parsed, checked and re-runnable with other literals;
- ``matching``, ``planner``, ``plan`` — step 4: how a literal matches a mention, the mapping, the plan as data;
- ``render`` — step 5: the entry source (parameters through :mod:`builder.param_source`);
- ``verify`` — step 6: validation with the device's code, round trips, the independent check;
- ``batch`` — a whole file: resumable, confined, audited, with a report (``arc-build import-pot``).
"""
