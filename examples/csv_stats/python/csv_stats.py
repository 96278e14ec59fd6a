"""`csv_stats`: a CSV file's rows, and each column's range and mean."""

from dataclasses import dataclass
from typing import Optional

from toolhost import Context, InvalidInput, Output, tool


@dataclass
class Column:
    name: str
    min: Optional[float] = None
    max: Optional[float] = None
    mean: Optional[float] = None


@dataclass
class Stats:
    rows: int
    columns: list[Column]


def number(text: str) -> Optional[float]:
    try:
        return float(text)
    except ValueError:
        return None


@tool(capabilities=["workspace:read"], idempotent=True)
def csv_stats(ctx: Context, path: str) -> Output[Stats]:
    """Count the rows of a CSV file in the workspace (a header line, then rows; no quoted commas) and give each column's min, max and mean when its values are numbers.

    Args:
        path: Workspace-relative path of the CSV file.
    """
    lines = [[f.strip() for f in line.split(",")] for line in ctx.read_text(path).splitlines() if line.strip()]
    if not lines:
        raise InvalidInput(f"`{path}` is empty: a CSV file starts with a header line")
    header, rows = lines[0], lines[1:]
    for i, row in enumerate(rows):
        if len(row) != len(header):
            raise InvalidInput(f"row {i + 1} has {len(row)} fields; the header has {len(header)}")
    columns = []
    for i, name in enumerate(header):
        numbers = [number(row[i]) for row in rows]
        if rows and None not in numbers:
            columns.append(Column(name, min(numbers), max(numbers), sum(numbers) / len(numbers)))
        else:
            columns.append(Column(name))
    stats = Stats(len(rows), columns)
    return Output(f"{path}: {stats.rows} rows, {len(columns)} columns", stats)
