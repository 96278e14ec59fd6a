"""Run a built component's cases in the real host from a Python test
runner: ``toolhost test FILE.wasm CASES.json --json``, parsed."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass


@dataclass
class Report:
    """What ``toolhost test`` found: ``failed`` holds ``(name, failures)``
    of each case that did not pass; ``text`` says it in words."""

    passed: int
    failed: list[tuple[str, list[str]]]
    outcomes: list[dict]

    @property
    def text(self) -> str:
        return "\n".join(
            f"FAILED: {name}\n" + "\n".join(f"  - {f}" for f in failures) for name, failures in self.failed
        )


def run_cases(wasm: str, cases: str, toolhost: str | None = None) -> Report:
    """Run the cases of ``cases`` against the component ``wasm``. The
    ``toolhost`` binary is ``$TOOLHOST``, else ``toolhost`` on the PATH."""
    binary = toolhost or os.environ.get("TOOLHOST") or "toolhost"
    try:
        run = subprocess.run([binary, "test", wasm, cases, "--json"], capture_output=True, text=True)
    except OSError as err:
        raise RuntimeError(f"cannot run `{binary}` ({err}); put toolhost on the PATH or set TOOLHOST to its path") from None
    try:
        outcomes = json.loads(run.stdout)
    except ValueError:
        raise RuntimeError(f"`{binary} test` failed (exit {run.returncode}):\n{run.stderr}") from None
    failed = [(o["name"], o["failures"]) for o in outcomes if o["failures"]]
    return Report(len(outcomes) - len(failed), failed, outcomes)
