"""The schemas derived from type hints and the argument conversion,
natively (no host needed): ``python3 -m unittest discover -s tests``."""

import enum
import unittest
from dataclasses import dataclass, field
from typing import Annotated, Literal, NotRequired, Optional, TypedDict

import toolhost
from toolhost import Context, InvalidInput, Output, tool
from toolhost.schema import ArgumentError, SchemaError, convert, schema_of, split_docstring


class Mode(enum.Enum):
    FAST = "fast"
    EXACT = "exact"


@dataclass
class Range:
    """Lines to read.

    Attributes:
        start: The first line, from 1.
    """

    start: int
    count: Annotated[int, "How many lines."] = 20
    tags: list[str] = field(default_factory=list)


class Found(TypedDict):
    path: Annotated[str, "Where."]
    line: NotRequired[int]


def last_declared():
    return toolhost._declared[-1]


class Schemas(unittest.TestCase):
    def test_function_parameters_make_the_input_schema(self):
        @tool(capabilities=["workspace:read"])
        def find(pattern: str, ctx: Context, mode: Mode = Mode.FAST, limit: Optional[int] = None,
                 within: Optional[Range] = None, kind: Literal["file", "dir"] = "file") -> Output[Found]:
            """Find things.

            Several lines of description.

            Args:
                pattern: What to look for,
                    over two lines.
                limit: At most this many.
            """
            return Output("")

        declared = last_declared()
        self.assertEqual(declared.name, "find")
        self.assertEqual(declared.description, "Find things.\n\nSeveral lines of description.")
        self.assertEqual(declared.context_param, "ctx")
        self.assertEqual(declared.input_schema, {
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "What to look for, over two lines."},
                "mode": {"enum": ["fast", "exact"], "default": "fast"},
                "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "description": "At most this many."},
                "within": {"anyOf": [{
                    "type": "object",
                    "properties": {
                        "start": {"type": "integer", "description": "The first line, from 1."},
                        "count": {"type": "integer", "description": "How many lines.", "default": 20},
                        "tags": {"type": "array", "items": {"type": "string"}, "default": []},
                    },
                    "required": ["start"],
                    "additionalProperties": False,
                    "description": "Lines to read.",
                }, {"type": "null"}]},
                "kind": {"enum": ["file", "dir"], "default": "file"},
            },
            "required": ["pattern"],
            "additionalProperties": False,
        })
        self.assertEqual(declared.output_schema, {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "Where."}, "line": {"type": "integer"}},
            "required": ["path"],
            "additionalProperties": False,
        })

    def test_a_type_without_a_schema_is_named(self):
        with self.assertRaisesRegex(SchemaError, "`complex` has no JSON Schema"):
            schema_of(complex)
        with self.assertRaisesRegex(TypeError, "`x` needs a type hint"):
            @tool
            def untyped(x):
                return ""

    def test_an_output_that_is_not_an_object_is_refused(self):
        with self.assertRaisesRegex(TypeError, "the return hint must give an object"):
            @tool
            def listing() -> Output[list[str]]:
                return Output("")

    def test_a_default_json_cannot_write_is_refused(self):
        with self.assertRaisesRegex(SchemaError, "the default of `at` .* cannot be written as JSON"):
            @tool
            def odd(at: float = float("nan")) -> str:
                return ""

    def test_fixed_tuples_have_one_schema_per_item(self):
        self.assertEqual(schema_of(tuple[int, str]), {
            "type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": False, "minItems": 2,
        })
        self.assertEqual(schema_of(tuple[int, ...]), {"type": "array", "items": {"type": "integer"}})
        self.assertEqual(convert(tuple[int, str], [1, "a"], "t"), (1, "a"))
        with self.assertRaisesRegex(ArgumentError, "`t` must be an array of 2 items"):
            convert(tuple[int, str], [1], "t")

    def test_a_bad_capability_is_refused_with_the_words_to_use(self):
        @tool(capabilities=["service:message", "dir:notes:write", "network:a.example"])
        def fine() -> str:
            """Fine."""
            return ""

        self.assertEqual(last_declared().capabilities, ["service:message", "dir:notes:write", "network:a.example"])
        with self.assertRaisesRegex(ValueError, "capability `service:Bad`"):
            @tool(capabilities=["service:Bad"])
            def bad() -> str:
                return ""
        with self.assertRaisesRegex(ValueError, "capability `workspace`: use workspace:read"):
            @tool(capabilities=["workspace"])
            def reader() -> str:
                return ""

    def test_docstring_sections(self):
        head, described = split_docstring("Do it.\n\nArgs:\n    a (int): First.\n    b: Second,\n        continued.\n")
        self.assertEqual(head, "Do it.")
        self.assertEqual(described, {"a": "First.", "b": "Second, continued."})


    def test_a_described_name_that_does_not_exist_is_refused(self):
        with self.assertRaisesRegex(
            SchemaError,
            r"@tool count: the docstring describes `pth`, which it does not have \(it has: path, limit\); did you mean `path`\?",
        ):
            @tool
            def count(ctx: Context, path: str, limit: int = 5) -> str:
                """Count.

                Args:
                    ctx: The call.
                    pth: The file.
                """
                return ""

        @dataclass
        class Stats:
            """Counts.

            Attributes:
                rowz: How many rows.
            """

            rows: int

        with self.assertRaisesRegex(SchemaError, r"Stats: the docstring describes `rowz`.*did you mean `rows`\?"):
            schema_of(Stats)


class Build(unittest.TestCase):
    def test_a_failed_build_is_said_in_its_one_line(self):
        from toolhost.build import first_error

        log = (
            'Traceback (most recent call last):\n  File "<string>", line 1, in <module>\n'
            "AssertionError: Traceback (most recent call last):\n"
            '  File "/1/bad.py", line 6\n    return path +\n                 ^\n'
            "SyntaxError: invalid syntax\n\n\nCaused by:\n    SyntaxError: invalid syntax (bad.py, line 6)\n\n"
            "Stack backtrace:\n   0: <anyhow::Error>::msg\n   1: Error: not this\n"
        )
        self.assertEqual(first_error(log), "SyntaxError: invalid syntax (bad.py, line 6)")
        no_cause = log.split("Caused by:")[0]
        self.assertEqual(first_error(no_cause), "SyntaxError: invalid syntax")
        self.assertEqual(first_error("warming up\nerror: no such world `tool-plugin`\nerror: later"), "error: no such world `tool-plugin`")
        self.assertEqual(first_error(""), "componentize-py printed nothing")


class Conversion(unittest.TestCase):
    def test_values_become_the_hinted_types(self):
        self.assertEqual(convert(Range, {"start": 3}, "r"), Range(3, 20, []))
        self.assertIs(convert(Mode, "exact", "m"), Mode.EXACT)
        self.assertEqual(convert(float, 2, "f"), 2.0)
        self.assertEqual(convert(Optional[int], None, "o"), None)
        self.assertEqual(convert(dict[str, int], {"a": 1}, "d"), {"a": 1})
        self.assertEqual(convert(int, 5.0, "i"), 5)  # JSON Schema's integer, as the host checks it

    def test_typeddict_members_that_may_be_left_out_stay_out(self):
        class Partial(TypedDict, total=False):
            a: int
            b: int

        self.assertEqual(convert(Partial, {"a": 1}, "p"), {"a": 1})
        self.assertEqual(convert(Found, {"path": "x"}, "f"), {"path": "x"})

    def test_defaults_are_not_shared_between_calls(self):
        first = convert(Range, {"start": 1}, "r")
        first.tags.append("x")
        self.assertEqual(convert(Range, {"start": 1}, "r").tags, [])

    def test_what_does_not_fit_is_named(self):
        cases = [
            (int, True, "x", "`x` must be an integer, not boolean"),
            (int, 1.5, "x", "`x` must be an integer, not number"),
            (str, 1, "x", "`x` must be a string, not integer"),
            (Mode, "slow", "x", "`x` must be one of 'fast', 'exact'"),
            (list[int], [1, "2"], "x", "`x[1]` must be an integer, not string"),
            (Range, {"start": 1, "stop": 2}, "x", "`x.stop` is not an argument of this tool; it takes `start`, `count`, `tags`"),
            (Range, {}, "x", "`x.start` is missing"),
        ]
        for hint, value, at, message in cases:
            with self.subTest(message):
                with self.assertRaises(ArgumentError) as raised:
                    convert(hint, value, at)
                self.assertEqual(str(raised.exception), message)


class Invoke(unittest.TestCase):
    def test_results_and_errors(self):
        @tool
        def shout(text: str, times: int = 1) -> Output[Found]:
            """Shout."""
            if not text:
                raise InvalidInput("`text` is empty")
            return Output((text.upper() + " ") * times, Found(path=text))

        declared = last_declared()
        ctx = Context(workspace_root="/w")
        out = declared.invoke('{"text": "hi", "times": 2}', ctx)
        self.assertEqual((out.content, out.structured), ("HI HI ", {"path": "hi"}))
        with self.assertRaisesRegex(InvalidInput, "`times` must be an integer"):
            declared.invoke('{"text": "hi", "times": "2"}', ctx)
        with self.assertRaisesRegex(InvalidInput, "`text` is empty"):
            declared.invoke('{"text": ""}', ctx)
        with self.assertRaises(InvalidInput):
            declared.invoke("not json", ctx)

    def test_an_exception_shows_its_type_and_the_tools_own_frames(self):
        def lookup(row):
            return row["missing"]

        @tool
        def stats(path: str) -> str:
            """Stats."""
            return lookup({})

        declared = last_declared()
        try:
            declared.invoke('{"path": "a.csv"}', Context(workspace_root="/w"))
        except KeyError as err:
            said = toolhost.describe_exception(err)
        lines = said.splitlines()
        self.assertEqual(lines[0], "KeyError: 'missing'")
        self.assertEqual(lines[1], "Traceback (the tool's own frames, innermost last):")
        # This test's frame (the caller), then the tool's, without the
        # SDK's `invoke` between them.
        self.assertRegex(lines[2], r"^  test_schema\.py, line \d+, in test_an_exception_shows_")
        self.assertRegex(lines[3], r"^  test_schema\.py, line \d+, in stats: return lookup\(\{\}\)$")
        self.assertRegex(lines[4], r'^  test_schema\.py, line \d+, in lookup: return row\["missing"\]$')
        self.assertEqual(len(lines), 5, said)
        self.assertEqual(toolhost.describe_exception(MemoryError()), "MemoryError")

    def test_bad_results_are_failures_that_say_what_to_return(self):
        @tool
        def bad(what: str) -> Output[dict]:
            """Return something wrong."""
            return {
                "content": Output(None),
                "changed": Output("x", None, "a.txt"),
                "nan": Output("x", {"v": float("nan")}),
                "set": Output("x", {"v": {object()}}),
                "nothing": None,
            }[what]

        declared = last_declared()
        for what, message in [
            ("content", "Output.content must be a str, not NoneType"),
            ("changed", "Output.changed_paths must be a list"),
            ("nan", "the structured result is not JSON"),
            ("set", "the structured result is not JSON"),
            ("nothing", "the tool returned NoneType"),
        ]:
            with self.subTest(what):
                with self.assertRaisesRegex(toolhost.Failed, message):
                    declared.invoke(f'{{"what": "{what}"}}', Context(workspace_root="/w"))

    def test_errors_keep_text_whatever_they_were_given(self):
        err = toolhost.Failed(ValueError("no"), 42)
        self.assertEqual((err.message, err.hint), ("no", "42"))

    def test_paths_stay_in_the_workspace_or_a_declared_directory(self):
        ctx = Context(workspace_root="/home/me/proj", dirs=("memory",))
        self.assertEqual(ctx.path("src/../a.txt"), "a.txt")
        self.assertEqual(ctx.path("/home/me/proj/src/x.py"), "src/x.py")
        self.assertEqual(ctx.path("/home/me/proj"), ".")
        self.assertEqual(ctx.path("/memory/a/../notes.md"), "/memory/notes.md")
        for path, kind, message in [
            ("../secret", toolhost.Denied, "leads outside the workspace"),
            ("/memory/../etc", toolhost.Denied, "leads outside the directory /memory"),
            ("/etc/passwd", toolhost.Denied, "is outside the workspace"),
            ("/home/me/project2/x", toolhost.Denied, "is outside the workspace"),
            ("  ", InvalidInput, "the path is empty"),
            (None, InvalidInput, "must be a string, not NoneType"),
        ]:
            with self.subTest(path):
                with self.assertRaisesRegex(kind, message):
                    ctx.path(path)
        for path in ("a.txt", "/home/me/proj/a.txt"):
            with self.assertRaisesRegex(toolhost.Denied, "not granted access to the workspace"):
                Context().path(path)


if __name__ == "__main__":
    unittest.main()
