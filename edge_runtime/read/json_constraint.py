"""The extractor's output grammar, as a token-level state machine.

The answer is always ``{"p1": "v1", "p2": "v2", ...}`` with exactly the entry's
parameter names in order. Structure tokens are forced (the model is never asked); a
value is either a span copied verbatim from the question or one of a parameter's
choices. A small hand-written machine is used instead of a grammar library because
the grammar is this narrow: a copied value starts and ends where a word or number of the
question does (never "5" out of "0.5"); the allowed set is computed over a few dozen candidate
tokens, never the 49k vocabulary, and it runs without torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from edge_runtime.errors import ExtractionError

MAX_VALUE_TOKENS = 24


class Tokens(Protocol):
    def encode(self, text: str) -> list[int]: ...

    def token_text(self, token_id: int) -> str: ...


@dataclass
class SlotSpec:
    """One parameter's value: copied from the question, or one of ``choices``."""

    name: str
    choices: tuple[str, ...] | None = None


@dataclass
class JsonSlotsConstraint:
    """Forced structure plus constrained values; call ``forced()``/``allowed()``/``advance()`` in turn."""

    tokens: Tokens
    slots: Sequence[SlotSpec]
    question: str
    _slot: int = 0
    _forced: list[int] = field(default_factory=list)
    _value_ids: list[int] = field(default_factory=list)
    _value_text: str = ""
    done: bool = False

    def __post_init__(self) -> None:
        self.quote = self._single_token('"')
        self._candidates = self._copy_candidates()
        self._choice_ids = {
            i: [self.tokens.encode(str(c)) for c in spec.choices] for i, spec in enumerate(self.slots) if spec.choices
        }
        self.values: list[str] = []
        if not self.slots:
            raise ExtractionError("extraction_failed", "the entry declares no parameters")
        self._forced = self.tokens.encode('{"' + self.slots[0].name + '": "')
        self._closers = [self._closer_tokens(self._closing_text(i)) for i in range(len(self.slots))]

    def _closing_text(self, slot: int) -> str:
        """The structure after a value: the closing quote and the next key, or the end of the object."""
        return '"}' if slot + 1 == len(self.slots) else '", "' + self.slots[slot + 1].name + '": "'

    def _closer_tokens(self, text: str) -> dict[int, str]:
        """Tokens that end a value: any that spell a prefix of the closing text (the tokenizer merges '",')."""
        found = {self.quote: '"'}
        for k in range(1, len(text) + 1):
            for token in self.tokens.encode(text[:k])[:1]:
                piece = self.tokens.token_text(token)
                if piece and text.startswith(piece):
                    found[token] = piece
        return found

    def _single_token(self, text: str) -> int:
        ids = self.tokens.encode(text)
        if len(ids) != 1:
            raise ExtractionError("extraction_failed", f"tokenizer splits {text!r} into {len(ids)} tokens")
        return ids[0]

    def _copy_candidates(self) -> list[int]:
        """Tokens that can occur inside a span of the question: its own tokens and its words' tokens."""
        found: set[int] = set(self.tokens.encode(self.question))
        for word in self.question.split():
            for piece in {word, word.strip(".,;:!?()\"'")}:
                if piece:
                    found.update(self.tokens.encode(piece))
        found.discard(self.quote)
        return sorted(found)

    def forced(self) -> list[int]:
        """Structure tokens due now; the caller feeds them without asking the model."""
        out, self._forced = self._forced, []
        return out

    def allowed(self) -> list[int]:
        """Token ids the model may choose next (a decision point)."""
        if self.done or self._forced:
            raise RuntimeError("allowed() called while structure tokens are pending or after the end")
        spec_choices = self._choice_ids.get(self._slot)
        if spec_choices is not None:
            n = len(self._value_ids)
            nexts = {seq[n] for seq in spec_choices if seq[:n] == self._value_ids and len(seq) > n}
            if any(seq == self._value_ids for seq in spec_choices):
                nexts.update(self._closers[self._slot])
            return sorted(nexts)
        closers = list(self._closers[self._slot])
        if len(self._value_ids) >= MAX_VALUE_TOKENS:
            return closers
        text = self._value_text
        can_close = bool(text.strip()) and any(self._ends_whole(i, text) for i in self._starts(text))
        allowed = [
            t for t in self._candidates
            if t not in self._closers[self._slot] and self._starts(text + self.tokens.token_text(t))
        ]
        if can_close or (text.strip() and not allowed):  # no whole word to reach: close, validation judges it
            allowed += closers
        return allowed

    def _starts(self, value: str) -> list[int]:
        """Offsets where ``value`` occurs in the question starting a word or number, not inside one: "5" of
        "0.5" or "1" of "120" is no value a question states (measured: most of the small model's misreadings
        of GSM-Plus decimals were such fragments)."""
        question, found, at = self.question, [], self.question.find(value)
        lead = len(value) - len(value.lstrip())
        while at >= 0:
            j = at + lead
            if lead == len(value) or j == 0 or not (
                question[j - 1].isalnum()
                or (question[j - 1] in ".,/" and j >= 2 and question[j - 2].isdigit() and question[j].isdigit())
            ):
                found.append(at)
            at = question.find(value, at + 1)
        return found

    def _ends_whole(self, start: int, value: str) -> bool:
        """Whether ``value`` at ``start`` ends where a word or number ends ("120", not the "12" of it)."""
        question = self.question
        k = start + len(value.rstrip())
        if k >= len(question):
            return True
        if question[k].isalnum():
            return False
        return not (question[k] in ".,/" and k + 1 < len(question) and question[k + 1].isdigit() and question[k - 1].isdigit())

    @property
    def slot(self) -> int:
        """Index of the parameter whose value is being written."""
        return self._slot

    @property
    def in_value(self) -> bool:
        """Whether a value has begun and not yet closed."""
        return bool(self._value_ids)

    def ends_value(self, token: int) -> bool:
        """Whether ``token`` closes the current value (several spellings of the closing text do)."""
        return not self.done and token in self._closers[self._slot]

    def advance(self, token: int) -> None:
        """Take the model's choice (or a verified draft token) at a decision point."""
        closers = self._closers[self._slot]
        if token not in closers:
            self._value_ids.append(token)
            self._value_text += self.tokens.token_text(token)
            return
        rest = self._closing_text(self._slot)[len(closers[token]):]
        self.values.append(self._value_text)
        self._value_ids, self._value_text = [], ""
        self._slot += 1
        self.done = self._slot == len(self.slots)
        self._forced = [] if self.done else self.tokens.encode(rest) if rest else []

    def draft_tokens(self, values: Sequence[str | None]) -> list[int]:
        """The token sequence this machine would produce for ``values`` (forced and decided) from where it stands, a
        value's start: on a fresh machine the whole answer. It stops after the opening of the first value that is
        None (one the model reads itself: free text), so the model's reading of it starts where the tokens end."""
        if self._value_ids:
            raise RuntimeError("draft_tokens() called inside a value")
        out: list[int] = list(self._forced)
        for i in range(self._slot, len(self.slots)):
            value = values[i]
            if value is None:
                break
            closing = self.tokens.encode(self._closing_text(i))
            out += self.tokens.encode(value) + (closing if i + 1 < len(self.slots) else closing[:1])
        return out

    def result(self) -> dict[str, str]:
        return {spec.name: value for spec, value in zip(self.slots, self.values)}
