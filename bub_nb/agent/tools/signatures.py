"""JSON schemas from Python signatures and docstrings, so a plain function can be offered as a tool."""

from __future__ import annotations

import enum
import inspect
import json
import re
import types
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

from bub_nb.errors import ToolError


def parameters_schema(
    function: Callable[..., Any], documented: Mapping[str, str] | None = None, *, context_type: type | None = None
) -> tuple[dict[str, Any], str | None]:
    """The JSON schema of a function's parameters, and the name of its ``context_type`` parameter if any."""
    documented = documented or {}
    signature = inspect.signature(function)
    try:
        hints = get_type_hints(function, include_extras=True)
    except Exception:  # a hint naming something the function's module cannot resolve
        hints = {}
    properties: dict[str, Any] = {}
    required: list[str] = []
    context_parameter = None
    open_ended = False
    for parameter in signature.parameters.values():
        hint = hints.get(parameter.name, parameter.annotation)
        if isinstance(hint, str):
            hint = _resolved(hint, function)
        if parameter.kind is parameter.VAR_KEYWORD:
            open_ended = True
            continue
        if parameter.kind is parameter.VAR_POSITIONAL:
            continue
        if context_type is not None and (
            hint is context_type or (isinstance(hint, str) and hint.rsplit(".", 1)[-1] == context_type.__name__)
        ):
            context_parameter = parameter.name
            continue
        schema = type_schema(hint)
        if schema is None:
            shown = hint.__qualname__ if isinstance(hint, type) else str(hint)
            raise ToolError(
                f"Parameter {parameter.name!r} of {getattr(function, '__qualname__', function)!r} is annotated "
                f"{shown}, which has no JSON schema: a model can only send JSON (str, int, float, bool, list, "
                "dict, Literal, Enum); take a name or a value and look the object up in the function"
            )
        if parameter.name in documented:
            schema = {**schema, "description": documented[parameter.name]}
        if parameter.default is parameter.empty:
            required.append(parameter.name)
        elif _is_json(parameter.default):
            schema["default"] = parameter.default
        properties[parameter.name] = schema
    schema = {"type": "object", "properties": properties, "required": required}
    if not open_ended:
        schema["additionalProperties"] = False
    return schema, context_parameter


_SCALARS: dict[Any, str] = {str: "string", bool: "boolean", int: "integer", float: "number", type(None): "null"}


def type_schema(hint: Any) -> dict[str, Any] | None:
    """The JSON schema of one type hint: ``{}`` (anything) for no hint or ``Any``; ``None`` when JSON cannot
    carry it (a DataFrame, a class of the notebook's), so no tool takes an argument the model cannot send."""
    if hint is inspect.Parameter.empty or hint is Any or hint is object:
        return {}
    origin, args = get_origin(hint), get_args(hint)
    if origin is Annotated:
        schema = type_schema(args[0])
        notes = [note for note in args[1:] if isinstance(note, str)]
        return {**schema, "description": notes[0]} if notes and schema is not None else schema
    if origin in (Union, types.UnionType):
        found = [type_schema(arg) for arg in args if arg is not type(None)]
        if any(option is None for option in found):
            return None
        options = [option for option in found if option is not None]
        nullable = len(options) < len(args)
        if len(options) == 1 and isinstance(options[0].get("type"), str) and nullable:
            return {**options[0], "type": [options[0]["type"], "null"]}
        return {"anyOf": options + ([{"type": "null"}] if nullable else [])}
    if origin is Literal:
        kinds = {_SCALARS.get(type(arg)) for arg in args}
        return (
            {"type": kinds.pop(), "enum": list(args)} if len(kinds) == 1 and None not in kinds else {"enum": list(args)}
        )
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return {"enum": [member.value for member in hint]}
    container = origin or hint
    if container in (list, tuple, set, frozenset) or _is_abc(container, "Sequence", "Set", "Iterable"):
        item = args[0] if args and args[0] is not Ellipsis else None
        if item is None:
            return {"type": "array"}
        items = type_schema(item)
        return {"type": "array", "items": items} if items is not None else None
    if container is dict or _is_abc(container, "Mapping"):
        if len(args) != 2:
            return {"type": "object"}
        values = type_schema(args[1])
        return {"type": "object", "additionalProperties": values} if values is not None else None
    return None


def _resolved(hint: str, function: Callable[..., Any]) -> Any:
    """One string annotation evaluated where the function was defined; the string itself if it names nothing."""
    try:
        return eval(hint, dict(getattr(function, "__globals__", {})))  # an annotation, as get_type_hints evaluates it
    except Exception:
        return hint


def _is_abc(container: Any, *names: str) -> bool:
    return getattr(container, "__module__", "") == "collections.abc" and getattr(container, "__name__", "") in names


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


_PARAMETER_SECTIONS = {"args", "arguments", "parameters", "params", "keyword args", "keyword arguments"}
_ENTRY = re.compile(r"^\**(?P<name>\w+)\s*(?:\((?P<kind>[^)]*)\))?\s*(?::\s*(?P<rest>.*))?$")


def parse_docstring(docstring: str) -> tuple[str, dict[str, str]]:
    """A docstring's summary and its parameter descriptions (Google ``Args:`` or NumPy ``Parameters``)."""
    lines = inspect.cleandoc(docstring).splitlines()
    sections: list[tuple[str, bool, list[str]]] = []  # (header, numpy style, body)
    summary: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        underline = index + 1 < len(lines) and re.fullmatch(r"\s*-{3,}\s*", lines[index + 1]) is not None
        if line and not line[0].isspace() and (underline or re.fullmatch(r"[A-Z][\w ]*:\s*", line)):
            sections.append((line.strip().rstrip(":").lower(), underline, []))
            index += 2 if underline else 1
            continue
        (sections[-1][2] if sections else summary).append(line)
        index += 1
    documented: dict[str, str] = {}
    for header, numpy, body in sections:
        if header in _PARAMETER_SECTIONS:
            documented.update(_parameter_descriptions(body, numpy))
    return "\n".join(summary).strip(), documented


def _parameter_descriptions(body: list[str], numpy: bool) -> dict[str, str]:
    indents = [len(line) - len(line.lstrip()) for line in body if line.strip()]
    base = min(indents, default=0)
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in body:
        if not line.strip():
            continue
        entry = _ENTRY.match(line.strip()) if len(line) - len(line.lstrip()) == base else None
        if entry:
            current = found.setdefault(entry["name"], [])
            if not numpy and entry["rest"]:
                current.append(entry["rest"].strip())
        elif current is not None:
            current.append(line.strip())
    return {name: " ".join(words) for name, words in found.items() if words}
