"""The base of every typed record onsei writes and reads: data records (services/records.py)
and the ledger's done and failure records (common/ledger/records.py).

Frozen pydantic models, strict (no ``"1.5"`` for a number, no ``1`` for a boolean; an integer
is a number), keeping the keys a newer version wrote (``extra``) so a rewrite never drops them.
``from_json`` / ``from_dict`` raise :class:`RecordError` (a ``ValueError``) for anything that is
not the record: its reader counts it as malformed or corrupt and goes on.
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class RecordError(ValueError):
    """A line or sidecar that is not the record it should be."""


def _is_none(v: Any) -> bool:
    return v is None


def omitted() -> Any:
    """An optional field that is not written at all when None."""
    return Field(default=None, exclude_if=_is_none)


def written_keys(cls: type[Record]) -> tuple[str, ...]:
    """The keys every record of ``cls`` has on disk, in order (not those omitted when None)."""
    return tuple(n for n, f in cls.model_fields.items() if f.exclude_if is None)


def _error(cls: type, e: ValidationError) -> RecordError:
    why = "; ".join(f"{'.'.join(map(str, x['loc'])) or '-'}: {x['msg']}" for x in e.errors()[:3])
    return RecordError(f"{cls.__name__}: {why}"[:300])


class Record(BaseModel):
    """Frozen, strict, and keeping unknown keys (``extra``)."""

    model_config = ConfigDict(frozen=True, strict=True, extra="allow")

    @classmethod
    def from_json(cls, text: str | bytes) -> Self:
        try:
            return cls.model_validate_json(text)
        except ValidationError as e:
            raise _error(cls, e) from None

    @classmethod
    def from_dict(cls, d: Any) -> Self:
        try:
            return cls.model_validate(d)
        except ValidationError as e:
            raise _error(cls, e) from None

    def to_json(self) -> str:
        return self.model_dump_json()

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump()

    @property
    def extra(self) -> dict[str, Any]:
        """The keys this version does not know, as read."""
        return self.model_extra or {}
