"""`csv_stats`: a CSV file's rows, and each column's range and mean."""
from dataclasses import dataclass
from typing import Annotated, Optional

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


@tool(capabilities=["workspace:read"], idempotent=True)
def csv_stats(ctx: Context, path: Annotated[str, "Workspace-relative path of the CSV file."]) -> Output[Stats]:
    """Count the rows of a CSV file in the workspace (a header line, then rows; no quoted commas) and give each column's min, max and mean when its values are numbers."""
    lines = [[f.strip() for f in line.split(",")] for line in ctx.read_text(path).splitlines() if line.strip()]
    if not lines:
        raise InvalidInput(f"`{path}` is empty: a CSV file starts with a header line")
    header, rows = lines[0], lines[1:]
    for i, row in enumerate(rows):
        if len(row) != len(header):
            raise InvalidInput(f"row {i + 1} has {len(row)} fields; the header has {len(header)}")
    stats = Stats(len(rows), [Column(name) for name in header])
    for i, column in enumerate(stats.columns):
        try:
            numbers = [float(row[i]) for row in rows]
        except ValueError:
            continue
        if numbers:
            column.min, column.max, column.mean = min(numbers), max(numbers), sum(numbers) / len(numbers)
    return Output(f"{path}: {stats.rows} rows, {len(header)} columns", stats)
