"""Registering and compiling untrusted entry sources on the build server, in a confined process.

Entry sources come from an LLM or a person; registering one imports it (its module level and
default arguments run) and checking an entry runs its root function. None of that may happen in
the builder's own process, which opens the private signing key: a validator bypass there would
own every device. So the builder reads the source files itself, hands their text to a fresh
interpreter started with a scrubbed environment (:func:`builder.confined_launch.launch`: none of
the parent's memory or environment, no key ever loaded), and that child loads the embedder, then
enters the device's own confinement (:func:`edge_runtime.execute.confinement.enter_sandbox`: empty working
directory, cleared environment, no new files, no processes, an address-space cap, ``nobody``
instead of root, no network) before it registers a single source. What comes back is plain data
only (entry dicts and compiled module text), read with the worker pool's restricted unpickler; the
parent rebuilds the entries with the same parser a device uses for a bundle manifest and validates
every compiled module again before it is signed. Signing stays in the parent, after the child has
exited.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from builder.confined_launch import launch, prepare
from edge_runtime.entries.compiler import CompiledEntry
from edge_runtime.entries.metadata import entry_from_dict, entry_to_dict
from edge_runtime.entries.validator import validate_source
from edge_runtime.errors import ArcError, DefinitionError

#: Address space of the confined compile: the embedder's onnxruntime session plus the entries.
MEMORY_LIMIT_BYTES = 3 << 30
TIME_LIMIT_S = 600.0
MAX_REPLY_BYTES = 256 << 20


class ConfinedBuildError(ArcError):
    """The confined compile failed: an entry was refused, or the child broke a limit or the protocol."""


@dataclass(frozen=True)
class ConfinedCompile:
    """What the confined child found: compiled entries, near-duplicate pairs, and the walls it ran behind."""

    compiled: list[CompiledEntry]
    near_duplicates: list[tuple[str, str, float]]
    walls: dict


def read_sources(directory: Path) -> dict[str, str]:
    """The ``*.py`` files the registry would register (sorted, none starting with ``_``), read by the parent."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ConfinedBuildError(f"{directory}: not a directory of entry sources")
    sources = {}
    for path in sorted(directory.glob("*.py")):
        if not path.name.startswith("_"):
            try:
                sources[path.name] = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise ConfinedBuildError(f"{path}: cannot read the entry source: {exc}") from None
    return sources


def compile_confined(
    sources: dict[str, str], *, memory_limit_bytes: int = MEMORY_LIMIT_BYTES, time_limit_s: float = TIME_LIMIT_S
) -> ConfinedCompile:
    """Register, check and compile ``sources`` (file name -> text) in a confined child; raise on any failure."""
    from edge_runtime.execute.wire import _load_reply

    child = launch("compile", memory_limit_bytes)
    try:
        child.conn.send(dict(sources))
        if not child.conn.poll(time_limit_s):
            raise ConfinedBuildError(f"compiling the entries took longer than {time_limit_s:g} s; stopped")
        try:
            data = child.conn.recv_bytes(MAX_REPLY_BYTES)
        except (EOFError, OSError):
            raise ConfinedBuildError(
                f"the confined compile died (exit code {child.exit_code()}): an entry exhausted its limits"
            ) from None
        try:
            reply = _load_reply(data)
        except Exception as exc:  # noqa: BLE001 - a subverted child may send anything
            raise ConfinedBuildError(f"the confined compile sent a reply that is not plain data: {exc}") from None
        return _accept(reply)
    finally:
        child.close()


def _accept(reply: tuple) -> ConfinedCompile:
    """Rebuild the child's plain reply as compiled entries, checking every piece as a device would."""
    if not (isinstance(reply, tuple) and reply and reply[0] in ("ok", "error")):
        raise ConfinedBuildError("the confined compile broke the reply protocol")
    if reply[0] == "error":
        message = reply[1] if len(reply) > 1 and isinstance(reply[1], str) else "unknown error"
        raise ConfinedBuildError(message[:4000])
    try:
        _, items, duplicates, walls = reply
        compiled = []
        for entry_dict, module, source, functions in items:
            entry = dataclasses.replace(entry_from_dict(entry_dict), module=str(module))
            validate_source(source, f"<compiled {entry.id}>")
            compiled.append(CompiledEntry(entry, source, tuple(str(f) for f in functions)))
        near = [(str(a), str(b), float(score)) for a, b, score in duplicates]
    except ArcError:
        raise
    except Exception as exc:  # noqa: BLE001 - malformed plain data
        raise ConfinedBuildError(f"the confined compile sent a malformed reply: {type(exc).__name__}: {exc}") from None
    return ConfinedCompile(compiled, near, dict(walls) if isinstance(walls, dict) else {})


def serve_compile(conn: Connection, workdir: str, memory_limit_bytes: int) -> None:
    """The confined side (role ``compile`` of :mod:`builder.confined_launch`): load what it needs,
    give up everything else, then touch the sources."""
    from edge_runtime.execute.wire import _dumps_for_parent

    try:
        sources = conn.recv()
        from edge_runtime.entries.compiler import compile_entry
        from edge_runtime.entries.registry import Registry

        embedder, walls = prepare(workdir, memory_limit_bytes)
        registry = Registry(embedder)
        added: list[str] = []
        for name in sorted(sources):
            if not isinstance(name, str) or not isinstance(sources[name], str):
                raise DefinitionError("entry sources must be text")
            added += registry.add_source(sources[name], name)
        for entry_id in added:
            if entry_id in registry.entries:
                registry.check_entry(entry_id)
        items = []
        for entry_id in sorted(registry.entries):
            item = compile_entry(registry, entry_id)
            items.append((entry_to_dict(item.entry), item.entry.module, item.source, list(item.functions)))
        duplicates = [(a, b, float(score)) for a, b, score in registry.near_duplicates]
        reply: tuple = ("ok", items, duplicates, walls)
    except ArcError as exc:
        reply = ("error", str(exc))
    except Exception as exc:  # noqa: BLE001 - reported to the parent as the build's error
        reply = ("error", f"{type(exc).__name__}: {exc}")
    try:
        conn.send_bytes(_dumps_for_parent(reply))
    except Exception as exc:  # noqa: BLE001 - e.g. a value the restricted pickler refuses
        conn.send_bytes(_dumps_for_parent(("error", f"the compiled entries cannot leave the confined compile: {exc}")))
