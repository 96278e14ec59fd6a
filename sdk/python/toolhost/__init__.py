"""The toolhost SDK for Python: declare a tool with a decorated function,
get typed arguments, report the four error kinds, and reach the
workspace, the command broker and the log through the host. Build the
module with ``toolhost-py build`` (componentize-py) into a wasm32-wasip2
component.

    from toolhost import tool, Context

    @tool(capabilities=["workspace:read"])
    def shout(path: str, ctx: Context) -> str:
        \"\"\"Print a text file in capitals.

        Args:
            path: Workspace-relative path of the file.
        \"\"\"
        return ctx.read_text(path).upper()
"""

from __future__ import annotations

import inspect
import json
import os
import re
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, TypeVar, get_args, get_origin, get_type_hints

from . import schema as _schema

__all__ = [
    "tool",
    "Context",
    "Output",
    "ToolError",
    "InvalidInput",
    "Retry",
    "Denied",
    "Failed",
    "DryRun",
    "NotConfirmed",
    "log",
]

GRANT_REMEDY = "--grant TOOL="


class ToolError(Exception):
    """A result that is not a success, of one of the kinds the model acts on."""

    kind = "failed"

    def __init__(self, message: Any, hint: Any = None):
        super().__init__(str(message))
        self.message = str(message)
        self.hint = None if hint is None else str(hint)


class InvalidInput(ToolError):
    """The arguments are wrong: the model fixes its call."""

    kind = "invalid-input"


class Retry(ToolError):
    """A condition the model can correct (a file not found, text not unique)."""

    kind = "retry"


class Denied(ToolError):
    """A policy or a missing grant refused the action."""

    kind = "denied"


class Failed(ToolError):
    """The tool failed for another reason; ``hint`` says what to do next."""

    kind = "failed"


class DryRun(Denied):
    """The broker's answer to a command in a dry run: the message says what
    it would have done, nothing ran. A ``Denied`` if not caught; a tool
    that supports dry runs returns the message instead."""


class NotConfirmed(Denied):
    """A command needed a person's confirmation and did not get it."""


T = TypeVar("T")


@dataclass
class Output(Generic[T]):
    """A result: text for the model and, if the tool has an output schema
    (``-> Output[Counts]``), the structured value."""

    content: str
    structured: T | None = None
    changed_paths: list[str] = field(default_factory=list)


class _Log:
    """Log lines, forwarded by the host to its log (stderr)."""

    def _emit(self, level: str, message: Any) -> None:
        from wit_world.imports import log as host

        host.log(getattr(host.Level, level), str(message))

    def trace(self, message: Any) -> None:
        self._emit("TRACE", message)

    def debug(self, message: Any) -> None:
        self._emit("DEBUG", message)

    def info(self, message: Any) -> None:
        self._emit("INFO", message)

    def warn(self, message: Any) -> None:
        self._emit("WARN", message)

    def error(self, message: Any) -> None:
        self._emit("ERROR", message)


log = _Log()


def _host_error(err: Exception) -> ToolError | None:
    """A host import's error (componentize-py raises ``Err(variant)``) as a
    tool error, or None for anything else."""
    if type(err).__name__ != "Err":
        return None
    value = err.value
    name = type(value).__name__
    kind, message = name.rsplit("_", 1)[-1], getattr(value, "value", str(value))
    if kind in ("NotFound", "Invalid") and name.startswith("FileError"):
        return Retry(message)
    if kind == "NotFound":
        return Retry(message)
    if kind == "DryRun":
        return DryRun(message)
    if kind == "NotConfirmed":
        return NotConfirmed(message)
    if kind == "Denied":
        return Denied(message)
    if kind == "Invalid":
        return InvalidInput(message)
    return Failed(message)


def _normalise(relative: str, prefix: str, escape: str) -> str:
    """``relative`` with ``.`` and ``..`` resolved, under ``prefix``; ``..``
    past its start is refused with ``escape``."""
    parts: list[str] = []
    for part in relative.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                raise Denied(escape)
            parts.pop()
        else:
            parts.append(part)
    if prefix:
        return (prefix + "/".join(parts)).rstrip("/")
    return "/".join(parts) or "."


@dataclass
class Entry:
    """One entry ``Context.walk`` found: ``kind`` is ``file``,
    ``directory``, ``symlink`` or ``other``."""

    path: str
    kind: str
    size: int
    modified_ns: int


class Context:
    """Who is calling and how, and the host services of this call."""

    def __init__(self, wit: Any = None, dirs: tuple[str, ...] = (), **overrides: Any):
        get = lambda name, default=None: overrides.get(name, getattr(wit, name, default))  # noqa: E731
        #: The named directories the tool declares (`dir:NAME:...`).
        self.dirs = tuple(dirs)
        self.call_id: str = get("call_id", "")
        self.agent: str | None = get("agent")
        self.session: str | None = get("session")
        self.channel: str | None = get("channel")
        self.chat: str | None = get("chat")
        #: The workspace root's host path, if the workspace is granted.
        self.workspace_root: str | None = get("workspace_root")
        #: True when the caller asked to describe, not change.
        self.dry_run: bool = bool(get("dry_run", False))
        settings = get("settings", "{}")
        #: This tool's settings from the host configuration.
        self.settings: dict = json.loads(settings) if isinstance(settings, str) else dict(settings)
        #: Paths the call changed; ``write_text`` adds to it.
        self.changed_paths: list[str] = []
        self.log = log

    def path(self, path: str) -> str:
        """``path`` as the host resolves it: workspace-relative (an absolute
        path under the workspace root is made relative), or ``/NAME/...``
        under a directory NAME the tool declares. Paths leading out of
        either are refused."""
        if not isinstance(path, str):
            raise InvalidInput(f"the path must be a string, not {type(path).__name__}")
        given = path.strip()
        if not given:
            raise InvalidInput(
                "the path is empty; give a path relative to the workspace root, e.g. `src/main.py`"
            )
        root = self.workspace_root.rstrip("/") if self.workspace_root else None
        no_workspace = Denied(
            "this tool was not granted access to the workspace; a person can grant it with "
            f"`{GRANT_REMEDY}workspace:read` (or workspace:write)"
        )
        if not given.startswith("/"):
            if not root:
                raise no_workspace
            return _normalise(given, "", f"`{given}` leads outside the workspace; only paths under the workspace root are allowed")
        if root and (given == root or given.startswith(root + "/")):
            return _normalise(given[len(root):], "", f"`{given}` leads outside the workspace")
        name = given.split("/")[1]
        if name in self.dirs:
            return _normalise(given[len(name) + 1:], f"/{name}/", f"`{given}` leads outside the directory /{name}")
        if not root:
            raise no_workspace
        raise Denied(f"`{given}` is outside the workspace; give a path relative to the workspace root")

    def read_bytes(self, path: str, max_bytes: int = 64 * 1024 * 1024) -> bytes:
        """The bytes of a file, at most ``max_bytes``."""
        from wit_world.imports import files

        at = self.path(path)
        try:
            return files.read(at, max_bytes)
        except Exception as err:
            raise (_host_error(err) or err) from None

    def read_text(self, path: str, max_bytes: int = 64 * 1024 * 1024) -> str:
        """A UTF-8 text file's content; other bytes are refused as invalid input."""
        data = self.read_bytes(path, max_bytes)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInput(f"`{self.path(path)}` is not UTF-8 text") from None

    def write_text(self, path: str, text: str) -> None:
        """Replace or create a file atomically (parents are created); the
        path is added to ``changed_paths``."""
        from wit_world.imports import files

        at = self.path(path)
        try:
            files.write_atomic(at, str(text).encode("utf-8"))
        except Exception as err:
            raise (_host_error(err) or err) from None
        if not at.startswith("/"):
            self.changed_paths.append(at)

    def walk(self, path: str = ".", respect_ignore: bool = True, hidden: bool = False,
             max_depth: int | None = None, metadata: bool = False) -> list[Entry]:
        """The tree under a directory as ripgrep walks it."""
        from wit_world.imports import files

        at = self.path(path)
        try:
            found = files.walk(at, files.WalkOptions(respect_ignore, hidden, max_depth, metadata))
        except Exception as err:
            raise (_host_error(err) or err) from None
        return [Entry(e.path, e.kind.name.lower(), e.size, e.modified_ns) for e in found]

    def call_service(self, name: str, input: Any = None) -> Any:
        """Call the embedding application's service ``name`` (declared as
        ``service:NAME`` and granted) with ``input``; its JSON answer."""
        from wit_world.imports import services

        try:
            answer = services.call(str(name), json.dumps({} if input is None else input))
        except Exception as err:
            raise (_host_error(err) or err) from None
        return json.loads(answer)

    def run(self, command: str | list[str] | tuple[str, ...], cwd: str | None = None,
            timeout_ms: int | None = None, env: dict[str, str] | None = None) -> Any:
        """Run a command through the host's broker: an argument list (run
        directly: a list or tuple) or a shell line (a str). Returns an object with ``exit_code``,
        ``stdout``, ``stderr``, ``timed_out``, ``truncated``,
        ``duration_ms``. Needs the ``commands`` capability."""
        from wit_world.imports import commands

        program = (
            commands.Program_Argv([str(a) for a in command])
            if not isinstance(command, str)
            else commands.Program_Shell(command)
        )
        request = commands.CommandRequest(program, cwd, timeout_ms, [(k, str(v)) for k, v in (env or {}).items()])
        try:
            return commands.run(request)
        except Exception as err:
            raise (_host_error(err) or err) from None


_CAPABILITY_WORDS = (
    "use workspace:read, workspace:write, commands, network:HOST, dir:NAME:read, dir:NAME:write "
    "or service:NAME"
)


def _check_capabilities(words: list[str]) -> list[str]:
    for word in words:
        kind, _, rest = word.partition(":")
        ok = word in ("workspace:read", "workspace:write", "commands") or (
            kind == "network" and rest
        ) or (kind == "dir" and rest.count(":") == 1 and rest.split(":")[1] in ("read", "write") and rest.split(":")[0]) or (
            kind == "service" and re.fullmatch(r"[a-z][a-z0-9_.-]*", rest) is not None
        )
        if not ok:
            raise ValueError(f"capability `{word}`: {_CAPABILITY_WORDS}")
    return list(words)


@dataclass
class Declared:
    """A tool as ``@tool`` declared it."""

    name: str
    description: str
    input_schema: dict
    output_schema: dict | None
    capabilities: list[str]
    sensitive: bool
    idempotent: bool
    title: str | None
    version: str
    members: list
    context_param: str | None
    structured_type: Any
    function: Callable

    def invoke(self, args_text: str, ctx: Context) -> Output:
        """Run the tool on JSON arguments: parse, call, shape the result.
        Raises ToolError (or whatever the function raises)."""
        try:
            raw = json.loads(args_text)
            args = _schema.convert_members(self.members, raw)
        except (ValueError, TypeError) as err:
            raise InvalidInput(str(err)) from None
        if self.context_param:
            args[self.context_param] = ctx
        result = self.function(**args)
        if isinstance(result, str):
            return Output(result, None, list(ctx.changed_paths))
        if isinstance(result, Output):
            if not isinstance(result.content, str):
                raise Failed(f"Output.content must be a str, not {type(result.content).__name__}")
            extra = result.changed_paths
            if not isinstance(extra, (list, tuple)) or not all(isinstance(p, str) for p in extra):
                raise Failed("Output.changed_paths must be a list of workspace-relative paths (str)")
            changed = list(dict.fromkeys([*ctx.changed_paths, *extra]))
            return Output(result.content, _json_value(result.structured), changed)
        if result is not None and self.output_schema is not None:
            structured = _json_value(result)
            return Output(json.dumps(structured, ensure_ascii=False), structured, list(ctx.changed_paths))
        raise Failed(
            f"the tool returned {type(result).__name__}",
            "a tool returns a str, an Output(content, structured), or a value of its return type",
        )

    @property
    def dirs(self) -> tuple[str, ...]:
        """The named directories the tool declares."""
        return tuple(w.split(":")[1] for w in self.capabilities if w.startswith("dir:"))


def _json_value(value: Any) -> Any:
    """A structured result as plain JSON values; ``Failed`` if it has none
    (a set of objects, NaN, a value json cannot write)."""
    plain = _schema.to_json(value)
    try:
        json.dumps(plain, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise Failed(f"the structured result is not JSON: {err}") from None
    return plain


_declared: list[Declared] = []


def tool(
    function: Callable | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    capabilities: list[str] | None = None,
    sensitive: bool = False,
    idempotent: bool = False,
    title: str | None = None,
    version: str = "0.1.0",
) -> Any:
    """Declare the function as the module's tool.

    The name defaults to the function's; the description to its
    docstring (before ``Args:``); the input schema comes from its
    parameters' type hints, defaults and ``Args:`` descriptions; the output
    schema from its return hint (``-> Output[Counts]`` or ``-> Counts`` for
    a dataclass or TypedDict ``Counts``; ``-> str`` for text only). A
    parameter annotated ``Context`` receives the call's context.
    Capabilities are the words of ``--grant``: ``workspace:read``, ...
    """

    def declare(fn: Callable) -> Callable:
        hints = get_type_hints(fn, include_extras=True)
        head, described = _schema.split_docstring(fn.__doc__)
        members = []
        context_param = None
        for param in inspect.signature(fn).parameters.values():
            hint = hints.get(param.name)
            if hint is Context:
                context_param = param.name
                continue
            if hint is None:
                raise TypeError(f"@tool {fn.__name__}: parameter `{param.name}` needs a type hint")
            default = _schema._MISSING if param.default is inspect.Parameter.empty else param.default
            members.append((param.name, hint, default))
        _schema.check_described(
            {k: v for k, v in described.items() if k != context_param},
            [m[0] for m in members],
            f"@tool {fn.__name__}",
        )
        returned = hints.get("return", str)
        if get_origin(returned) is Output or returned is Output:
            args = get_args(returned)
            structured_type = args[0] if args else None
        else:
            structured_type = None if returned in (str, type(None)) else returned
        output_schema = None if structured_type is None else _schema.schema_of(structured_type)
        if output_schema is not None and output_schema.get("type") != "object":
            raise TypeError(
                f"@tool {fn.__name__}: the return hint must give an object (a dataclass, a TypedDict "
                "or a dict) as Output[T] or T, or be str: MCP clients take only object output schemas"
            )
        _declared.append(
            Declared(
                name=name or fn.__name__,
                description=description or head,
                input_schema=_schema.object_schema(members, described),
                output_schema=output_schema,
                capabilities=_check_capabilities(capabilities or []),
                sensitive=sensitive,
                idempotent=idempotent,
                title=title,
                version=version,
                members=members,
                context_param=context_param,
                structured_type=structured_type,
                function=fn,
            )
        )
        return fn

    return declare(function) if function is not None else declare


_SDK = os.path.dirname(os.path.abspath(__file__))


def describe_exception(err: BaseException) -> str:
    """An exception as the tool's author needs it: its type, its message,
    and the frames of the tool's own code (not the SDK's), innermost last.
    What a call that raised anything but a ``ToolError`` fails with."""
    try:
        text = str(err)
    except BaseException:  # a __str__ that raises
        text = ""
    out = f"{type(err).__name__}: {text}" if text else type(err).__name__
    frames = [
        f for f in traceback.extract_tb(err.__traceback__)
        if not os.path.abspath(f.filename).startswith(_SDK + os.sep)
    ]
    if frames:
        out += "\nTraceback (the tool's own frames, innermost last):"
        for f in frames:
            out += f"\n  {os.path.basename(f.filename)}, line {f.lineno}, in {f.name}"
            if f.line:
                out += f": {f.line.strip()}"
    return out


def declared() -> Declared:
    """The tool the module declared; an error saying what to do if there is
    not exactly one."""
    if len(_declared) != 1:
        found = ", ".join(d.name for d in _declared) or "none"
        raise RuntimeError(f"a component holds exactly one @tool function; found {found}")
    return _declared[0]
