"""The plain fixture (tests/fixtures/fixture_plain) in Python, built with
componentize-py 0.25.1 against the same WIT: world `inventory` of
example:inventory@0.1.0. No toolhost SDK.

componentize-py conventions: the world's own exports are methods of a class
named ``WitWorld`` (from ``wit_world``), an exported interface's those of a
class named after it (``Shelf``, from ``wit_world.exports``); records are
dataclasses, a variant a dataclass per case (``Pick_ByName(value)``), an
enum an ``Enum``, flags a ``Flag``, an option the value or ``None``, a tuple
a tuple; a ``result<T, E>`` returns T and raises ``Err(E)`` for err.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace

from componentize_py_types import Err
from wit_world import WitWorld as World
from wit_world import exports
from wit_world.exports.shelf import (
    Item,
    Pick,
    Pick_ByIndex,
    Pick_ByName,
    Pick_Everything,
    Style,
    Unit,
)

U32_MAX = 0xFFFF_FFFF


def rust_debug(value: str | None) -> str:
    """`value` as Rust's `{:?}` shows an `Option<String>` (common escapes)."""
    if value is None:
        return "None"
    escapes = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\0": "\\0"}
    out = "".join(
        escapes.get(c) or (f"\\u{{{ord(c):x}}}" if ord(c) < 0x20 or ord(c) == 0x7F else c)
        for c in value
    )
    return f'Some("{out}")'


def _not_utf8(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


class WitWorld(World):
    def env_var(self, name: str) -> str | None:
        value = os.environ.get(name)
        if value is not None and not value.isprintable() and _not_utf8(value):
            value = None  # as Rust's `env::var`: only a valid Unicode value
        # On stderr too, which the host logs (redacted).
        print(f"read {name}: {rust_debug(value)}", file=sys.stderr)
        return value

    def greet(self, name: str) -> str:
        return f"hello, {name}"

    def count_lines(self, path: str) -> int:
        try:
            with open(path, "rb") as f:
                text = f.read().decode("utf-8")
        except OSError as e:
            # As Rust's `io::Error` shows it: "No such file or directory (os error 44)".
            raise Err(f"cannot read {path}: {e.strerror} (os error {e.errno})") from None
        except UnicodeDecodeError:
            raise Err(f"cannot read {path}: stream did not contain valid UTF-8") from None
        # As Rust's `str::lines`: lines end at "\n", the last one need not.
        return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


class Environment(exports.Environment):
    def variables(self) -> list[str]:
        return ["INVENTORY_TOKEN"]


class Shelf(exports.Shelf):
    def total(self, items: list[Item], pick: Pick, unit: Unit) -> int:
        if isinstance(pick, Pick_ByName):
            picked = [i for i in items if i.name == pick.value]
        elif isinstance(pick, Pick_ByIndex):
            picked = items[pick.value : pick.value + 1]
        elif isinstance(pick, Pick_Everything):
            picked = items
        else:
            raise TypeError(f"unknown pick {pick!r}")
        if not picked:
            raise Err("nothing was picked")
        pieces = sum(i.count for i in picked)
        return pieces // 12 if unit == Unit.DOZENS else pieces

    def find(self, items: list[Item], name: str) -> Item | None:
        return next((i for i in items if i.name == name), None)

    def label(self, item: Item, style: Style) -> str:
        text = f"{item.name} x{item.count}"
        if item.price is not None:
            text += f" at {item.price:.2f}"
        if item.tags:
            text += f" [{', '.join(item.tags)}]"
        if Style.UPPER in style:
            text = text.upper()
        if Style.REVERSED in style:
            text = text[::-1]
        return text

    def restock(self, item: Item, more: int) -> Item:
        return replace(item, count=min(item.count + more, U32_MAX))

    def swap(self, pair: tuple[int, str], flag: bool) -> tuple[str, int, bool]:
        return (pair[1], pair[0], not flag)
