"""The ABI tables of docs/backends.md, section 6, read from the header: never copied by hand.

    python scripts/abi_tables.py                          # print the tables
    python scripts/abi_tables.py --write docs/backends.md # replace each table between its markers

Reads `native/include/plugnn/backend_api.h` as text: the version and limit `#define`s, and every
`typedef enum` with its members, their values, their comments and the `/* since 1.x */` lines
that open the members a minor version appended. Each table sits between
`<!-- abi:NAME:start -->` and `<!-- abi:NAME:end -->` in the document (NAME one of `constants`,
`dtypes`, `kinds`, `enums`); tests/docs/test_abi_tables.py fails when a table differs from
what the header says now.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEADER = ROOT / "native" / "include" / "plugnn" / "backend_api.h"
TABLES = ("constants", "dtypes", "kinds", "enums")
ENUM = re.compile(r"typedef enum (\w+) \{(.*?)\} \1;", re.S)
MEMBER = re.compile(r"^\s*(PN_\w+)\s*=\s*(\d+)\s*,?\s*(?:/\*(.*?)(?:\*/|$))?", re.S)
DEFINE = re.compile(r"^#define\s+(PLUGNN_BACKEND_API_VERSION_\w+|PN_MAX_\w+)\s+(\d+)\s*(?:/\*\s*(.*?)\s*\*/)?", re.M)


@dataclass(frozen=True)
class Member:
    name: str
    value: int
    comment: str
    since: str  # "1.0", "1.1", ...


def _clean(comment: str) -> str:
    return " ".join(comment.replace("*/", "").replace("*", " ").split()).replace("|", "\\|")


def enums(header: str) -> dict[str, list[Member]]:
    """Every enum of the header: its members in order, each with its comment and version."""
    found: dict[str, list[Member]] = {}
    for name, body in ENUM.findall(header):
        members: list[Member] = []
        since = "1.0"
        # A member's comment may continue on the lines after it: join them to the member.
        entries = re.split(r"\n(?=\s*(?:PN_\w+\s*=|/\*\s*since))", body)
        for entry in entries:
            marker = re.match(r"\s*/\*\s*since (1\.\d+)\s*\*/", entry)
            if marker:
                since = marker.group(1)
                entry = entry[marker.end():]
                if not entry.strip():
                    continue
            match = MEMBER.match(entry)
            if not match:
                continue
            comment = _clean(match.group(3) or "")
            own = re.match(r"since (1\.\d+)(?::\s*|$)", comment)
            members.append(Member(match.group(1), int(match.group(2)), comment[own.end():] if own else comment,
                                  own.group(1) if own else since))
        found[name] = members
    return found


def _prefix(members: list[Member]) -> str:
    prefix = members[0].name
    for m in members[1:]:
        while not m.name.startswith(prefix):
            prefix = prefix[:-1]
    return prefix[: prefix.rfind("_") + 1]


def _short(members: list[Member]) -> list[tuple[str, Member]]:
    prefix = _prefix(members)
    return [(m.name.removeprefix(prefix), m) for m in members if not (m.value == 0 and m.name.endswith("INVALID"))]


def constants(header: str) -> str:
    defines = {name: (value, comment or "") for name, value, comment in DEFINE.findall(header)}
    major = defines["PLUGNN_BACKEND_API_VERSION_MAJOR"][0]
    minor = defines["PLUGNN_BACKEND_API_VERSION_MINOR"][0]
    rows = ["| Name | Value / meaning |", "|---|---|",
            f"| `PLUGNN_BACKEND_API_VERSION_MAJOR/_MINOR` | {major} / {minor}: this header is ABI {major}.{minor} |"]
    for name, (value, _) in defines.items():
        if name.startswith("PN_MAX_"):
            rows.append(f"| `{name}` | {value} (changing it is a MAJOR change) |")
    for member in enums(header)["pn_status"]:
        rows.append(f"| `{member.name}` | {member.value}" + (f", {member.comment}" if member.comment else "") + " |")
    return "\n".join(rows)


def dtypes(header: str) -> str:
    rows = ["| `pn_data_type` | Value | Since | Note |", "|---|---|---|---|"]
    for short, m in _short(enums(header)["pn_data_type"]):
        rows.append(f"| `{short}` | {m.value} | {m.since} | {m.comment} |")
    return "\n".join(rows)


def kinds(header: str) -> str:
    rows = ["| Kind (`pn_layer_kind`) | Value | Since | Descriptor; inputs (the header's own line) |",
            "|---|---|---|---|"]
    for short, m in _short(enums(header)["pn_layer_kind"]):
        rows.append(f"| `{short}` | {m.value} | {m.since} | {m.comment} |")
    return "\n".join(rows)


def enums_table(header: str) -> str:
    rows = ["| Enum | Members (value) | Members a minor version appended |", "|---|---|---|"]
    skip = {"pn_status", "pn_data_type", "pn_layer_kind"}
    for name, members in enums(header).items():
        if name in skip:
            continue
        short = _short(members)
        listed = ", ".join(f"{s}={m.value}" for s, m in short)
        later = sorted({m.since for _, m in short if m.since != "1.0"})
        appended = "; ".join(f"{v}: " + ", ".join(s for s, m in short if m.since == v) for v in later)
        rows.append(f"| `{name}` | {listed} | {appended or '-'} |")
    return "\n".join(rows)


def render(name: str, header: str | None = None) -> str:
    text = header if header is not None else HEADER.read_text(encoding="utf-8")
    return {"constants": constants, "dtypes": dtypes, "kinds": kinds, "enums": enums_table}[name](text)


def markers(name: str) -> tuple[str, str]:
    return f"<!-- abi:{name}:start -->", f"<!-- abi:{name}:end -->"


def section(document: str, name: str) -> str | None:
    start, end = markers(name)
    if start not in document or end not in document:
        return None
    return document.split(start, 1)[1].split(end, 1)[0].strip()


def write(path: Path) -> list[str]:
    """Replace every table of `path` whose markers it has; returns the names written."""
    text = path.read_text(encoding="utf-8")
    written = []
    for name in TABLES:
        start, end = markers(name)
        if section(text, name) is None:
            continue
        before, rest = text.split(start, 1)
        _, after = rest.split(end, 1)
        text = f"{before}{start}\n{render(name)}\n{end}{after}"
        written.append(name)
    path.write_text(text, encoding="utf-8")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", metavar="FILE.md", help="replace the tables between their markers in FILE.md")
    args = parser.parse_args(argv)
    if args.write:
        names = write(Path(args.write))
        if not names:
            print(f"{args.write}: no <!-- abi:NAME:start --> markers", file=sys.stderr)
            return 1
        print(f"{args.write}: {', '.join(names)}")
        return 0
    for name in TABLES:
        print(f"{name}:\n{render(name)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
