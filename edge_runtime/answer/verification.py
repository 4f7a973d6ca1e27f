"""Whether an independent solution confirmed an entry's reasoning before it was packed.

The builder attests it in the signed manifest (``entries[i].verification``); the device reports it
in every answer, so an application can treat an answer from an unverified entry with more care
(ask upstream, show it as a draft) instead of trusting every hit alike.
"""

from __future__ import annotations

import enum
from typing import Any


class VerificationStatus(enum.Enum):
    #: On K rendered variants the compiled entry agreed with an independent solution of each.
    VERIFIED = "verified"
    #: No independent solution was available, or none could check every number the entry varies.
    UNVERIFIED = "unverified"

    @classmethod
    def from_record(cls, record: Any) -> VerificationStatus:
        """The status a manifest entry records; anything else (absent, malformed) is unverified."""
        status = record.get("status") if isinstance(record, dict) else None
        return cls.VERIFIED if status == cls.VERIFIED.value else cls.UNVERIFIED
