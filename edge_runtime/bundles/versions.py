"""Bundle versions that can be compared, so a device can refuse a downgrade.

A version is either a decimal integer (``"7"``) or semantic versioning (``"1.4.2"``,
``"2.0.0-rc.1"``; build metadata after ``+`` is ignored, as semver says). An integer N
ranks as ``N.0.0``. Anything else is refused: a free-form string cannot be ordered, and
what cannot be ordered cannot be protected against rollback.
"""

from __future__ import annotations

import re
from functools import total_ordering

from edge_runtime.errors import BundleVersionError

_SEMVER = re.compile(
    r"^(0|[1-9]\d*)(?:\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?)?(?:\+[0-9A-Za-z.-]+)?$"
)


@total_ordering
class BundleVersion:
    """A parsed version; ordered by semver precedence (a pre-release ranks below its release)."""

    def __init__(self, text: str) -> None:
        match = _SEMVER.match(text or "")
        if match is None or len(text) > 64:
            raise BundleVersionError(
                f"bundle version {text!r} is neither an integer nor semantic versioning (MAJOR.MINOR.PATCH[-pre])"
            )
        major, minor, patch, pre = match.groups()
        self.text = text
        self.release = (int(major), int(minor or 0), int(patch or 0))
        self.pre = tuple(pre.split(".")) if pre else ()

    def _key(self) -> tuple:
        # A release (no pre-release part) outranks any of its pre-releases; numeric identifiers rank below alphanumeric.
        pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.pre)
        return (self.release, 0 if self.pre else 1, pre)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BundleVersion) and self._key() == other._key()

    def __lt__(self, other: BundleVersion) -> bool:
        return self._key() < other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"BundleVersion({self.text!r})"
