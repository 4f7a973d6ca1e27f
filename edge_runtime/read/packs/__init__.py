"""Reading packs by name, imported on first use: a bundle names the one its questions are read with.

The table maps a pack's name to ``module:Class``; nothing here imports a pack until a bundle (or a
caller) asks for it by name, so a device that serves ``plain/1`` never loads the English word-problem
rules, and adding a pack is one file and one line here (docs/reading-packs.md).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from edge_runtime.read.packs.base import ReadingPack

#: name -> "module:Class"; the name carries the pack's version, so a pack whose rules change gets a new name.
PACKS: dict[str, str] = {
    "en-word-problems/1": "edge_runtime.read.packs.en_word_problems:EnWordProblems",
    "plain/1": "edge_runtime.read.packs.plain:Plain",
}
#: What a bundle whose manifest names no pack is read with: the rules every bundle was read with before packs.
DEFAULT_PACK = "en-word-problems/1"


class ReadingPackError(ValueError):
    """A bundle's ``reading`` names an unknown pack or settings the pack does not take."""


def known_packs() -> tuple[str, ...]:
    return tuple(sorted(PACKS))


def pack_class(name: str) -> type[ReadingPack]:
    """The class registered under ``name``, importing its module now (ReadingPackError if unknown)."""
    if not isinstance(name, str) or name not in PACKS:
        raise ReadingPackError(f"unknown reading pack {name!r}; this runtime knows {', '.join(known_packs())}")
    module, _, cls = PACKS[name].partition(":")
    return getattr(importlib.import_module(module), cls)


def load_pack(reading: Mapping[str, Any] | None = None) -> ReadingPack:
    """The pack a manifest's ``reading`` field names, with its settings checked (None: the default pack)."""
    if reading is None:
        return pack_class(DEFAULT_PACK)({})
    if not isinstance(reading, Mapping):
        raise ReadingPackError(f"'reading' must be a map {{pack, settings}}, not {type(reading).__name__}")
    extra = set(reading) - {"pack", "settings"}
    if extra:
        raise ReadingPackError(f"'reading' has unknown key(s) {sorted(map(str, extra))}; it takes 'pack' and 'settings'")
    if "pack" not in reading:
        raise ReadingPackError(f"'reading' names no pack; known packs: {', '.join(known_packs())}")
    settings = reading.get("settings")
    if settings is None:
        settings = {}
    return pack_class(reading["pack"])(settings)


def reading_field(name: str, settings: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The manifest's ``reading`` value for pack ``name``, checked now (the builder refuses what a device would)."""
    pack = load_pack({"pack": name, "settings": dict(settings or {})})
    return {"pack": pack.name, "settings": dict(pack.settings)}


__all__ = ["DEFAULT_PACK", "PACKS", "ReadingPackError", "known_packs", "load_pack", "pack_class", "reading_field"]
