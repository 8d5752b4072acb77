"""Tools the model may call: plain Python functions with a JSON schema, kept in a registry."""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import inspect
import json
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

from bub_nb.agent.tools.signatures import parameters_schema, parse_docstring
from bub_nb.errors import ToolCallError, ToolError

if TYPE_CHECKING:
    from bub_nb.tape import Tape

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a tool may need besides its arguments; handed to a parameter annotated ``ToolContext``."""

    tape: Tape | None = None
    state: Mapping[str, Any] = field(default_factory=dict)

    def require_tape(self) -> Tape:
        """The tape a tape or memory tool works on; a context without one is the caller's mistake, said in a line."""
        if self.tape is None:
            raise ToolError("This tool works on a tape; call it with ToolContext(tape=...)")
        return self.tape


@dataclass(frozen=True, slots=True)
class Tool:
    """One callable tool. ``name`` may contain dots (``tape.handoff``); models see them as underscores."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    handler: Callable[..., Any]
    context_parameter: str | None = None
    #: Where the tool comes from when that is worth keeping on the tape with each call (an MCP server's
    #: ``{"mcp": {"server", "tool", "protocol"}}``); the recorder writes it into the call entry's ``meta``.
    origin: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ToolError(f"Tool name {self.name!r} must be 1-64 letters, digits, '_', '-' or '.'")

    @property
    def model_name(self) -> str:
        """The name models call it by: OpenAI function names cannot contain dots."""
        return self.name.replace(".", "_")

    def schema(self) -> dict[str, Any]:
        """The OpenAI tool schema."""
        function = {"name": self.model_name, "description": self.description, "parameters": dict(self.parameters)}
        return {"type": "function", "function": function}

    def validate(self, arguments: str | Mapping[str, Any] | None) -> dict[str, Any]:
        """Arguments as a dict that fits the schema, else :class:`ToolCallError` saying what is wrong."""
        if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
            arguments = {}
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError as exc:
                message = f"Tool {self.name!r} got arguments that are not JSON: {arguments!r} ({exc})"
                raise ToolCallError(self.name, "invalid_input", message) from exc
        if not isinstance(arguments, Mapping):
            message = f"Tool {self.name!r} needs a JSON object of arguments, got {arguments!r}"
            raise ToolCallError(self.name, "invalid_input", message)
        problem = _schema_problem(self.parameters, arguments)
        if problem is not None:
            raise ToolCallError(self.name, "invalid_input", f"Tool {self.name!r} got invalid {problem}")
        return dict(arguments)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the function itself, so a decorated function still works as one."""
        return self.handler(*args, **kwargs)

    async def run(self, arguments: str | Mapping[str, Any] | None = None, context: ToolContext | None = None) -> Any:
        """Validate the arguments, run the tool (awaiting a coroutine) and return its result.

        A synchronous function runs on a worker thread, so a slow one never holds up an interrupt.
        """
        with self._failures():
            if inspect.iscoroutinefunction(self.handler):
                result = self._start(arguments, context)
            else:
                from bub_nb.agent.tools.worker import in_worker

                result = await in_worker(self._start, arguments, context, name=self.name)
            return await result if inspect.isawaitable(result) else result

    def run_sync(self, arguments: str | Mapping[str, Any] | None = None, context: ToolContext | None = None) -> Any:
        """:meth:`run` from synchronous code; only a coroutine tool needs an event loop."""
        with self._failures():
            result = self._start(arguments, context)
            if inspect.isawaitable(result):
                from bub_nb.agent.eventloop import run_sync

                return run_sync(_awaited(result))
            return result

    def _start(self, arguments: str | Mapping[str, Any] | None, context: ToolContext | None) -> Any:
        values = self.validate(arguments)
        if self.context_parameter:
            values[self.context_parameter] = context if context is not None else ToolContext()
        return self.handler(**values)

    @contextlib.contextmanager
    def _failures(self) -> Iterator[None]:
        try:
            yield
        except ToolCallError:
            raise
        except ToolError as exc:
            raise ToolCallError(self.name, "tool", f"Tool {self.name!r} failed: {exc}") from exc
        except Exception as exc:
            message = f"Tool {self.name!r} failed: {type(exc).__name__}: {exc}"
            raise ToolCallError(self.name, "tool", message) from exc


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


class _NoRemoteReferences(dict[str, Callable[[str], Any]]):
    """fastjsonschema's handlers for fetching a ``$ref``, one for every URI scheme, each refusing: without them it
    opens the URL (``http:``, ``file:``) with urllib. A schema from a server or a model never causes I/O."""

    def __contains__(self, scheme: object) -> bool:
        return True

    def __getitem__(self, scheme: str) -> Callable[[str], Any]:
        return _refuse_remote


def _refuse_remote(uri: str) -> Any:
    import fastjsonschema

    raise fastjsonschema.JsonSchemaDefinitionException(
        f"$ref {uri[:120]!r} points outside the schema; only references inside it ('#/...') are followed"
    )


NO_REMOTE_REFERENCES = _NoRemoteReferences()


def compile_schema(schema: Any) -> Callable[[Any], Any]:
    """A validator for ``schema`` (fastjsonschema), following only its own ``#/...`` references, never a URL or a
    file; a schema needing more raises ``JsonSchemaDefinitionException``."""
    import fastjsonschema

    return fastjsonschema.compile(schema, handlers=NO_REMOTE_REFERENCES)


@functools.lru_cache(maxsize=256)
def _validator(schema_json: str) -> Callable[[Any], Any]:
    # fastjsonschema compiles each schema once into plain Python; importing jsonschema instead costs
    # seconds where rfc3987-syntax is installed (as it is beside JupyterLab).
    return compile_schema(json.loads(schema_json))


def _schema_problem(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> str | None:
    """What is wrong with ``arguments`` under ``schema``, naming the field and value; ``None`` when they fit."""
    import fastjsonschema

    try:
        _validator(json.dumps(schema, sort_keys=True, default=str))(dict(arguments))
    except fastjsonschema.JsonSchemaValueException as exc:
        return _describe(exc)
    return None


def _describe(exc: Any) -> str:
    where = str(exc.name).removeprefix("data").lstrip(".") or "arguments"
    value, rule, definition = exc.value, exc.rule, exc.definition or {}
    match rule:
        case "type":
            expected = definition.get("type")
            shown = ", ".join(map(repr, expected)) if isinstance(expected, list) else repr(expected)
            problem = f"{value!r} is not of type {shown}"
        case "enum":
            problem = f"{value!r} is not one of {definition.get('enum')!r}"
        case "required":
            missing = [name for name in definition.get("required", ()) if name not in value]
            return f"arguments: {missing[0] if missing else where!r} is a required property"
        case "additionalProperties":
            extra = sorted(set(value) - set(definition.get("properties", {})))
            return f"arguments: {', '.join(map(repr, extra))} {'was' if len(extra) == 1 else 'were'} unexpected"
        case "maxLength" | "maxItems":
            problem = f"{value!r} is too long"
        case "minLength" | "minItems":
            problem = f"{value!r} is too short"
        case _:
            problem = re.sub(r"^data\S*", repr(value), str(exc.message))
    return f"{where}: {problem}"


class ToolRegistry:
    """Tools by name. A name registered again replaces the earlier tool (re-running a cell is normal)."""

    def __init__(self, tools: Iterable[Tool | Callable[..., Any]] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for item in tools:
            self.register(item)

    def register(self, item: Tool | Callable[..., Any]) -> Tool:
        """Add a :class:`Tool`, or a plain function made into one with :func:`tool`."""
        made = item if isinstance(item, Tool) else tool(item)
        self._tools[made.model_name] = made
        return made

    def get(self, name: str) -> Tool:
        """The tool called ``name``, dotted (``tape.info``) or as models spell it (``tape_info``)."""
        found = self._tools.get(name.replace(".", "_"))
        if found is None:
            message = f"Unknown tool {name!r}; known tools: {', '.join(self.names) or '(none)'}"
            raise ToolCallError(name, "not_found", message)
        return found

    @property
    def names(self) -> list[str]:
        return [item.name for item in self._tools.values()]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.replace(".", "_") in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    def origins(self, names: Iterable[str]) -> list[Mapping[str, Any] | None]:
        """Each named tool's :attr:`Tool.origin` (``None`` for a tool without one or a name no tool has)."""
        return [found.origin if (found := self._tools.get(name.replace(".", "_"))) else None for name in names]

    def schemas(self) -> list[dict[str, Any]]:
        """OpenAI tool schemas, names underscored."""
        return [item.schema() for item in self._tools.values()]

    def select(self, names: Iterable[str]) -> ToolRegistry:
        """A registry with only these tools; a name may be a glob such as ``memory.*``."""
        chosen: dict[str, Tool] = {}
        for pattern in names:
            matches = [item for item in self._tools.values() if _matches(item, pattern)]
            if not matches:
                self.get(pattern)  # raises, naming the known tools
            chosen.update((item.model_name, item) for item in matches)
        return ToolRegistry(chosen.values())

    async def call(
        self, name: str, arguments: str | Mapping[str, Any] | None = None, context: ToolContext | None = None
    ) -> Any:
        """Run a tool by name; every failure is a :class:`ToolCallError` the loop can send back."""
        return await self.get(name).run(arguments, context)

    def call_sync(
        self, name: str, arguments: str | Mapping[str, Any] | None = None, context: ToolContext | None = None
    ) -> Any:
        """:meth:`call` from synchronous code, also inside a running event loop."""
        return self.get(name).run_sync(arguments, context)


def _matches(item: Tool, pattern: str) -> bool:
    return fnmatch.fnmatchcase(item.name, pattern) or fnmatch.fnmatchcase(item.model_name, pattern)


# -- making tools from functions ---------------------------------------------------------------


@overload
def tool(function: Callable[..., Any], /) -> Tool: ...
@overload
def tool(*, name: str | None = None, description: str | None = None) -> Callable[[Callable[..., Any]], Tool]: ...
def tool(
    function: Callable[..., Any] | None = None, /, *, name: str | None = None, description: str | None = None
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a :class:`Tool` of a function, bare (``@tool``) or configured (``@tool(name="math.add")``).

    The schema comes from the type hints: ``str``, ``int``, ``float``, ``bool``, ``list[...]``,
    ``dict[str, ...]``, ``Literal[...]``, enums, ``X | None``; a parameter without a default is
    required. The description and each parameter's description come from the docstring's summary
    and its Google (``Args:``) or NumPy (``Parameters``) section. A parameter annotated
    :class:`ToolContext` receives the call's context and is hidden from the schema.
    """

    def make(target: Callable[..., Any]) -> Tool:
        summary, documented = parse_docstring(inspect.getdoc(target) or "")
        parameters, context_parameter = parameters_schema(target, documented, context_type=ToolContext)
        label = name or str(getattr(target, "__name__", ""))
        text = description or summary or label
        return Tool(label, text, parameters, target, context_parameter)

    return make if function is None else make(function)
