"""One tool that walks through the Python SDK: each error kind, a plain
raise, defaults, a write, a read outside the workspace, the broker and
settings. tests/e2e/scaffold.rs builds it and runs sdk_tour.json (and
sdk_tour_python.json: the snapshot's heap, Python's own)."""

import gc
from typing import Annotated, Literal, Optional

from toolhost import Context, Denied, Failed, InvalidInput, Output, Retry, tool

Action = Literal["throw", "fail", "retry", "deny", "invalid", "defaults", "write", "escape", "run", "nothing",
                 "odd-throw", "odd-hint", "snapshot"]


@tool(capabilities=["workspace:write", "commands"], sensitive=True)
def sdk_tour(action: Action, ctx: Context, text: Optional[str] = None,
             times: Annotated[int, "How many times to repeat the text."] = 2) -> Output[dict]:
    """Exercise the toolhost SDK: errors, defaults, files, commands and the log.

    Args:
        text: Text to write or echo.
    """
    ctx.log.info(f"sdk_tour: {action}")
    if action == "throw":
        raise ValueError("it broke")
    if action == "fail":
        raise Failed("it failed", "ask for less")
    if action == "retry":
        raise Retry("look again")
    if action == "deny":
        raise Denied("not allowed here")
    if action == "invalid":
        raise InvalidInput("`text` must not be empty")
    if action == "defaults":
        return Output(f"times={times} text={'none' if text is None else text}")
    if action == "write":
        ctx.write_text("out/a.txt", text * times)
        return Output("wrote out/a.txt", {"written": len(text) * times})
    if action == "escape":
        return Output(ctx.read_text("../outside.txt"))
    if action == "run":
        return Output(ctx.run(["echo", text]).stdout)
    if action == "odd-throw":
        raise SystemExit(3)
    if action == "odd-hint":
        raise Failed("it failed", 42)
    if action == "snapshot":
        # The module's objects were frozen when the component was built;
        # what the call makes is still collected.
        loop: list = []
        loop.append(loop)
        del loop
        return Output("snapshot", {"frozen": gc.get_freeze_count() > 0, "collected": gc.collect() > 0})
    return None
