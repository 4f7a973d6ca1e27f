"""IS2 fast path: a question that is the entry's template with new slot values binds with no model.

Agents repeat one instruction template with new payloads; matching the template's
literal text exactly and reading the slots is sub-millisecond and cannot hallucinate.
"""

from __future__ import annotations

import re
import string
from functools import lru_cache

_SPACE = re.compile(r"\s+")


@lru_cache(maxsize=1024)
def template_pattern(template: str) -> re.Pattern[str]:
    """A regex that matches the template's literal text exactly (whitespace- and case-insensitively)."""
    parts: list[str] = []
    seen: set[str] = set()
    for literal, field, _, _ in string.Formatter().parse(template):
        if literal:
            parts.append(r"\s+".join(re.escape(word) for word in literal.split(" ")) if literal.strip() else r"\s*")
        if field is not None:
            if field in seen:
                parts.append(f"(?P={field})")
            else:
                parts.append(f"(?P<{field}>.+?)")
                seen.add(field)
    return re.compile("".join(parts), re.IGNORECASE | re.DOTALL)


def match_template(template: str, question: str) -> dict[str, str] | None:
    """Slot texts if ``question`` equals ``template`` apart from the slot values, else None."""
    text = _SPACE.sub(" ", question.strip())
    found = template_pattern(_SPACE.sub(" ", template.strip())).fullmatch(text)
    if found is None:
        return None
    slots = {name: value.strip() for name, value in found.groupdict().items()}
    return slots if all(slots.values()) else None
