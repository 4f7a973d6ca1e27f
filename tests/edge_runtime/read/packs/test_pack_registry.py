"""Reading packs by name: unknown names and settings refused with the known packs named; imported lazily."""

from __future__ import annotations

import subprocess
import sys

import pytest

from edge_runtime.read.packs import (
    DEFAULT_PACK,
    PACKS,
    ReadingPackError,
    known_packs,
    load_pack,
    pack_class,
    reading_field,
)
from edge_runtime.read.packs.base import ReadingPack


def test_every_registered_pack_is_a_reading_pack_under_its_own_name():
    for name in PACKS:
        cls = pack_class(name)
        assert issubclass(cls, ReadingPack) and cls.name == name
    assert DEFAULT_PACK == "en-word-problems/1" and load_pack(None).name == DEFAULT_PACK


def test_an_unknown_pack_is_refused_naming_the_known_ones():
    with pytest.raises(ReadingPackError) as info:
        load_pack({"pack": "fr-problemes/1"})
    message = str(info.value)
    assert "'fr-problemes/1'" in message and all(name in message for name in known_packs())
    with pytest.raises(ReadingPackError, match="names no pack"):
        load_pack({"settings": {}})
    with pytest.raises(ReadingPackError, match="unknown key"):
        load_pack({"pack": "plain/1", "rules": []})
    with pytest.raises(ReadingPackError, match="must be a map"):
        load_pack("plain/1")  # type: ignore[arg-type]


@pytest.mark.parametrize("settings, fragment", [
    ({"target_overlap": 1.5}, "between 0 and 1"),
    ({"target_overlap": "high"}, "must be float"),
    ({"check_added": 1}, "must be bool"),
    ({"model_path_reversal_words": True}, "must be int or null"),
    ({"model_path_reversal_words": 0}, "at least 1"),
    ({"target_similarity": 2.0}, "between -1 and 1"),
    ({"strictness": 3}, "unknown setting"),
])
def test_settings_are_validated(settings, fragment):
    with pytest.raises(ReadingPackError, match=fragment):
        load_pack({"pack": "en-word-problems/1", "settings": settings})


def test_valid_settings_reach_the_guard():
    pack = load_pack({"pack": "en-word-problems/1", "settings": {"target_overlap": 1, "model_path_reversal_words": None,
                                                                   "check_context": True}})
    assert pack.guard_config.target_overlap == 1.0 and isinstance(pack.guard_config.target_overlap, float)
    assert pack.guard_config.model_path_reversal_words is None and pack.guard_config.check_context
    assert pack.make_guard().config == pack.guard_config
    assert reading_field("en-word-problems/1", {"target_overlap": 1}) == {
        "pack": "en-word-problems/1", "settings": {"target_overlap": 1.0}}


def test_plain_takes_no_settings():
    with pytest.raises(ReadingPackError, match="it takes no settings"):
        load_pack({"pack": "plain/1", "settings": {"target_overlap": 0.5}})
    assert load_pack({"pack": "plain/1", "settings": None}).settings == {}


def test_the_registry_is_lazy():
    """Importing the runtime (server, pipeline, extractor, bundle reader) imports no pack (the base class is not
    one); naming one imports it alone."""
    code = (
        "import sys, edge_runtime, edge_runtime.serving.runtime, edge_runtime.pipeline, edge_runtime.read.extractor, "
        "edge_runtime.bundles.bundle\n"
        "print(sorted(m for m in sys.modules if m.startswith('edge_runtime.read.packs.') and m != "
        "'edge_runtime.read.packs.base'))\n"
        "from edge_runtime.read.packs import load_pack\n"
        "load_pack({'pack': 'plain/1'})\n"
        "print(sorted(m for m in sys.modules if m.startswith('edge_runtime.read.packs.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0] == "[]"
    assert out[1] == "['edge_runtime.read.packs.base', 'edge_runtime.read.packs.plain']"  # not en-word-problems


def test_packs_never_import_the_pipeline():
    """A pack is rules the stages use; the answerer and the server use packs, never the reverse."""
    import ast
    from pathlib import Path

    from edge_runtime.read import packs

    for path in Path(packs.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                assert not name.startswith(("edge_runtime.pipeline", "edge_runtime.serving", "builder")), (path, name)
