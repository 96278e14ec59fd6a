"""toolhost served to the official Python MCP SDK (the `mcp` package).

Usage: python_sdk.py TOOLHOST_BINARY stdio|http [legacy|current]

`legacy` pins the previous revision (2025-11-25, the initialize handshake,
sessions, elicitation); `current` is the SDK's default (2026-07-28,
stateless, confirmations as input-required round trips).

Run by the e2e test `interop::the_official_python_sdk_*` (which .ci/run makes
possible by installing `mcp` and `jsonschema` from PyPI). Everything the
server needs lives in temporary directories; a web server for web_fetch is
started here on 127.0.0.1. Exits non-zero, saying why, on the first failure.
"""

import http.server
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import anyio
import jsonschema
from mcp import Client, types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

# How long the client waits without news: shorter than the command below, so
# only progress notifications (at least every 5 s) keep the call alive.
QUIET_LIMIT = 8.0
LONG_COMMAND = "sleep 12; echo finished"


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


class Warnings(logging.Handler):
    """Every warning the SDK logs (e.g. a schema it cannot use)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.seen = []

    def emit(self, record):
        self.seen.append(record.getMessage())


def page_server():
    """A web page on 127.0.0.1 for web_fetch."""

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = b"<html><body><h1>Interop</h1><p>served locally</p></body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def sample_calls(page_url):
    """One valid call per built-in; a tool missing here fails the run, so a
    new built-in gets a sample call (and its structuredContent is checked)."""
    return {
        "read_file": {"path": "a.txt"},
        "write_file": {"path": "written.txt", "content": "one\ntwo\n"},
        "edit_file": {"path": "edit.txt", "old_str": "old", "new_str": "new"},
        "multi_edit": {"path": "multi.txt", "edits": [{"old_str": "x", "new_str": "y"}]},
        "apply_patch": {
            "patch": "--- a/patch.txt\n+++ b/patch.txt\n@@ -1 +1 @@\n-before\n+after\n"
        },
        "delete_file": {"path": "doomed.txt"},
        "list_files": {},
        "list_dirs": {},
        "list_dir": {"recursive": True},
        "find_files": {"pattern": "*.txt"},
        "grep": {"pattern": "hello"},
        "search_code": {"pattern": "hello"},
        "get_datetime": {"timezone": "Europe/Madrid"},
        "todo_manager": {
            "items": [{"content": "Check the SDK", "activeForm": "Checking the SDK", "status": "in_progress"}]
        },
        "react": {"thought": "The SDK should see every tool", "action": "list them"},
        "save_memory": {"fact": "The interop test ran."},
        "update_soul": {"content": "# Soul\n\nBe brief and exact."},
        "update_identity": {"name": "Interop", "emoji": "🧪"},
        "manage_goals": {"action": "add", "goal": "Pass the interop test", "priority": "high"},
        "memory_search": {"query": "interop"},
        # The path memory_search found (filled in by check_tools).
        "memory_get": {"path": None},
        "run_command": {"command": "echo hi"},
        "process": {"action": "list"},
        "web_fetch": {"url": page_url},
        "validate_output": {"outputType": "inline", "data": {"a": 1}, "schema": {"type": "object"}},
        "create_tool": {
            "name": "interop_tool",
            "description": "A tool the interop test proposes and nobody approves.",
            "kind": "javascript",
            "source": "function run(args, ctx) { return 'ok'; }",
            "parameters": {"type": "object", "properties": {}},
        },
        "load_component": {"source": "interop_component.wasm", "capabilities": []},
        # Nothing is approved here: the request is refused, as a tool error.
        "unload_component": {"tool": "interop_tool"},
    }


# Tools whose sample call is refused by design, and what the refusal says.
REFUSED = {"unload_component": "is named `interop_tool`"}


def workspace():
    ws = tempfile.mkdtemp(prefix="toolhost-interop-")
    files = {
        "a.txt": "hello from a\n",
        "edit.txt": "the old text\n",
        "multi.txt": "x marks\n",
        "patch.txt": "before\n",
        "doomed.txt": "bye\n",
    }
    for name, text in files.items():
        with open(os.path.join(ws, name), "w") as f:
            f.write(text)
    shutil.copy(os.environ["TOOLHOST_INTEROP_COMPONENT"], os.path.join(ws, "interop_component.wasm"))
    return ws


def server_env(home):
    env = dict(os.environ)
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[var] = os.path.join(home, var.lower())
    env.pop("TOOLHOST_CONFIG", None)
    for var in ("TOOLHOST_CACHE_DIR", "TOOLHOST_CACHE_KEY"):
        if var in os.environ:
            env[var] = os.environ[var]
    return env


def server_args(*serve):
    """Every tool may run without confirmation, web_fetch may reach the
    local page, and delete_file may delete."""
    grant = "web_fetch=network:127.0.0.1,dir:web_cache:write"
    return ["--allow-delete", "--grant", grant, "serve", "--mode", "yolo", *serve]


def from_text(result, pattern):
    """The first group of `pattern` in a result's text: ids come in the
    text itself when the server answers text alone (its default)."""
    text = " ".join(c.text for c in result.content if c.type == "text")
    found = re.search(pattern, text, re.M)
    check(found, f"no {pattern!r} in {text!r}")
    return found.group(1)


async def check_tools(session, warnings, page_url, structured=False):
    """Every tool listed and called; with `structured` (the server runs
    with --structured-output) each result's structuredContent is checked
    against the tool's outputSchema, else neither is sent."""
    before = len(warnings.seen)
    listed = (await session.list_tools()).tools
    check(not warnings.seen[before:], f"the SDK warned while listing tools: {warnings.seen[before:]}")
    with_schema = [t.name for t in listed if t.output_schema is not None]
    if structured:
        check("read_file" in with_schema, f"output schemas listed: {with_schema}")
    else:
        check(not with_schema, f"output schemas listed by default: {with_schema}")
    names = {t.name for t in listed}
    calls = sample_calls(page_url)
    check(names >= set(calls), f"tools missing from the list: {set(calls) - names}")
    for tool in listed:
        check(tool.title, f"{tool.name}: no title")
        a = tool.annotations
        check(
            a is not None
            and None not in (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint),
            f"{tool.name}: annotations incomplete: {a}",
        )
        for which, schema in (("input", tool.input_schema), ("output", tool.output_schema)):
            if schema is not None:
                try:
                    jsonschema.Draft202012Validator.check_schema(schema)
                except jsonschema.SchemaError as e:
                    raise Failure(f"{tool.name}: its {which} schema is not valid draft 2020-12: {e.message}")
    # In the order above: save_memory, then memory_search, then memory_get
    # (which reads what the search found).
    order = list(calls)
    listed.sort(key=lambda t: order.index(t.name) if t.name in order else len(order))
    for tool in listed:
        if tool.name not in calls:
            check(tool.name.startswith("fixture") or tool.name == "echo",
                  f"{tool.name}: no sample call in python_sdk.py; add one")
            continue
        result = await session.call_tool(tool.name, calls[tool.name], read_timeout_seconds=60)
        text = " ".join(c.text for c in result.content if c.type == "text")
        if tool.name in REFUSED:
            check(result.is_error and REFUSED[tool.name] in text, f"{tool.name}: {text}")
            continue
        check(not result.is_error, f"{tool.name} failed: {text}")
        if not structured:
            check(result.structured_content is None, f"{tool.name}: structuredContent by default")
        if tool.name == "memory_search":
            calls["memory_get"]["path"] = from_text(result, r"^(\S+?):\d+: ")
        if tool.output_schema is not None:
            check(result.structured_content is not None, f"{tool.name}: no structuredContent")
            try:
                jsonschema.validate(
                    result.structured_content,
                    tool.output_schema,
                    cls=jsonschema.Draft202012Validator,
                    format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER,
                )
            except jsonschema.ValidationError as e:
                raise Failure(f"{tool.name}: structuredContent does not match its outputSchema: {e.message}")
            check(result.structured_content.get("text") == text,
                  f"{tool.name}: structuredContent.text is not the content's text")
    return len(listed)


async def check_progress(session):
    """A command longer than the client's quiet limit survives because
    progress notifications keep arriving."""
    last_news = time.monotonic()
    notes = []

    async def on_progress(progress, total, message):
        nonlocal last_news
        last_news = time.monotonic()
        notes.append((progress, message))

    outcome = {}

    async def run():
        outcome["result"] = await session.call_tool(
            "run_command",
            {"command": LONG_COMMAND, "timeout": 60},
            progress_callback=on_progress,
        )

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        while "result" not in outcome:
            await anyio.sleep(0.2)
            quiet = time.monotonic() - last_news
            if quiet > QUIET_LIMIT:
                group.cancel_scope.cancel()
                raise Failure(f"no progress for {quiet:.1f} s during a long command (notes: {notes})")
    result = outcome["result"]
    text = " ".join(c.text for c in result.content if c.type == "text")
    check(not result.is_error and "finished" in text, f"the long command failed: {text}")
    check(len(notes) >= 2, f"too few progress notifications: {notes}")
    values = [p for p, _ in notes]
    check(values == sorted(values) and len(set(values)) == len(values), f"progress must grow: {values}")
    return len(notes)


async def read(session, path):
    result = await session.call_tool("read_file", {"path": path}, read_timeout_seconds=30)
    text = " ".join(c.text for c in result.content if c.type == "text")
    return result.is_error, text


async def over_stdio(binary, home, page_url):
    first, second = workspace(), workspace()
    with open(os.path.join(second, "b.txt"), "w") as f:
        f.write("only in the second root\n")
    roots = [first]

    async def list_roots(context):
        return types.ListRootsResult(roots=[types.Root(uri=f"file://{r}") for r in roots])

    params = StdioServerParameters(
        command=binary, args=server_args("--structured-output"), cwd=home, env=server_env(home)
    )
    warnings = Warnings()
    logging.getLogger().addHandler(warnings)
    started = time.monotonic()
    async with stdio_client(params, errlog=sys.stderr) as (read_stream, write_stream):
        async with ClientSession(read_stream, write_stream, list_roots_callback=list_roots) as session:
            result = await session.initialize()
            check(result.protocol_version == "2025-11-25",
                  f"the handshake negotiated {result.protocol_version}")
            ready = time.monotonic() - started
            check(session.instructions and len(session.instructions) > 200, "instructions are missing")
            tools = await check_tools(session, warnings, page_url, structured=True)
            notes = await check_progress(session)
            # The workspace follows the roots.
            missing, _ = await read(session, "b.txt")
            check(missing, "b.txt was readable before its root was offered")
            roots[:] = [second]
            await session.send_roots_list_changed()
            deadline = time.monotonic() + 10
            while True:
                failed, text = await read(session, "b.txt")
                if not failed:
                    check("only in the second root" in text, text)
                    break
                check(time.monotonic() < deadline, f"the new root was not followed: {text}")
                await anyio.sleep(0.2)
    print(f"stdio (--structured-output): ready in {ready * 1000:.0f} ms, {tools} tools checked, "
          f"{notes} progress notes, roots followed")


class http_server:
    """`toolhost serve --http` on 127.0.0.1 in `ws`: its URL and token."""

    def __init__(self, binary, home, ws):
        self.proc = subprocess.Popen(
            [binary, *server_args("--http", "127.0.0.1:0")],
            cwd=ws,
            env=server_env(home),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )

    def __enter__(self):
        url = None
        token_file = None
        for line in self.proc.stderr:
            if "MCP token: in " in line:
                token_file = line.split("MCP token: in ", 1)[1].split(" (", 1)[0]
            if "serving MCP on " in line:
                url = line.split("serving MCP on ", 1)[1].strip()
                break
        check(url, "the HTTP server never said where it listens")
        check(token_file, "the HTTP server never said where its token is")
        with open(token_file) as f:
            token = f.readline().strip()
        threading.Thread(target=lambda: self.proc.stderr.read(), daemon=True).start()
        return url, token

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait(10)


async def over_http(binary, home, page_url):
    ws = workspace()
    with http_server(binary, home, ws) as (url, token):
        warnings = Warnings()
        logging.getLogger().addHandler(warnings)
        # Without the token the server answers 401, as it does to anyone.
        async with create_mcp_http_client() as bare:
            refused = await bare.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        check(refused.status_code == 401, f"no token, yet {refused.status_code}")
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with client, streamable_http_client(url, http_client=client) as (read_stream, write_stream):
            async with ClientSession(read_stream, write_stream) as session:
                result = await session.initialize()
                check(result.protocol_version == "2025-11-25",
                      f"the handshake negotiated {result.protocol_version}")
                tools = await check_tools(session, warnings, page_url)
                notes = await check_progress(session)
        check(not any("termination failed" in w.lower() for w in warnings.seen),
              f"closing the session failed: {warnings.seen}")
        print(f"http: {tools} tools checked, {notes} progress notes, session closed cleanly")


CONFIRM_SCRIPT = "echo confirmed-and-ran >> confirmed.txt; cat confirmed.txt\n"


async def check_current(client, warnings, page_url, ws, asked):
    """The 2026-07-28 flow: negotiated, every tool called, progress, a
    confirmation answered through an input-required round trip, a
    background command polled, a kept output read."""
    check(client.session.protocol_version == "2026-07-28",
          f"negotiated {client.session.protocol_version}, not 2026-07-28")
    tools = await check_tools(client.session, warnings, page_url)
    notes = await check_progress(client.session)
    with open(os.path.join(ws, "confirm.sh"), "w") as f:
        f.write(CONFIRM_SCRIPT)
    result = await client.call_tool("run_command", {"command": "sh confirm.sh"})
    text = " ".join(c.text for c in result.content if c.type == "text")
    check(asked and "sh confirm.sh" in asked[-1], f"the person was not asked: {asked}")
    check(not result.is_error and "confirmed-and-ran" in text, f"the confirmed command: {text}")
    started = await client.call_tool(
        "run_command", {"command": "sleep 1; echo polled-output", "background": True})
    command_id = from_text(started, r'"command_id": "([^"]+)"')
    deadline = time.monotonic() + 20
    while True:
        polled = await client.call_tool("process", {"action": "poll", "command_id": command_id})
        text = " ".join(c.text for c in polled.content if c.type == "text")
        if "polled-output" in text:
            break
        check(time.monotonic() < deadline, f"the background command never said its line: {text}")
        await anyio.sleep(0.3)
    cut = await client.call_tool("run_command", {"command": "seq 1 200000"})
    output_id = from_text(cut, r'"output_id": "([^"]+)"')
    uri = f"toolhost://outputs/{output_id}"
    read = await client.read_resource(uri)
    whole = read.contents[0].text
    check(whole.endswith("199999\n200000\n") and whole.startswith("1\n2\n"),
          f"the kept output read back has {len(whole)} characters")
    return tools, notes


def person_who_accepts():
    """The questions asked, and an elicitation callback that accepts each."""
    asked = []

    async def elicit(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"confirm": True})

    return asked, elicit


async def current_over_stdio(binary, home, page_url):
    ws = workspace()
    asked, elicit = person_who_accepts()

    params = StdioServerParameters(
        command=binary, args=server_args("--workspace", ws), cwd=home, env=server_env(home)
    )
    warnings = Warnings()
    logging.getLogger().addHandler(warnings)
    async with Client(params, elicitation_callback=elicit, read_timeout_seconds=60) as client:
        tools, notes = await check_current(client, warnings, page_url, ws, asked)
    print(f"stdio (2026-07-28): {tools} tools checked, {notes} progress notes, "
          "a confirmation round trip, a background command, a kept output")


async def current_over_http(binary, home, page_url):
    ws = workspace()
    asked, elicit = person_who_accepts()

    with http_server(binary, home, ws) as (url, token):
        warnings = Warnings()
        logging.getLogger().addHandler(warnings)
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with http, Client(streamable_http_client(url, http_client=http),
                                elicitation_callback=elicit, read_timeout_seconds=60) as client:
            tools, notes = await check_current(client, warnings, page_url, ws, asked)
    print(f"http (2026-07-28): {tools} tools checked, {notes} progress notes, "
          "a confirmation round trip, a background command, a kept output")


def leaves(group):
    """The exceptions inside (nested) exception groups."""
    for e in group.exceptions:
        yield from leaves(e) if isinstance(e, BaseExceptionGroup) else [e]


def main():
    binary, transport = sys.argv[1], sys.argv[2]
    era = sys.argv[3] if len(sys.argv) > 3 else "legacy"
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    page = page_server()
    page_url = f"http://127.0.0.1:{page.server_address[1]}/page.html"
    home = tempfile.mkdtemp(prefix="toolhost-interop-home-")
    try:
        run = {
            ("stdio", "legacy"): over_stdio,
            ("http", "legacy"): over_http,
            ("stdio", "current"): current_over_stdio,
            ("http", "current"): current_over_http,
        }[(transport, era)]
        anyio.run(run, binary, home, page_url)
    except* Failure as failures:
        for failure in leaves(failures):
            print(f"FAILED ({transport}, {era}): {failure}", file=sys.stderr)
        sys.exit(1)
    finally:
        page.shutdown()


if __name__ == "__main__":
    main()
