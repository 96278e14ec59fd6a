"""``toolhost-py build MODULE.py [-o OUT.wasm]``: make a wasm32-wasip2
component of a module holding one ``@tool`` function, with
componentize-py, against the WIT this SDK ships."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

WIT = Path(__file__).resolve().parent / "wit"
ENTRY = "toolhost_entry"


def run_componentize_py(*args: str, verbose: bool = False) -> tuple[int, str]:
    """Run componentize-py (the one installed beside this Python): its exit
    code and, unless ``verbose`` (which lets it print as it goes), what it
    printed."""
    launcher = "import sys; from componentize_py import script; sys.argv[0] = 'componentize-py'; sys.exit(script())"
    command = [sys.executable, "-c", launcher, *args]
    if verbose:
        return subprocess.run(command).returncode, ""
    run = subprocess.run(command, capture_output=True, text=True)
    return run.returncode, run.stdout + run.stderr


def first_error(log: str) -> str:
    """The line of a failed build's log that says what went wrong: the
    cause componentize-py names (the exception the module raised while it
    was loaded), else the last exception a traceback ends with, else the
    first `error:` line, else the last line."""
    lines = log.split("Stack backtrace:")[0].splitlines()
    causes = [i for i, line in enumerate(lines) if line.strip() == "Caused by:"]
    if causes:
        cause = next((line.strip() for line in lines[causes[-1] + 1:] if line.strip()), None)
        if cause:
            return cause
    raised = [
        line.strip() for line in lines
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit)(:|$)", line)
        and not line.rstrip().endswith("Traceback (most recent call last):")
    ]
    if raised:
        return raised[-1]
    errors = [line.strip() for line in lines if line.strip().lower().startswith("error:")]
    if errors:
        return errors[0]
    return next((line.strip() for line in reversed(lines) if line.strip()), "componentize-py printed nothing")


def build(module: Path, out: Path | None, verbose: bool = False) -> int:
    if module.suffix != ".py" or not module.is_file():
        print(f"error: {module} is not a Python file; give the module that holds the @tool function", file=sys.stderr)
        return 2
    module = module.resolve()
    out = (out or module.with_suffix(".wasm")).resolve()
    try:
        import componentize_py  # noqa: F401
    except ImportError:
        print("error: componentize-py is not installed here; run `pip install componentize-py==0.25.1`", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="toolhost-py-") as work:
        Path(work, f"{ENTRY}.py").write_text(
            f"import {module.stem}  # noqa: F401  (declares the tool)\n"
            "from toolhost._component import Tool  # noqa: F401  (the component's export)\n"
        )
        code, log = run_componentize_py(
            "-d", str(WIT), "-w", "tool-plugin", "componentize", ENTRY,
            "-p", work, "-p", str(module.parent), "-p", str(Path(__file__).resolve().parent.parent),
            "-o", str(out),
            verbose=verbose,
        )
    if code == 0:
        print(f"built {out} ({out.stat().st_size / 1e6:.1f} MB)", file=sys.stderr)
        return 0
    if not verbose:
        print(f"error: building {module.name} failed: {first_error(log)}", file=sys.stderr)
        print("(`toolhost-py build --verbose` shows componentize-py's whole log)", file=sys.stderr)
    return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="toolhost-py", description="Build toolhost tools written in Python.")
    commands = parser.add_subparsers(dest="command", required=True)
    b = commands.add_parser("build", help="make a component of a module holding one @tool function")
    b.add_argument("module", type=Path, help="the module, e.g. word_count.py")
    b.add_argument("-o", "--out", type=Path, help="the component to write (default: the module's name with .wasm)")
    b.add_argument("-v", "--verbose", action="store_true", help="show componentize-py's whole log as it runs")
    args = parser.parse_args(argv)
    return build(args.module, args.out, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
