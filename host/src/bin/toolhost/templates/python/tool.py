"""`{name}`: counts the lines, words and characters of a text file in the
workspace. Change `Counts`, the docstring and the function to make it yours."""

from typing import Annotated, TypedDict

from toolhost import Context, Output, tool


class Counts(TypedDict):
    lines: Annotated[int, "Lines in the file."]
    words: Annotated[int, "Words: runs of characters between whitespace."]
    chars: Annotated[int, "Characters (Unicode scalar values)."]


@tool(capabilities=["workspace:read"], idempotent=True)
def {name}(path: str, ctx: Context) -> Output[Counts]:
    """Count the lines, words and characters of a UTF-8 text file in the workspace.

    Args:
        path: Workspace-relative path of the text file.
    """
    text = ctx.read_text(path)
    lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    counts = Counts(lines=lines, words=len(text.split()), chars=len(text))
    summary = f"{ctx.path(path)}: {counts['lines']} lines, {counts['words']} words, {counts['chars']} characters"
    return Output(summary, counts)
