"""The component's export: the WIT `tool` interface over the module's
`@tool` function. `toolhost-py build` makes the entry module import this."""

from __future__ import annotations

import gc
import json

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import types

from . import Context, Declared, Failed, ToolError, declared, describe_exception


def _capability(word: str) -> types.Capability:
    if word == "workspace:read":
        return types.Capability_WorkspaceRead()
    if word == "workspace:write":
        return types.Capability_WorkspaceWrite()
    if word == "commands":
        return types.Capability_Commands()
    if word.startswith("service:"):
        return types.Capability_Service(word.partition(":")[2])
    # `dir:NAME:read|write` (network hosts are gathered into one capability by `_info`)
    name, _, access = word.partition(":")[2].partition(":")
    return types.Capability_Directory(types.DirectoryAccess(name, access == "write"))


def _info(tool: Declared) -> types.ToolInfo:
    caps = [_capability(w) for w in tool.capabilities if not w.startswith("network:")]
    hosts = [w.partition(":")[2] for w in tool.capabilities if w.startswith("network:")]
    if hosts:
        caps.append(types.Capability_Network(hosts))
    return types.ToolInfo(
        name=tool.name,
        description=tool.description,
        input_schema=json.dumps(tool.input_schema),
        output_schema=None if tool.output_schema is None else json.dumps(tool.output_schema),
        sensitive=tool.sensitive,
        capabilities=caps,
        version=tool.version,
        title=tool.title,
        idempotent=tool.idempotent,
    )


def _error(err: BaseException) -> types.ToolError:
    if not isinstance(err, ToolError):
        # A MemoryError is reported as it is: the host says `out_of_memory`
        # when it refused the tool memory.
        err = Failed(describe_exception(err))
    if err.kind == "invalid-input":
        return types.ToolError_InvalidInput(err.message)
    if err.kind == "retry":
        return types.ToolError_Retry(err.message)
    if err.kind == "denied":
        return types.ToolError_Denied(err.message)
    return types.ToolError_Failed(types.Failure(err.message, err.hint))


# Made when the component is built (componentize-py runs the module then),
# so a module without exactly one @tool, or with a schema that is not JSON,
# fails the build instead of the host's first `describe`.
_TOOL = declared()
_INFO = _info(_TOOL)


class Tool(exports.Tool):
    def describe(self) -> types.ToolInfo:
        return _INFO

    def call(self, args: str, ctx: types.CallContext) -> types.ToolOutput:
        try:
            out = _TOOL.invoke(args, Context(ctx, _TOOL.dirs))
            structured = None if out.structured is None else json.dumps(out.structured, ensure_ascii=False)
            return types.ToolOutput(out.content, structured, out.changed_paths)
        except BaseException as err:  # every failure is a result, never a trap (SystemExit too)
            raise Err(_error(err)) from None


# Every call runs in a fresh instance of the heap snapshotted here. Collect
# once now, then move every object that survives to the permanent
# generation: a call's collections then look only at what the call made,
# instead of writing into objects all over the snapshot's heap (each such
# write is a page copied for that call alone).
gc.collect()
gc.freeze()
