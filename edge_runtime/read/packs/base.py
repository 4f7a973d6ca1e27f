"""What a reading pack is: every rule IS2 reads a question with that depends on its language or its domain.

The stages keep the structure (match the template, align by tokens, verify with the model, check every
number against the entry); a pack supplies what is English or word-problem specific: how a span becomes a
number, which numbers a text states, the guard and its settings, the phrases by which a question sets a
statement aside, the extraction prompt and the draft of the model's answer. One class per pack, one file
each (edge_runtime/read/packs/); a bundle names its pack in its signed manifest.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from edge_runtime.read.packs import ReadingPackError
from edge_runtime.read.template_align import AlignWords

if TYPE_CHECKING:
    from edge_runtime.entries.metadata import EntryPoint, Param
    from edge_runtime.read.disclaimers import SetAside
    from edge_runtime.read.mentions import Mention
    from edge_runtime.read.values import Quantity

#: (entry, question, values, IS2 path) -> None (may be served) or why the reasoning changed.
Guard = Callable[["EntryPoint", str, dict[str, Any], str], "str | None"]


@dataclass(frozen=True)
class Setting:
    """One setting a pack takes: the types its value may have (None among them: may be null) and a range check."""

    types: tuple[type | None, ...]
    check: Callable[[Any], str | None] | None = None  # the value -> None, or what is wrong with it
    doc: str = ""

    def validate(self, name: str, value: Any, pack: str) -> Any:
        if value is None and None in self.types:
            return None
        kinds = tuple(t for t in self.types if t is not None)
        # a bool is an int to isinstance; a whole number is a float's value in msgpack/JSON
        if isinstance(value, bool) != (bool in kinds) or not isinstance(value, kinds + ((int,) if float in kinds else ())):
            wanted = " or ".join("null" if t is None else t.__name__ for t in self.types)
            raise ReadingPackError(f"reading pack {pack}: setting {name!r} must be {wanted}, not {value!r}")
        problem = self.check(value) if self.check is not None else None
        if problem:
            raise ReadingPackError(f"reading pack {pack}: setting {name!r} = {value!r}: {problem}")
        return float(value) if float in kinds and not isinstance(value, bool) else value


class ReadingPack(ABC):
    """The language- and domain-specific reading rules of a bundle (see the module docstring)."""

    #: the registered name, with its version ("plain/1")
    name: ClassVar[str]
    #: setting name -> what it may be; a setting not listed is refused
    SETTINGS: ClassVar[Mapping[str, Setting]] = {}
    #: the extraction prompt's system text (the model path)
    system_prompt: ClassVar[str] = (
        "You copy parameter values out of a question. Answer with JSON only. "
        "Copy every value exactly as it is written in the question."
    )
    #: whether a question reworded beyond the template's alignment is read by the target model at all: a pack
    #: without rules to check a reworded question's final question (what it asks) must not serve it
    reads_reworded: ClassVar[bool] = True
    #: the words the aligned path compares a question by (template_align.AlignWords); none by default: tokens
    #: are compared by case only, and only digits and "%" state a quantity
    align_words: ClassVar[AlignWords] = AlignWords()

    def __init__(self, settings: Mapping[str, Any] | None = None) -> None:
        self.settings: dict[str, Any] = self.validate_settings(settings or {})

    @classmethod
    def validate_settings(cls, settings: Mapping[str, Any]) -> dict[str, Any]:
        """The settings, checked: a map of known names to values of their type (ReadingPackError otherwise)."""
        if not isinstance(settings, Mapping):
            raise ReadingPackError(f"reading pack {cls.name}: settings must be a map, not {type(settings).__name__}")
        unknown = sorted(str(k) for k in settings if k not in cls.SETTINGS)
        if unknown:
            takes = ", ".join(sorted(cls.SETTINGS)) or "no settings"
            raise ReadingPackError(f"reading pack {cls.name}: unknown setting(s) {unknown}; it takes {takes}")
        return {k: cls.SETTINGS[k].validate(k, v, cls.name) for k, v in settings.items()}

    # ---- numbers -----------------------------------------------------------------------------
    @abstractmethod
    def read_quantity(self, text: str) -> Quantity:
        """One number and its optional unit from a span (a slot's text, a span the model copied);
        ConversionError unless it holds exactly one number this pack reads."""

    @abstractmethod
    def scan(self, text: str) -> list[Mention]:
        """Every number ``text`` states that this pack reads, in order (what the guard accounts for)."""

    def in_template_units(self, template: str, question: str, values: Mapping[str, Any]) -> dict[str, Any]:
        """Values the question states in another unit than the template writes their slot in, converted to the
        template's (name -> value; none by default): the entry's reasoning computes in the template's units."""
        return {}

    # ---- the guard -----------------------------------------------------------------------------
    @abstractmethod
    def make_guard(self, embedder: Any = None) -> Guard:
        """A new guard for one bundle (it caches per template, so one per pipeline); ``embedder`` the bundle's."""

    # ---- set-aside phrases -----------------------------------------------------------------------
    def set_aside(self, question: str) -> SetAside | None:
        """The question without the statements it calls irrelevant itself, or None (no phrase rules)."""
        return None

    def set_aside_counts(self, aside: SetAside, template: str) -> str | None:
        """A removed number the template counts (the reading is then discarded), else None."""
        return None

    # ---- the model path --------------------------------------------------------------------------
    def draft(self, template: str, params: tuple[Param, ...], question: str) -> dict[str, str | None] | None:
        """The draft of every parameter's span for the model to verify in one pass, or None (no draft); a
        parameter drafted None is one the model reads alone (free text), the drafted ones around it still verified."""
        return None

    def manifest(self) -> dict[str, Any]:
        """The manifest's ``reading`` value for this pack."""
        return {"pack": self.name, "settings": dict(self.settings)}
