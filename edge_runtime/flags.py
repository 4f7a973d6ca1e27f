"""Options declared once as dataclass fields, and command-line flags generated from them.

Why: ``arc-edge serve``'s flags used to be declared in cli.py with their defaults, and the same defaults again in
the runtime's options; now each option is declared once, where it is used, with its default, its help and (if
the command line offers it) its flag. ``add_flags`` adds every flag of an options tree to a parser and
``from_flags`` builds the tree back from the parsed flags (vLLM's ``EngineArgs``/``cli_args.py`` do the same for
its server). The tree itself: edge_runtime/options.py.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable
from dataclasses import MISSING
from typing import Any


def option(default: Any = MISSING, *, help: str, flag: str | None = None, default_factory: Any = MISSING,
           type: Callable[[str], Any] | None = None, action: str | None = None, metavar: str | None = None,
           choices: tuple[str, ...] | None = None, flag_default: Any = MISSING,
           convert: Callable[[Any], Any] | None = None) -> Any:
    """A dataclass field that documents itself and, with ``flag``, is a command-line option.

    ``type`` defaults to the type of ``default``; a bool defaults to a store-true flag when off and to a
    ``--x/--no-x`` pair when on; ``action="append"`` repeats. ``flag_default`` is the flag's own default when it
    differs from the field's (a switch for an optional value), and ``convert`` turns the parsed flag into the
    field's value."""
    meta = {"help": help, "flag": flag, "type": type, "action": action, "metavar": metavar, "choices": choices,
            "flag_default": flag_default, "convert": convert}
    return dataclasses.field(default=default, default_factory=default_factory, metadata=meta)


def subtree(cls: type, *, optional_on: str | None = None, help: str = "") -> Any:
    """A field holding another options dataclass, whose flags join the parent's. With ``optional_on`` the field
    is None unless that flag of the subtree is given (the upstream fallback: off unless a model is named)."""
    default: dict[str, Any] = {"default": None} if optional_on else {"default_factory": cls}
    return dataclasses.field(**default, metadata={"tree": cls, "optional_on": optional_on, "help": help})


def _fields(cls: type) -> list[dataclasses.Field]:
    return list(dataclasses.fields(cls))


def _default(f: dataclasses.Field) -> Any:
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    return None


def _dest(f: dataclasses.Field) -> str:
    return f.metadata["flag"].lstrip("-").replace("-", "_")


def add_flags(parser: argparse.ArgumentParser, cls: type) -> None:
    """Add the flag of every option in ``cls``'s tree to ``parser``."""
    for f in _fields(cls):
        if "tree" in f.metadata:
            add_flags(parser, f.metadata["tree"])
            continue
        meta = f.metadata
        if not meta.get("flag"):
            continue
        default = meta["flag_default"] if meta["flag_default"] is not MISSING else _default(f)
        kwargs: dict[str, Any] = {"default": default, "help": meta["help"] or None, "dest": _dest(f)}
        if meta["action"] == "append":
            kwargs.update(action="append", type=meta["type"] or str)
        elif isinstance(default, bool):
            kwargs["action"] = argparse.BooleanOptionalAction if default else "store_true"
        else:
            kwargs["type"] = meta["type"] or (type(default) if default is not None else str)
        if meta["metavar"]:
            kwargs["metavar"] = meta["metavar"]
        if meta["choices"]:
            kwargs["choices"] = meta["choices"]
        parser.add_argument(meta["flag"], **kwargs)


def from_flags(cls: type, args: argparse.Namespace, **given: Any) -> Any:
    """The ``cls`` tree the parsed ``args`` describe; options without a flag keep their defaults, ``given``
    sets fields of the root that the command line does not carry."""
    values: dict[str, Any] = {}
    for f in _fields(cls):
        if f.name in given:
            values[f.name] = given[f.name]
        elif "tree" in f.metadata:
            sub = f.metadata["tree"]
            on = f.metadata["optional_on"]
            if on is None or getattr(args, _dest(next(g for g in _fields(sub) if g.name == on)), None) is not None:
                values[f.name] = from_flags(sub, args)
        elif f.metadata.get("flag"):
            value = getattr(args, _dest(f))
            convert = f.metadata["convert"]
            values[f.name] = convert(value) if convert else value
    return cls(**values)


__all__ = ["add_flags", "from_flags", "option", "subtree"]
