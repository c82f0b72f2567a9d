"""The building blocks of the schema tables: ``Field`` (a ``FieldSpec`` in Kafka's message generator),
``MessageSchema`` and the ``F``/``message`` shorthands that read like Kafka's JSON message definitions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MAX_VERSION = 0x7FFF
_NO_DEFAULT: Any = object()


def parse_versions(spec: str | None) -> tuple[int, int] | None:
    """Kafka's version-range notation -> ``(lo, hi)`` inclusive, or ``None`` for ``"none"``."""
    if spec is None or spec == "none":
        return None
    if spec.endswith("+"):
        return int(spec[:-1]), MAX_VERSION
    if "-" in spec:
        lo, hi = spec.split("-")
        return int(lo), int(hi)
    return int(spec), int(spec)


def in_range(r: tuple[int, int] | None, v: int) -> bool:
    return r is not None and r[0] <= v <= r[1]


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a message struct (a ``FieldSpec`` in Kafka's generator)."""

    name: str
    type: str
    versions: tuple[int, int] | None
    nullable: tuple[int, int] | None = None
    default: Any = _NO_DEFAULT
    tag: int | None = None
    tagged_versions: tuple[int, int] | None = None
    fields: tuple[Field, ...] = ()

    @property
    def is_struct(self) -> bool:
        return self.type in ("struct", "[]struct")

    def present(self, version: int) -> bool:
        return in_range(self.versions, version) and (
            self.tag is None or in_range(self.tagged_versions, version)
        )

    def is_nullable(self, version: int) -> bool:
        return in_range(self.nullable, version)

    def default_value(self, version: int) -> Any:
        """The value a reader assumes when the field is absent (the generated constructor's value)."""
        if self.default is not _NO_DEFAULT:
            return self.default
        if self.type.startswith("[]"):
            return []
        if self.type == "struct":
            if self.is_nullable(version):
                return None
            return {f.name: f.default_value(version) for f in self.fields if f.present(version)}
        return _TYPE_DEFAULTS[self.type]


def _type_defaults() -> dict[str, Any]:
    import uuid

    return {
        "int8": 0,
        "int16": 0,
        "uint16": 0,
        "int32": 0,
        "int64": 0,
        "float64": 0.0,
        "bool": False,
        "uuid": uuid.UUID(int=0),
        "string": "",
        "bytes": b"",
    }


_TYPE_DEFAULTS = _type_defaults()


def F(
    name: str,
    type: str,
    versions: str = "0+",
    *,
    nullable: str | None = None,
    default: Any = _NO_DEFAULT,
    tag: int | None = None,
    tagged: str | None = None,
    fields: tuple[Field, ...] = (),
) -> Field:
    """Shorthand that reads like the JSON definitions."""
    return Field(
        name=name,
        type=type,
        versions=parse_versions(versions),
        nullable=parse_versions(nullable),
        default=default,
        tag=tag,
        tagged_versions=parse_versions(tagged) if tag is not None else None,
        fields=fields,
    )


@dataclass(frozen=True, slots=True)
class MessageSchema:
    """One key or value message: its valid and flexible versions and its fields."""

    name: str
    valid_versions: tuple[int, int]
    flexible_versions: tuple[int, int] | None
    fields: tuple[Field, ...]
    # Schemas Kafka marks "in development ... subject to non-backwards-compatible changes": a value that
    # does not fit is returned raw instead of failing (the layout may belong to another release).
    provisional: bool = False
    field_names: tuple[str, ...] = field(default=(), compare=False)

    def is_flexible(self, version: int) -> bool:
        return in_range(self.flexible_versions, version)

    def versions(self) -> range:
        return range(self.valid_versions[0], self.valid_versions[1] + 1)


def message(name: str, valid: str, flexible: str, *fields: Field, provisional: bool = False) -> MessageSchema:
    vr = parse_versions(valid)
    assert vr is not None
    return MessageSchema(
        name=name,
        valid_versions=vr,
        flexible_versions=parse_versions(flexible),
        fields=tuple(fields),
        provisional=provisional,
        field_names=tuple(f.name for f in fields),
    )
