"""``toolhost-py build MODULE.py [-o OUT.wasm]``: make a wasm32-wasip2
component of a module holding one ``@tool`` function, with
componentize-py, against the WIT this SDK ships."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

WIT = Path(__file__).resolve().parent / "wit"
ENTRY = "toolhost_entry"


def run_componentize_py(*args: str) -> int:
    """Run componentize-py (the one installed beside this Python)."""
    launcher = "import sys; from componentize_py import script; sys.argv[0] = 'componentize-py'; sys.exit(script())"
    return subprocess.run([sys.executable, "-c", launcher, *args]).returncode


def build(module: Path, out: Path | None) -> int:
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
        code = run_componentize_py(
            "-d", str(WIT), "-w", "tool-plugin", "componentize", ENTRY,
            "-p", work, "-p", str(module.parent), "-p", str(Path(__file__).resolve().parent.parent),
            "-o", str(out),
        )
    if code == 0:
        print(f"built {out} ({out.stat().st_size / 1e6:.1f} MB)", file=sys.stderr)
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="toolhost-py", description="Build toolhost tools written in Python.")
    commands = parser.add_subparsers(dest="command", required=True)
    b = commands.add_parser("build", help="make a component of a module holding one @tool function")
    b.add_argument("module", type=Path, help="the module, e.g. word_count.py")
    b.add_argument("-o", "--out", type=Path, help="the component to write (default: the module's name with .wasm)")
    args = parser.parse_args(argv)
    return build(args.module, args.out)


if __name__ == "__main__":
    sys.exit(main())
