"""IS2 fast path: a question that is the entry's template with new slot values binds with no model.

Agents repeat one instruction template with new payloads; matching the template's
literal text exactly and reading the slots is sub-millisecond and cannot hallucinate.
"""

from __future__ import annotations

import re
import string
from functools import lru_cache

_SPACE = re.compile(r"\s+")
#: Punctuation that ends a clause inside a slot's text ("four. The sky was clear", "four, but none are counted"):
#: a value is never written across it ("1,000" and "2.5" have no space after theirs).
_CLAUSE_END = re.compile(r"[.,;:]\s|[?!]")


@lru_cache(maxsize=1024)
def template_pattern(template: str, choices: tuple[tuple[str, tuple[str, ...]], ...] = ()) -> re.Pattern[str]:
    """A regex that matches the template's literal text exactly (whitespace- and case-insensitively).

    A slot with ``choices`` matches only one of them, so adjacent slots ("{volume} {volume_unit}")
    split where a person would split them."""
    allowed = dict(choices)
    parts: list[str] = []
    seen: set[str] = set()
    for literal, field, _, _ in string.Formatter().parse(template):
        if literal:
            parts.append(r"\s+".join(re.escape(word) for word in literal.split(" ")) if literal.strip() else r"\s+")
        if field is not None:
            if field in seen:
                parts.append(f"(?P={field})")
            else:
                options = allowed.get(field)
                body = "|".join(re.escape(o) for o in sorted(options, key=len, reverse=True)) if options else ".+?"
                parts.append(f"(?P<{field}>{body})")
                seen.add(field)
    return re.compile("".join(parts), re.IGNORECASE | re.DOTALL)


def match_template(
    template: str, question: str, choices: dict[str, tuple[str, ...]] | None = None
) -> dict[str, str] | None:
    """Slot texts if ``question`` equals ``template`` apart from the slot values, else None."""
    text = _SPACE.sub(" ", question.strip())
    key = tuple(sorted((name, tuple(str(c) for c in opts)) for name, opts in (choices or {}).items()))
    found = template_pattern(_SPACE.sub(" ", template.strip()), key).fullmatch(text)
    if found is None:
        return None
    slots = {name: value.strip() for name, value in found.groupdict().items()}
    if not all(slots.values()) or any(_CLAUSE_END.search(v) for v in slots.values()):
        return None  # a slot stretched over a clause the question inserted: the aligned path judges it
    return slots
