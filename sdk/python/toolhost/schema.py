"""JSON Schemas derived from Python type hints, and the conversion of a
call's JSON arguments into the values those hints name.

Supported: ``str``, ``int``, ``float``, ``bool``, ``list[T]``,
``dict[str, T]``, ``Optional[T]`` / ``T | None``, ``Literal[...]``,
``enum.Enum`` subclasses, dataclasses and ``TypedDict`` classes.
``Annotated[T, "description"]`` describes a member; so does an
``Args:`` (function) or ``Attributes:`` (class) section of a docstring.
Pure Python: no host import, so it also runs natively.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import enum
import inspect
import json
import re
import types
import typing
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

_MISSING = object()
#: The default of a TypedDict member that may be left out: when it is, the key is absent.
_ABSENT = object()
_WRAPPERS = tuple(getattr(typing, n) for n in ("Required", "NotRequired", "ReadOnly") if hasattr(typing, n))


class SchemaError(TypeError):
    """A type hint that has no JSON Schema here."""


class ArgumentError(ValueError):
    """Arguments that do not fit the hints; the message names where."""


def split_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """The text of a docstring before its ``Args:``/``Attributes:`` section,
    and the descriptions that section gives each name."""
    text = inspect.cleandoc(doc or "")
    described: dict[str, str] = {}
    match = re.search(r"^(Args|Arguments|Attributes|Parameters):\s*$", text, re.MULTILINE)
    if not match:
        return text.strip(), described
    head, section = text[: match.start()].strip(), text[match.end() :]
    name = None
    for line in section.splitlines():
        entry = re.match(r"^\s{2,}(\w+)\s*(?:\([^)]*\))?:\s*(.*)$", line)
        if entry and (name is None or len(line) - len(line.lstrip()) <= indent):
            name, indent = entry.group(1), len(line) - len(line.lstrip())
            described[name] = entry.group(2).strip()
        elif name and line.strip():
            if not line.startswith(" "):
                break
            described[name] = f"{described[name]} {line.strip()}".strip()
    return head, described


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__total__")


def _strip_annotated(tp: Any) -> tuple[Any, str | None]:
    """``tp`` without ``Annotated``/``Required``/``NotRequired``, and the
    description ``Annotated`` gave it."""
    if get_origin(tp) in _WRAPPERS:
        return _strip_annotated(get_args(tp)[0])
    if get_origin(tp) is typing.Annotated:
        inner, *extra = get_args(tp)
        text = next((e for e in extra if isinstance(e, str)), None)
        return inner, text
    return tp, None


def _optional_inner(tp: Any) -> Any:
    """``T`` for ``Optional[T]``/``T | None``, else ``_MISSING``."""
    if get_origin(tp) in (Union, types.UnionType):
        members = [a for a in get_args(tp) if a is not type(None)]
        if len(members) == 1 and len(get_args(tp)) == 2:
            return members[0]
    return _MISSING


def schema_of(tp: Any, description: str | None = None) -> dict[str, Any]:
    """The JSON Schema of values of type ``tp``."""
    tp, noted = _strip_annotated(tp)
    description = noted or description
    out: dict[str, Any]
    inner = _optional_inner(tp)
    if inner is not _MISSING:
        out = schema_of(inner)
        out = {"anyOf": [out, {"type": "null"}]}
    elif tp is str:
        out = {"type": "string"}
    elif tp is bool:
        out = {"type": "boolean"}
    elif tp is int:
        out = {"type": "integer"}
    elif tp is float:
        out = {"type": "number"}
    elif tp is Any:
        out = {}
    elif get_origin(tp) is Literal:
        out = {"enum": list(get_args(tp))}
    elif isinstance(tp, type) and issubclass(tp, enum.Enum):
        out = {"enum": [m.value for m in tp]}
    elif get_origin(tp) is tuple and get_args(tp) and get_args(tp)[-1] is not Ellipsis:
        items = [schema_of(a) for a in get_args(tp)]
        out = {"type": "array", "prefixItems": items, "items": False, "minItems": len(items)}
    elif get_origin(tp) in (list, tuple, set, frozenset) or tp in (list, tuple, set):
        args = get_args(tp)
        out = {"type": "array"}
        if args:
            out["items"] = schema_of(args[0])
    elif get_origin(tp) is dict or tp is dict:
        args = get_args(tp)
        out = {"type": "object"}
        if len(args) == 2:
            out["additionalProperties"] = schema_of(args[1])
    elif dataclasses.is_dataclass(tp) or _is_typeddict(tp):
        out = _object_schema(tp)
        description = description or out.pop("description", None)
    else:
        raise SchemaError(
            f"`{getattr(tp, '__name__', tp)}` has no JSON Schema here; use str, int, float, bool, "
            "list, dict, Optional, Literal, an Enum, a dataclass or a TypedDict"
        )
    if description:
        out["description"] = description
    return out


def fields_of(tp: Any) -> list[tuple[str, Any, Any]]:
    """``(name, hint, default)`` of a dataclass's or TypedDict's members;
    ``default`` is ``_MISSING`` for a required one."""
    hints = get_type_hints(tp, include_extras=True)
    if dataclasses.is_dataclass(tp):
        out = []
        for f in dataclasses.fields(tp):
            default = f.default
            if default is dataclasses.MISSING:
                default = _MISSING if f.default_factory is dataclasses.MISSING else f.default_factory()
            out.append((f.name, hints[f.name], default))
        return out
    required = getattr(tp, "__required_keys__", frozenset(hints))
    return [(name, hint, _MISSING if name in required else _ABSENT) for name, hint in hints.items()]


def check_described(described: dict[str, str], names: list[str], where: str) -> None:
    """Refuse a docstring section that describes a name ``where`` does not
    have (a misspelt ``Args:`` entry would otherwise describe nothing)."""
    for name in described:
        if name not in names:
            near = difflib.get_close_matches(name, names, n=1)
            guess = f"; did you mean `{near[0]}`?" if near else ""
            raise SchemaError(
                f"{where}: the docstring describes `{name}`, which it does not have "
                f"(it has: {', '.join(names) or 'nothing'}){guess}"
            )


def object_schema(
    members: list[tuple[str, Any, Any]], described: dict[str, str], description: str | None = None
) -> dict[str, Any]:
    """An object schema with these ``(name, hint, default)`` members."""
    properties: dict[str, Any] = {}
    required = []
    for name, hint, default in members:
        prop = schema_of(hint, described.get(name))
        if default is _MISSING:
            required.append(name)
        elif default is not None and default is not _ABSENT:
            prop["default"] = to_json(default)
            try:
                json.dumps(prop["default"], allow_nan=False)
            except (TypeError, ValueError):
                raise SchemaError(f"the default of `{name}` ({default!r}) cannot be written as JSON") from None
        properties[name] = prop
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = required
    out["additionalProperties"] = False
    if description:
        out["description"] = description
    return out


def _object_schema(tp: Any) -> dict[str, Any]:
    head, described = split_docstring(tp.__doc__ if not _auto_doc(tp) else None)
    fields = fields_of(tp)
    check_described(described, [f[0] for f in fields], getattr(tp, "__name__", str(tp)))
    return object_schema(fields, described, head or None)


def _auto_doc(tp: Any) -> bool:
    """True for the signature dataclasses writes as a docstring when there is none."""
    return bool(tp.__doc__) and tp.__doc__.startswith(f"{tp.__name__}(")


_JSON_KINDS = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"),
               (list, "array"), (dict, "object"))


def _kind(value: Any) -> str:
    """The JSON kind of a decoded value, for messages (bool before int:
    a bool is an int in Python)."""
    if value is None:
        return "null"
    return next((name for tp, name in _JSON_KINDS if isinstance(value, tp)), type(value).__name__)


def convert(tp: Any, value: Any, at: str) -> Any:
    """``value`` (decoded JSON) as a value of type ``tp``; raises
    ``ArgumentError`` naming ``at`` when it does not fit."""
    tp, _ = _strip_annotated(tp)
    where = f"`{at}`"
    inner = _optional_inner(tp)
    if inner is not _MISSING:
        return None if value is None else convert(inner, value, at)
    if tp is Any:
        return value
    if tp is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if tp is int and isinstance(value, float) and value.is_integer():
        return int(value)  # JSON Schema counts 5.0 as an integer, and so does the host
    for simple, name in ((str, "a string"), (bool, "true or false"), (int, "an integer")):
        if tp is simple:
            if isinstance(value, simple) and not (simple is int and isinstance(value, bool)):
                return value
            raise ArgumentError(f"{where} must be {name}, not {_kind(value)}")
    if tp is float:
        raise ArgumentError(f"{where} must be a number, not {_kind(value)}")
    if get_origin(tp) is Literal:
        if value in get_args(tp):
            return value
        raise ArgumentError(f"{where} must be one of {', '.join(map(repr, get_args(tp)))}")
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(value)
        except ValueError:
            raise ArgumentError(f"{where} must be one of {', '.join(repr(m.value) for m in tp)}") from None
    origin = get_origin(tp) or tp
    if origin is tuple and get_args(tp) and get_args(tp)[-1] is not Ellipsis:
        args = get_args(tp)
        if not isinstance(value, list) or len(value) != len(args):
            raise ArgumentError(f"{where} must be an array of {len(args)} items")
        return tuple(convert(a, v, f"{at}[{i}]") for i, (a, v) in enumerate(zip(args, value)))
    if origin in (list, tuple, set, frozenset):
        if not isinstance(value, list):
            raise ArgumentError(f"{where} must be an array, not {_kind(value)}")
        args = get_args(tp)
        items = [convert(args[0], v, f"{at}[{i}]") for i, v in enumerate(value)] if args else value
        return origin(items) if origin is not list else items
    if origin is dict:
        if not isinstance(value, dict):
            raise ArgumentError(f"{where} must be an object, not {_kind(value)}")
        args = get_args(tp)
        return {k: convert(args[1], v, f"{at}.{k}") for k, v in value.items()} if len(args) == 2 else value
    if dataclasses.is_dataclass(tp) or _is_typeddict(tp):
        members = convert_members(fields_of(tp), value, at)
        return tp(**members)
    return value


def convert_members(members: list[tuple[str, Any, Any]], value: Any, at: str = "") -> dict[str, Any]:
    """An object's members converted to their hints, with defaults filled in."""
    if not isinstance(value, dict):
        raise ArgumentError(f"{f'`{at}`' if at else 'the arguments'} must be an object, not {_kind(value)}")
    known = {name for name, _, _ in members}
    for name in value:
        if name not in known:
            listed = ", ".join(f"`{n}`" for n, _, _ in members) or "none"
            raise ArgumentError(f"`{_join(at, name)}` is not an argument of this tool; it takes {listed}")
    out = {}
    for name, hint, default in members:
        if name in value:
            out[name] = convert(hint, value[name], _join(at, name))
        elif default is _MISSING:
            raise ArgumentError(f"`{_join(at, name)}` is missing")
        elif default is not _ABSENT:
            out[name] = copy.deepcopy(default)
    return out


def _join(at: str, name: str) -> str:
    return f"{at}.{name}" if at else name


def to_json(value: Any) -> Any:
    """A structured result (dataclass, enum, TypedDict, ...) as plain JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_json(v) for v in value]
    return value
