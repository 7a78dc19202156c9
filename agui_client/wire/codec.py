"""The one cattrs converter: camelCase wire JSON <-> the frozen attrs types, and the policy around it.

Decoding is strict where the schema is (no coercion: ``"timestamp": "123"`` is an error, a snake_case
key is not a field), tolerant where the protocol asks for tolerance (unknown event types become
``UnknownEvent``; unknown fields are ignored and reported once), and defensive against hostile JSON
(:mod:`~agui_client.wire.jsonio` parses it).

The types state every field once. What they cannot state is the *policy*, in one place
(:mod:`~agui_client.wire.policy`): the legacy nulls read as absent, the fields the wire requires though
Python has a default, and the checks beyond field types. The converter's hooks apply it on the checked
path, which alone decides errors and warnings; :mod:`~agui_client.wire.derive` generates from the same
types and the same policy the fast readers most payloads take, which accept only what the checked path
accepts.

Warnings go to the active sink (:mod:`~agui_client.wire.sink`); a run session collects them into
``RunResult.warnings``.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from types import UnionType
from typing import Any, Final, Literal, TypeVar, Union, get_args, get_origin

import attrs
import cattrs
from cattrs.errors import ClassValidationError, ForbiddenExtraKeysError, IterableValidationError
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from .._inert import quoted_name
from ..errors import DecodeError
from . import derive, located, shapes
from .jsonio import (
    DEFAULT_MAX_DEPTH,
    MAX_SAFE_INT,
    NOT_AN_EVENT,
    escape,
    parse_json,
)
from .policy import (
    ALWAYS_LEGACY_NULL,
    LEGACY_NULLS,
    TAG_NAMES,
    WIRE_REQUIRED,
    Fallback,
    FieldError,
    Policy,
    check_patch,
    checks,
)
from .sink import DROP_WARNINGS, WarningSink, collect_warnings, warn
from .slices import SLICED_MIN, read_slices
from .types import events as ev
from .types import messages as msg
from .types import run as rn
from .types.events import EVENT_TYPES, Event, UnknownEvent
from .values import PlainList, describe, shown_key

__all__ = [
    "decode_event",
    "decode_value",
    "decode",
    "decode_large",
    "encode",
    "encode_messages",
    "checked_usage",
    "constructor",
    "replacer",
    "front",
    "held_messages",
    "camel",
    "wire_name",
    "tag_of",
    "FieldError",
    "Fallback",
    "SLICED_MIN",
    "Allowance",
    "NewShape",
    "NO_TYPE",
    "MALFORMED",
]

T = TypeVar("T")

#: The rules a decode error names besides ``NOT_AN_EVENT``: the object has no non-empty string type
#: (TR-09, the validator's AGUI504), or a known event's field is malformed (UK-05, AGUI504).
NO_TYPE = "TR-09/AGUI504"
MALFORMED = "UK-05/AGUI504"
Allowance = shapes.Allowance
NewShape = shapes.NewShape


def camel(name: str) -> str:
    """``tool_call_id`` -> ``toolCallId``."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def wire_name(a: attrs.Attribute[Any]) -> str:
    """The wire name of a wire type's attribute: its name in camelCase."""
    return camel(a.name)


def tag_of(cls: type) -> tuple[str, str] | None:
    """A wire class's tag: ``("type", TYPE)`` or ``("role", ROLE)``, or ``None`` for an untagged class."""
    if hasattr(cls, "TYPE"):
        return "type", cls.TYPE
    if hasattr(cls, "ROLE"):
        return "role", cls.ROLE
    return None


def _usage_entry_fault(entry: Any) -> tuple[str, str] | None:
    """Why the schema refuses one usage entry (pointer within the entry, message), or ``None``."""
    # The entry's own warnings (an unknown key) are reported when it is read for real, not twice.
    with collect_warnings(WarningSink()):
        try:
            _converter.structure(entry, rn.TokenUsage)
        except FieldError as exc:
            return exc.pointer, str(exc)
        except ClassValidationError as exc:
            return _first_error(exc)
    return None


#: The policy's checks beyond the field types (:func:`~agui_client.wire.policy.checks`), by class, with
#: the schema's verdict on a usage entry (this module's converter) handed in.
CHECKS = checks(_usage_entry_fault)


# --------------------------------------------------------------------------------------------------
# The converter
# --------------------------------------------------------------------------------------------------


def _structure_str(value: Any, _: Any) -> str:
    if type(value) is str:
        return value
    raise FieldError(f"expected a string, got {describe(value)}")


def _structure_int(value: Any, _: Any) -> int:
    if type(value) is int and -MAX_SAFE_INT <= value <= MAX_SAFE_INT:
        return value
    if type(value) is int:
        raise FieldError("integer outside ±(2^53-1)")
    raise FieldError(f"expected an integer, got {describe(value)}")


def _structure_bool(value: Any, _: Any) -> bool:
    if type(value) is bool:
        return value
    raise FieldError(f"expected a boolean, got {describe(value)}")


def _structure_object(value: Any, _: Any) -> dict[str, Any]:
    if type(value) is dict:
        return value
    raise FieldError(f"expected an object, got {describe(value)}")


def _structure_any(value: Any, _: Any) -> Any:
    return value


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(detailed_validation=True)
    conv.register_structure_hook(str, _structure_str)
    conv.register_structure_hook(int, _structure_int)
    conv.register_structure_hook(bool, _structure_bool)
    conv.register_structure_hook_func(lambda t: t == dict[str, Any], _structure_object)
    conv.register_structure_hook_func(lambda t: t is Any, _structure_any)
    conv.register_structure_hook_factory(_is_homogeneous_tuple, lambda t: _tuple_hook(conv, t))
    conv.register_structure_hook_factory(_is_content, lambda t: _content_hook(conv))
    conv.register_structure_hook_factory(lambda t: t == msg.ContentPart, lambda t: _part_hook(conv))
    conv.register_structure_hook_factory(lambda t: t == msg.PartSource, lambda t: _source_hook(conv))
    conv.register_structure_hook_factory(lambda t: t == msg.Message, lambda t: _message_hook(conv))
    conv.register_structure_hook_factory(
        lambda t: t == rn.RunFinishedOutcome, lambda t: _outcome_hook(conv, _RUN_OUTCOMES, "run"))
    conv.register_structure_hook_factory(
        lambda t: t == rn.SubagentFinishedOutcome, lambda t: _outcome_hook(conv, _SUBAGENT_OUTCOMES, "subagent"))
    conv.register_structure_hook_factory(_is_literal, _literal_hook)
    conv.register_structure_hook_factory(attrs.has, lambda cls: _class_structure_hook(conv, cls))
    conv.register_structure_hook_factory(_is_optional, lambda t: _optional_hook(conv, t))

    conv.register_unstructure_hook(tuple, lambda value: [conv.unstructure(item) for item in value])
    conv.register_unstructure_hook_factory(attrs.has, lambda cls: _class_unstructure_hook(conv, cls))
    return conv


def _is_optional(t: Any) -> bool:
    args = get_args(t)
    return get_origin(t) in (Union, UnionType) and type(None) in args


def _optional_hook(conv: cattrs.Converter, t: Any) -> Callable[[Any, Any], Any]:
    rest = tuple(a for a in get_args(t) if a is not type(None))
    inner: Any = rest[0] if len(rest) == 1 else Union[rest]
    hook = conv.get_structure_hook(inner)

    def structure_optional(value: Any, _: Any) -> Any:
        # Nulls were already dropped (legacy) or refused by the class hook, so None never reaches here
        # from the wire; a Python caller's None stays None.
        return None if value is None else hook(value, inner)
    return structure_optional


def _is_homogeneous_tuple(t: Any) -> bool:
    args = get_args(t)
    return get_origin(t) is tuple and len(args) == 2 and args[1] is Ellipsis


def _tuple_hook(conv: cattrs.Converter, t: Any) -> Callable[[Any, Any], tuple[Any, ...]]:
    item_type = get_args(t)[0]
    if item_type is Any:
        def structure_json_list(value: Any, _: Any) -> tuple[Any, ...]:
            if type(value) is list:
                return tuple(value)
            raise FieldError(f"expected an array, got {describe(value)}")
        return structure_json_list
    item_hook = conv.get_structure_hook(item_type)
    dropping = item_type in (msg.ContentPart, msg.Message)

    def structure_list(value: Any, _: Any) -> tuple[Any, ...]:
        if type(value) is not list:
            raise FieldError(f"expected an array, got {describe(value)}")
        out = []
        for i, item in enumerate(value):
            try:
                structured = item_hook(item, item_type)
            except FieldError as exc:
                raise FieldError(str(exc), f"/{i}{exc.pointer}") from None
            except ClassValidationError as exc:
                pointer, message = _first_error(exc)
                raise FieldError(message, f"/{i}{pointer}") from None
            if dropping and structured is _DROP:
                continue
            out.append(structured)
        return tuple(out)
    return structure_list


def _is_content(t: Any) -> bool:
    return bool(t == (str | tuple[msg.ContentPart, ...]) or t == Union[str, tuple[msg.ContentPart, ...]])


def _content_hook(conv: cattrs.Converter) -> Callable[[Any, Any], Any]:
    parts = conv.get_structure_hook(tuple[msg.ContentPart, ...])

    def structure_content(value: Any, _: Any) -> Any:
        if type(value) is str:
            return value
        if type(value) is list:
            return parts(value, tuple[msg.ContentPart, ...])
        raise FieldError(f"expected a string or an array of content parts, got {describe(value)}")
    return structure_content


class _Drop:
    def __repr__(self) -> str:
        return "<dropped>"


#: Returned by union hooks for an unrecognised member that its container drops (UK-04).
_DROP: Any = _Drop()

_PARTS: dict[str, type] = {c.TYPE: c for c in (msg.TextPart, msg.ImagePart, msg.AudioPart, msg.VideoPart,
                                               msg.DocumentPart)}
_SOURCES: dict[str, type] = {c.TYPE: c for c in (msg.DataSource, msg.UrlSource, msg.FileSource)}
_MESSAGES: dict[str, type] = {c.ROLE: c for c in (msg.DeveloperMessage, msg.SystemMessage, msg.AssistantMessage,
                                                  msg.UserMessage, msg.ToolMessage, msg.ActivityMessage,
                                                  msg.ReasoningMessage)}
_RUN_OUTCOMES: dict[str, type] = {c.TYPE: c for c in (rn.RunFinishedSuccessOutcome, rn.RunFinishedInterruptOutcome,
                                                      rn.RunFinishedCancelledOutcome)}
_SUBAGENT_OUTCOMES: dict[str, type] = {c.TYPE: c for c in (rn.SubagentFinishedSuccessOutcome,
                                                           rn.SubagentFinishedSuspendedOutcome)}


def _tagged(conv: cattrs.Converter, table: dict[str, type], tag: str, what: str,
            on_unknown: Callable[[Any], Any], untagged_unknown: bool = False) -> Callable[[Any, Any], Any]:
    """A union's structure hook, by its tag. ``untagged_unknown``: a member whose tag is missing or not a
    string is an unknown one too (``on_unknown`` then sees ``value[tag]`` as ``None`` or as it came), not a
    malformed one."""
    hooks = {name: conv.get_structure_hook(cls) for name, cls in table.items()}

    def structure_tagged(value: Any, _: Any) -> Any:
        if type(value) is not dict:
            raise FieldError(f"expected {what} object, got {describe(value)}")
        name = value.get(tag)
        if type(name) is not str:
            if untagged_unknown:
                return on_unknown(value)
            raise FieldError(f"{what} needs a string {tag!r}", f"/{tag}")
        cls = table.get(name)
        if cls is None:
            return on_unknown(value)
        return hooks[name](value, cls)
    return structure_tagged


def _unknown_tag(value: dict[str, Any], tag: str, of: str) -> tuple[str, str]:
    """How a dropped union member's warning names it (``of`` unknown ``tag`` ..., or without one), and the
    tag its warning is given once for.

    A part (a message) without a string tag names no kind this client or AG-UI 1.0 defines, as much as an
    unknown name does: dropped alike (the reference drops both as unrecognised material), not a failed run.
    """
    name = value.get(tag)
    if type(name) is str:
        return f"{of} unknown {tag} {quoted_name(name)}", name
    return f"without a string {tag!r}", ""


def _part_hook(conv: cattrs.Converter) -> Callable[[Any, Any], Any]:
    def unknown(value: dict[str, Any]) -> Any:
        said, kind = _unknown_tag(value, "type", "of")
        warn("UK-04", f"content part {said} dropped", pointer=located.at(value, ""), once=("part", kind),
             repeat=DROP_WARNINGS)
        return _DROP
    return _tagged(conv, _PARTS, "type", "a content part", unknown, untagged_unknown=True)


def _source_hook(conv: cattrs.Converter) -> Callable[[Any, Any], Any]:
    def unknown(value: dict[str, Any]) -> Any:
        raise FieldError(f"unknown content source type {quoted_name(value['type'])}", "/type")
    return _tagged(conv, _SOURCES, "type", "a content source", unknown)


def _message_hook(conv: cattrs.Converter) -> Callable[[Any, Any], Any]:
    def unknown(value: dict[str, Any]) -> Any:
        said, role = _unknown_tag(value, "role", "with")
        warn("MS-05", f"message {quoted_name(value.get('id'))} {said} dropped", pointer=located.at(value, ""),
             once=("role", role), repeat=DROP_WARNINGS)
        return _DROP
    return _tagged(conv, _MESSAGES, "role", "a message", unknown, untagged_unknown=True)


def _outcome_hook(conv: cattrs.Converter, table: dict[str, type], kind: str) -> Callable[[Any, Any], Any]:
    success = table["success"]

    def unknown(value: dict[str, Any]) -> Any:
        # LC-10 / SA-07: a 1.0 consumer strips an outcome it does not recognise and reads success.
        warn("LC-10" if kind == "run" else "SA-07",
              f"unknown {kind} outcome type {quoted_name(value['type'])} read as success",
              pointer=located.at(value, "") or "/outcome",
              once=("outcome", kind, value["type"]), repeat=DROP_WARNINGS)
        return success()
    return _tagged(conv, table, "type", f"a {kind} outcome", unknown)


def _is_literal(t: Any) -> bool:
    return get_origin(t) is Literal


def _literal_hook(t: Any) -> Callable[[Any, Any], Any]:
    allowed = get_args(t)

    def structure_literal(value: Any, _: Any) -> Any:
        if type(value) is str and value in allowed:
            return value
        raise FieldError(f"expected one of {', '.join(map(repr, allowed))}, got {quoted_name(value)}")
    return structure_literal


def _class_structure_hook(conv: cattrs.Converter, cls: type) -> Callable[[Any, Any], Any]:
    fields = attrs.fields(cls)
    attrs.resolve_types(cls)
    overrides = {a.name: override(rename=wire_name(a)) for a in fields}
    generated: Callable[[Any, Any], Any] = make_dict_structure_fn(
        cls, conv, _cattrs_forbid_extra_keys=False, **overrides)  # type: ignore[arg-type]
    names = frozenset(wire_name(a) for a in fields)
    known = names | ({"type", "role"} if tag_of(cls) else set())
    tag = tag_of(cls)
    legacy = LEGACY_NULLS.get(cls, frozenset()) | ALWAYS_LEGACY_NULL
    # A required free-form JSON field (STATE_SNAPSHOT.snapshot, CUSTOM.value, RAW.event) may be null:
    # null is a value there (SP-01, UK-12), not an absent optional field.
    nullable = frozenset(wire_name(a) for a in fields if a.default is attrs.NOTHING and a.type is Any)
    wire_required = WIRE_REQUIRED.get(cls, frozenset())
    cls_name = tag[1] if tag else cls.__name__
    # (an outcome, a content part is tagged by "type" too: its warnings take their event's type later)
    is_event = cls in ev.EVENT_TYPES.values()
    specific = CHECKS.get(cls)

    def structure(value: Any, _: Any) -> Any:
        if type(value) is not dict:
            raise FieldError(f"expected an object, got {describe(value)}")
        read = value  # (the object as it sits in what is decoded: its warnings name their place by it)
        if None in value.values():
            value = _drop_nulls(value, legacy, nullable, cls_name, names, is_event)
        if specific is not None:
            value = specific(value, warn if is_event else functools.partial(_warn_within, read)) or value
        if not value.keys() <= known:
            for key in value.keys() - known:
                warn("UK-03", f"unknown field {shown_key(key)} on {cls_name} ignored",
                     pointer=located.at(read, "/" + escape(key)),
                     event_type=cls_name if is_event else None, once=("field", cls_name, key))
        for key in wire_required:
            if key not in value:
                raise FieldError(f"required field {key!r} is missing", "/" + key)
        return generated(value, cls)
    return structure


def _warn_within(read: Any, code: str, message: str, *, pointer: str | None = None, **rest: Any) -> None:
    """A nested object's check warning: its pointer (within ``read``) from the root of what is decoded."""
    warn(code, message, pointer=None if pointer is None else located.at(read, pointer), **rest)


def _drop_nulls(value: dict[str, Any], legacy: frozenset[str], nullable: frozenset[str],
                where: str, names: frozenset[str], is_event: bool) -> dict[str, Any]:
    cleaned = {}
    for key, item in value.items():
        # (a member this class does not have is ignored with a warning whatever its value, null included:
        # UK-03 makes unknown members tolerated, never fatal. That holds for the other kind's tag name
        # too, ``role`` on an event or ``type`` on a message, which is otherwise ignored without a word.)
        if item is None and key not in names and key in TAG_NAMES:
            warn("UK-03", f"unknown field {shown_key(key)} on {where} ignored",
                 pointer=located.at(value, "/" + escape(key)),
                 event_type=where if is_event else None, once=("field", where, key))
            continue
        if item is None and key not in nullable and key in names:
            if key in legacy:
                warn("UK-06", f"legacy null {shown_key(key)} on {where} read as absent",
                     pointer=located.at(value, "/" + escape(key)), once=("null", where, key))
                continue
            raise FieldError(f"{shown_key(key)} must be absent or a value, not null", "/" + escape(key))
        cleaned[key] = item
    return cleaned




def _class_unstructure_hook(conv: cattrs.Converter, cls: type) -> Callable[[Any], Any]:
    if cls is UnknownEvent:
        return lambda event: dict(event.raw)
    attrs.resolve_types(cls)
    overrides: dict[str, Any] = {}
    for a in attrs.fields(cls):
        kwargs: dict[str, Any] = {"rename": wire_name(a)}
        if a.default is None:
            kwargs["omit_if_default"] = True
        if a.type is Any or a.type == dict[str, Any] or a.type == (dict[str, Any] | None):
            kwargs["unstruct_hook"] = _identity
        overrides[a.name] = override(**kwargs)
    generated: Callable[[Any], Any] = make_dict_unstructure_fn(cls, conv, **overrides)
    tag = tag_of(cls)
    if tag is None:
        return generated
    key, name = tag

    def unstructure(obj: Any) -> dict[str, Any]:
        return {key: name, **generated(obj)}
    return unstructure


def _identity(value: Any) -> Any:
    return value


_converter = _make_converter()


# --------------------------------------------------------------------------------------------------
# Errors with JSON pointers
# --------------------------------------------------------------------------------------------------


def _first_error(exc: BaseException) -> tuple[str, str]:
    """The first leaf of a cattrs error tree as (JSON pointer, message)."""
    if isinstance(exc, (ClassValidationError, IterableValidationError)):
        for sub in exc.exceptions:
            segment = ""
            for note in getattr(sub, "__notes__", ()):
                name = getattr(note, "name", None)
                index = getattr(note, "index", None)
                if name is not None:
                    segment = "/" + camel(str(name))
                    break
                if index is not None:
                    segment = f"/{index}"
                    break
            pointer, message = _first_error(sub)
            if isinstance(sub, KeyError) and not isinstance(sub, FieldError):
                return segment, f"required field {segment[1:]!r} is missing"
            return segment + pointer, message
        return "", str(exc)
    if isinstance(exc, FieldError):
        return exc.pointer, str(exc)
    if isinstance(exc, ForbiddenExtraKeysError):
        return "", str(exc)
    return "", str(exc) or type(exc).__name__


def _structure(value: Any, cls: Any, *, event_type: str | None = None) -> Any:
    token = located.enter(value)  # (for a nested object's warnings: see wire.located)
    try:
        return _converter.structure(value, cls)
    except FieldError as exc:
        raise DecodeError(str(exc), pointer=exc.pointer, event_type=event_type, rule=MALFORMED) from None
    except ClassValidationError as exc:
        pointer, message = _first_error(exc)
        raise DecodeError(message, pointer=pointer, event_type=event_type, rule=MALFORMED) from None
    finally:
        located.leave(token)


# --------------------------------------------------------------------------------------------------
# Derived from the types and the policy: fast readers, validators, encoders, constructors
# --------------------------------------------------------------------------------------------------

#: The messages a fold may hold as their plain JSON: every role but activity, whose authority rules
#: (which activity types a snapshot owns) read the typed message.
_HELD_ROLES = ("user", "assistant", "tool", "reasoning", "system", "developer")
HeldMessage = Union[msg.DeveloperMessage, msg.SystemMessage, msg.AssistantMessage, msg.UserMessage,  # noqa: UP007
                    msg.ToolMessage, msg.ReasoningMessage]

_derived = derive.Derived(Policy(
    wire_name=wire_name,
    tag_of=tag_of,
    wire_required=WIRE_REQUIRED,
    checks=CHECKS,
    field_error=FieldError,
    unions={
        msg.ContentPart: (_PARTS, "type"),
        msg.PartSource: (_SOURCES, "type"),
        msg.Message: (_MESSAGES, "role"),
        # (a validator of a list tests the tags in the table's order: here, the roles a conversation
        # holds most first)
        HeldMessage: ({role: _MESSAGES[role] for role in _HELD_ROLES}, "role"),
        rn.RunFinishedOutcome: (_RUN_OUTCOMES, "type"),
        rn.SubagentFinishedOutcome: (_SUBAGENT_OUTCOMES, "type"),
    },
    max_int=MAX_SAFE_INT,
    encodable=frozenset(c for c in vars(msg).values()
                        if isinstance(c, type) and attrs.has(c) and c.__module__ == msg.__name__),
    tag_checks=frozenset({msg.ToolCall}),  # (_check_tool_call: the type must be "function")
))


class _ReaderByKind(dict[str, Any]):
    """Event type -> the fast reader of its class (``None`` for an unknown type, which is not cached)."""

    def __missing__(self, kind: str) -> Any:
        cls = EVENT_TYPES.get(kind)
        if cls is None:
            return None  # not cached: unknown types are unbounded
        found = self[kind] = _derived.reader(cls)
        return found


_READERS = _ReaderByKind()
_held = _derived.validator(tuple[HeldMessage, ...])


def constructor(cls: type) -> Callable[..., Any]:
    """A constructor equivalent to ``cls(**kwargs)`` for a wire class (filling its slots directly)."""
    return _derived.constructor(cls)


def replacer(cls: type, names: tuple[str, ...]) -> Callable[..., Any]:
    """``replace(obj, *values)``, equivalent to ``attrs.evolve(obj, **dict(zip(names, values)))`` for a
    wire class (filling its slots directly; kept per class and names)."""
    return _derived.replacer(cls, names)


def front(cls: type, route: Callable[..., Any],
          overrides: Mapping[str, Callable[[Any], Any]] | None = None, *, vetted: bool = False) -> derive.Router | None:
    """A fast front-end reader for an event class (see :meth:`~agui_client.wire.derive.Derived.router`)."""
    return _derived.router(cls, route, overrides, vetted=vetted)


def patch_vet(field_name: str) -> Callable[[Any], None]:
    """The check of an event's JSON Patch member as a function of the patch alone, raising
    :class:`FieldError` (the one rule of ``CHECKS``, for an applier that asks for it only when it must:
    see :func:`~agui_client.core.patch.apply_patch`'s ``vet``)."""
    def vet(patch: Any) -> None:
        check_patch(patch, field_name)
    return vet


def held_messages(items: Any) -> bool:
    """Whether ``items`` is a list of messages a fold may hold as their JSON (see :data:`HeldMessage`):
    each decodes without an error or a warning and encodes back to an equal object."""
    if _held is None:  # pragma: no cover - every message class has a validator
        return False
    try:
        return bool(_held(items))
    except Fallback:
        return False


def encode_messages(messages: Iterable[Any], *, checked: bool = False) -> list[Any]:
    """``encode(messages)`` as a list, built directly by the derived encoders.

    Args:
        messages: the messages.
        checked: return a :class:`~agui_client.wire.values.PlainList` when every value is plain JSON
            (only for data that is serialised at once and never changed).
    """
    out: list[Any] = []
    append = out.append
    ok = True
    encodable = _derived.policy.encodable
    encoder = _derived.encoder
    for message in messages:
        if type(message) in encodable:
            try:
                append(encoder(type(message))(message))
                continue
            except Fallback:
                pass
        # Not a wire class (a subclass, say) or not plain JSON: the converter decides, unchecked.
        append(encode(message))
        ok = False
    return PlainList(out) if checked and ok else out


#: What a ``MESSAGES_SNAPSHOT`` written compactly starts with (a large one is read slice by slice).
SNAPSHOT_HEAD = b'{"type":"MESSAGES_SNAPSHOT","messages":['


def decode_large(raw: bytes | str, max_depth: int = DEFAULT_MAX_DEPTH,
                 allowance: Allowance | None = None) -> Event | None:
    """A large ``MESSAGES_SNAPSHOT`` in the plain shape, decoded slice by slice; ``None`` otherwise
    (``allowance``: what pays for the shapes it compiles, as for :func:`decode_value`)."""
    if len(raw) < SLICED_MIN:
        return None
    build = _derived.reader(tuple[msg.Message, ...])
    event_reader = _READERS["MESSAGES_SNAPSHOT"]
    if build is None or event_reader is None:  # pragma: no cover - both are derived
        return None

    def sliced() -> tuple[list[Any], Any] | None:
        read = read_slices(raw, SNAPSHOT_HEAD, "messages", max_depth, build)
        return None if read is None else (read[0], event_reader(read[1]))

    # Read with the allowance in force from the start: a shape met that is not compiled would otherwise
    # start the read of the whole payload over (every time, for a shape the allowance declined, which is
    # never kept). One context variable set a payload of SLICED_MIN bytes or more costs nothing.
    try:
        done = shapes.charged(allowance or Allowance(), sliced)
    except Fallback:
        return None
    if done is None:
        return None
    parts, event = done
    messages = parts[0] if len(parts) == 1 else tuple(itertools.chain.from_iterable(parts))
    return attrs.evolve(event, messages=messages)  # type: ignore[no-any-return]


# --------------------------------------------------------------------------------------------------
# Public entry points
# --------------------------------------------------------------------------------------------------

# THINKING_* left the protocol in 1.0 (RS-09); a compatible reading maps them onto REASONING_*.
_LEGACY_TYPES = {
    "THINKING_START": "REASONING_START",
    "THINKING_END": "REASONING_END",
    "THINKING_TEXT_MESSAGE_START": "REASONING_MESSAGE_START",
    "THINKING_TEXT_MESSAGE_CONTENT": "REASONING_MESSAGE_CONTENT",
    "THINKING_TEXT_MESSAGE_END": "REASONING_MESSAGE_END",
}


def decode_event(data: bytes | bytearray | memoryview | str | Mapping[str, Any], *,
                 max_depth: int = DEFAULT_MAX_DEPTH) -> Event | UnknownEvent:
    """Decode one AG-UI event from JSON text/bytes or an already-parsed mapping.

    Unknown event types become :class:`UnknownEvent` with a warning; unknown fields on known events
    are ignored and reported once.

    Raises:
        DecodeError: the payload is not a JSON object with a string ``type``, or a known event is
            malformed; ``pointer`` names the field (``/outcome/interrupts/1/id``).
        LimitExceeded: nesting deeper than ``max_depth``.
    """
    if type(data) is bytes and len(data) >= SLICED_MIN:
        large = decode_large(data, max_depth)
        if large is not None:
            return large
    if type(data) is bytes or type(data) is str or not isinstance(data, Mapping):
        value: Any = parse_json(data, max_depth=max_depth)
    else:
        value = data if type(data) is dict else dict(data)
    return decode_value(value)


def decode_value(value: Any, sink: WarningSink | None = None,
                 legacy: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
                 allowance: Allowance | None = None) -> Event | UnknownEvent:
    """Decode an already-parsed JSON value as one event (see :func:`decode_event`).

    Args:
        value: the parsed payload.
        sink: where warnings go (instead of the active sink, or :mod:`warnings`).
        legacy: how a pre-1.0 ``THINKING_*`` payload becomes its ``REASONING_*`` payload, for a reader
            that knows the stream (a ``RunSession`` mints the ids the old events lacked). Without it, one
            carrying a ``messageId`` is read with that id and one without is an ``UnknownEvent``. Asked
            only on the checked path those payloads take (no fast reader knows them), so the events of
            1.0 pay nothing for it.
        allowance: what pays for the shapes this read compiles (the response's: see
            :mod:`~agui_client.wire.shapes`); without it, an allowance of this read's own.
    """
    if type(value) is dict:
        kind = value.get("type")
        if type(kind) is str:
            fast = _READERS[kind]
            if fast is not None:
                # The allowance is put in force (a context variable) only where a read needs it. A shape
                # met that is not compiled, with allowance left, is read again under it once compiled
                # (some 0.5 ms, beside which the first read's lookup is nothing). Once it is spent, every
                # such shape is declined, and a read that met one was made twice only to be declined the
                # second time (9 us a typed event, against 7 read once): the response's reads are made
                # under it from the start, one read each. The context variable, some 0.3 us an event, is
                # that response's cost and none of the others'.
                try:
                    if allowance is None or allowance.left > 0:
                        try:
                            return fast(value)  # type: ignore[no-any-return]
                        except NewShape:
                            pass
                    return shapes.charged(allowance or Allowance(), fast, value)  # type: ignore[no-any-return]
                except Fallback:
                    pass
    if sink is None:
        return _decode_value_checked(value, legacy, allowance)
    # Only the checked path can warn, so only it pays for routing the warnings.
    with collect_warnings(sink):
        return _decode_value_checked(value, legacy, allowance)


def _decode_value_checked(value: Any, legacy: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
                          allowance: Allowance | None = None) -> Event | UnknownEvent:
    if type(value) is not dict:
        raise DecodeError(f"an event must be a JSON object, got {describe(value)}", pointer="", rule=NOT_AN_EVENT)
    kind = value.get("type")
    if type(kind) is not str:
        raise DecodeError("an event needs a string 'type'" if kind is None else
                          f"'type' must be a string, got {describe(kind)}", pointer="/type", rule=NO_TYPE)
    cls = EVENT_TYPES.get(kind)
    if cls is None:
        if not kind:
            raise DecodeError("'type' must not be empty", pointer="/type", rule=NO_TYPE)  # (a non-empty string)
        modern = _LEGACY_TYPES.get(kind)
        if modern is None:
            hint = _near_miss(kind) if len(kind) <= _REMEMBERED_TYPE else _spelled_like(kind)
            warn("UK-02", f"unknown event type {quoted_name(kind)} "
                          "ignored" + (f" (did you mean {hint}?)" if hint else ""),
                 event_type=kind, once=("type", kind), repeat=DROP_WARNINGS)
            return UnknownEvent(type=kind, raw=value)
        if legacy is not None:
            return _decode_value_checked(legacy(value))
        if type(value.get("messageId")) is not str:
            # The old events carried no ids; a RunSession mints them (it knows the open span and message).
            return UnknownEvent(type=kind, raw=value)
        warn("RS-09", f"deprecated {kind} read as {modern}", event_type=kind, once=("type", kind))
        value = {**value, "type": modern}
        if modern == "REASONING_MESSAGE_START":
            value.setdefault("role", "reasoning")
        # (read as the event it now is, on the path every event takes: its shapes paid as theirs are)
        return decode_value(value, allowance=allowance)
    return _structure(value, cls, event_type=kind)  # type: ignore[no-any-return]


# The hint for a short type is remembered (a stream repeats its unknown types); a longer one is worked
# out each time, as each remembered type is held for the life of the process: 256 types of a megabyte,
# each within max_event_bytes, stayed held long after their runs. No wire type is half this long.
_REMEMBERED_TYPE: Final = 64


@lru_cache(maxsize=256)
def _near_miss(kind: str) -> str | None:
    return _spelled_like(kind)


def _spelled_like(kind: str) -> str | None:
    # Spelling (textMessageContent, text-message-content), stray spaces, a cut or extended name
    # (RUN_FINISH): cheap string tests, as this runs for every unknown event a stream sends.
    squashed = kind.strip().replace("_", "").replace("-", "").replace(" ", "").lower()
    if len(squashed) < 6:
        return None
    found = None
    for known in EVENT_TYPES:
        plain = known.replace("_", "").lower()
        if plain == squashed:
            return known
        if found is None and (plain.startswith(squashed) or squashed.startswith(plain)):
            found = known
    return found


def decode(value: Any, cls: type[T]) -> T:
    """Structure already-parsed wire JSON into ``cls`` (``RunAgentInput``, ``Interrupt``, a message …).

    Raises:
        DecodeError: the value does not fit ``cls``; ``pointer`` names the field.
    """
    fast = _derived.reader(cls)
    if fast is not None:
        try:
            return fast(value)  # type: ignore[no-any-return]
        except NewShape:  # (outside a response's read: this read pays for what it compiles)
            try:
                return shapes.charged(Allowance(), fast, value)  # type: ignore[no-any-return]
            except Fallback:
                pass
        except Fallback:
            pass
    return _structure(value, cls)  # type: ignore[no-any-return]


def checked_usage(event: ev.RunFinishedEvent | ev.RunErrorEvent,
                  sink: WarningSink | None = None) -> ev.RunFinishedEvent | ev.RunErrorEvent:
    """``event`` with its usage checked as the decoder checks the wire's (for an event built in Python,
    which never met the decoder): entries the schema refuses dropped, a part exceeding its total
    reported. Warnings go to ``sink`` (else the active sink, or :mod:`warnings`).
    """
    if event.usage is None:
        return event
    check = CHECKS[type(event)]
    if sink is not None:
        with collect_warnings(sink):
            kept = check({"type": event.TYPE, "usage": encode(event.usage)}, warn)
    else:
        kept = check({"type": event.TYPE, "usage": encode(event.usage)}, warn)
    if kept is None:
        return event
    usage = kept.get("usage")
    return attrs.evolve(event, usage=None if usage is None else decode(usage, tuple[rn.TokenUsage, ...]))


def encode(obj: Any) -> Any:
    """Any wire type (or a sequence of them) -> JSON-ready data: camelCase keys, absent fields left out.

    What a relay re-emits (``f"data: {json.dumps(encode(event))}\\n\\n"``); :func:`decode_event` reads it back.

    Example::

        from agui_client import TextMessageContentEvent, encode

        print(encode(TextMessageContentEvent(message_id="m1", delta="Hi")))
        # {'type': 'TEXT_MESSAGE_CONTENT', 'messageId': 'm1', 'delta': 'Hi'}
    """
    return _converter.unstructure(obj)
