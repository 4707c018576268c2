"""The code blocks of README.md and docs/*.md, and how tests/docs/test_snippets.py runs them.

A fenced block is a snippet when it holds something to run:

- ```python: a script, run with this interpreter;
- ```sh (or bash, shell, console) without prompts: shell commands, run with bash -e;
- a block (```sh or untagged) whose lines start with `$ `: a transcript, each command run and
  what the block shows under it compared with what it prints (`matches`).

Other blocks (C, CMake, TOML, output, diagrams, synopses) are text, unless the line before the
fence is `<!-- snippet: file NAME -->`: then the block is written to NAME in the page's working
directory before the snippets after it run (docs/backends.md's acme_relu.c and CMakeLists.txt).
`<!-- snippet: skip: REASON -->` before a snippet says it is not run in CI and why (it needs a
Ray cluster, Graphviz, the network, ...); a snippet with no such line is run.

In a Python snippet, `print(EXPR)  # LITERAL` (the comment a Python literal) asserts that EXPR
equals LITERAL: the README's `print(runtime.backend_ids)  # ['CpuAcc', 'CpuRef']` is checked.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.M | re.S)
NOTE = re.compile(r"<!--\s*snippet:\s*(.*?)\s*-->")
SHELL = {"sh", "bash", "shell", "console"}
EXPECT = re.compile(r"^(\s*)print\((.+)\)\s+#\s*(.+?)\s*$")


@dataclass(frozen=True)
class Snippet:
    page: str  # relative to the repository: "README.md", "docs/run.md"
    line: int  # of the opening fence
    kind: str  # "python", "shell", "transcript" or "file"
    body: str
    note: str  # the annotation after "snippet:", or ""

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def skip_reason(self) -> str | None:
        if self.note.startswith("skip:"):
            return self.note[len("skip:"):].strip()
        return None


def pages(root: Path = ROOT) -> list[str]:
    """README.md and docs/*.md (docs/history/ holds records of past sessions, not instructions)."""
    return ["README.md", *(f"docs/{p.name}" for p in sorted((root / "docs").glob("*.md")))]


def snippets(page: str, root: Path = ROOT) -> list[Snippet]:
    text = (root / page).read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        info = match.group(1).strip().split(" ")[0].lower()
        body = match.group(2)
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        note_match = NOTE.fullmatch(before)
        note = note_match.group(1) if note_match else ""
        prompts = any(line.startswith("$ ") for line in body.splitlines())
        if note.startswith("file "):
            kind = "file"
        elif info == "python":
            kind = "python"
        elif info in SHELL or (info == "" and body.lstrip().startswith("$ ")):
            kind = "transcript" if prompts else "shell"
        else:
            if note:
                raise ValueError(f"{page}:{text.count(chr(10), 0, match.start()) + 1}: a snippet note on a block "
                                 f"that is not a snippet ({info or 'untagged'})")
            continue
        found.append(Snippet(page, text.count("\n", 0, match.start()) + 1, kind, body, note))
    return found


def note_problem(snippet: Snippet) -> str | None:
    """What is wrong with a snippet's annotation, or None."""
    if snippet.note == "" or snippet.kind == "file":
        return None
    reason = snippet.skip_reason
    if reason is None:
        return f"unknown snippet note {snippet.note!r} (known: 'skip: REASON', 'file NAME')"
    if len(reason) < 10:
        return "a skipped snippet needs its reason"
    return None


# ---- Python: printed values against their comments ---------------------------------------------

EXPECT_FUNCTION = '''
def __expect(value, expected, where):
    print(value)
    assert value == expected, f"{where}: it prints {value!r}, the text says {expected!r}"
'''


def python_source(snippet: Snippet, prelude: str = "") -> str:
    """The snippet as a script: `print(X)  # LITERAL` lines become checks."""
    lines = []
    for offset, line in enumerate(snippet.body.splitlines(), 1):
        match = EXPECT.match(line)
        if match:
            try:
                ast.literal_eval(match.group(3))
            except (ValueError, SyntaxError):
                match = None
        if match:
            indent, expr, literal = match.groups()
            where = f"{snippet.page}:{snippet.line + offset}"
            lines.append(f"{indent}__expect({expr}, {literal}, {where!r})")
        else:
            lines.append(line)
    return EXPECT_FUNCTION + prelude + "\n" + "\n".join(lines) + "\n"


# ---- transcripts --------------------------------------------------------------------------------


def transcript(snippet: Snippet) -> list[tuple[str, list[str]]]:
    """(command, the lines shown under it) for each `$ ` line of the block."""
    steps: list[tuple[str, list[str]]] = []
    for line in snippet.body.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif steps:
            steps[-1][1].append(line)
    return steps


_FLOAT = re.compile(r"(?<![\w.])[-+]?(\d+\.\d{2,}(e[-+]?\d+)?|\d+(\.\d+)?e[-+]?\d+)(?![\w.])")
_MEASURED = re.compile(r"(?<![\w.])\d+\.\d+(?=\s*(ms|us|ns|s|%|MB|GB|KiB|MiB|GB/s|GFLOP/s)(?!\w))")
_HEX = re.compile(r"\b[0-9a-f]{8,}\b")


def normalize(line: str) -> str:
    """A line as compared: spaces collapsed, rules of dashes one length, measured numbers (a
    decimal point and two or more decimals, or an exponent: timings, values) and addresses
    replaced by '#', as is any decimal number before a unit (12.5 ms). Integers, and other numbers
    of one decimal (versions: API 1.1), are compared as written."""
    line = _HEX.sub("#", line)
    line = _MEASURED.sub("#", line)
    line = _FLOAT.sub("#", line)
    line = re.sub(r"-{3,}", "---", line)
    return " ".join(line.split())


def matches(shown: list[str], printed: str) -> str | None:
    """None when `printed` is what the block shows (a line `...` stands for any lines, `...`
    inside a line for any text); otherwise the first line that differs."""
    want = [normalize(line) for line in shown]
    while want and want[-1] == "":
        want.pop()
    have = [normalize(line) for line in printed.splitlines()]
    while have and have[-1] == "":
        have.pop()

    def line_matches(pattern: str, line: str) -> bool:
        if "..." not in pattern:
            return pattern == line
        return re.fullmatch(".*".join(re.escape(part) for part in pattern.split("...")), line) is not None

    def match(i: int, j: int) -> int | None:
        """-1 on a match, else the index of the shown line that failed."""
        while i < len(want):
            if want[i] == "...":
                if i + 1 == len(want):
                    return -1
                for k in range(j, len(have) + 1):
                    if match(i + 1, k) == -1:
                        return -1
                return i + 1
            if j >= len(have) or not line_matches(want[i], have[j]):
                return i
            i, j = i + 1, j + 1
        return -1 if j == len(have) else i

    failed = match(0, 0)
    if failed == -1:
        return None
    expected = shown[failed] if failed < len(shown) else "(the end of the output)"
    return f"the block shows {expected!r}; the command printed:\n{printed}"
