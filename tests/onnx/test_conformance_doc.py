"""docs/conformance.md mirrors the EXCLUDED list of test_node_conformance.py: the same patterns in
the same order, each with its reason word for word, the suites it matches tests of and how many."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import test_node_conformance as conformance

DOC = Path(__file__).resolve().parents[2] / "docs" / "conformance.md"
SECTION = "## Every exclusion and its reason"
ROW = re.compile(r"^\| `(?P<pattern>(?:[^`])+)` \| (?P<suites>[^|]+) \| (?P<count>\d+) \| (?P<reason>.+) \|$")


def _rows() -> list[tuple[str, str, int, str]]:
    text = DOC.read_text(encoding="utf-8")
    assert SECTION in text, f"{DOC} has no section {SECTION!r}"
    rows = []
    for line in text.split(SECTION, 1)[1].splitlines():
        match = ROW.match(line)
        if match:
            rows.append((match["pattern"].replace("\\|", "|"), match["suites"].strip(), int(match["count"]),
                         match["reason"]))
    return rows


def _collected() -> dict[str, str]:
    """Every collected test name -> its suite."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {name: suite for suite, class_name in conformance.SUITES.items()
                for name in vars(getattr(conformance, class_name)) if name.startswith("test_")}


def test_the_doc_mirrors_every_exclusion_in_order() -> None:
    rows = _rows()
    assert [r[0] for r in rows] == [p for p, _ in conformance.EXCLUDED]
    for (pattern, _suites, _count, reason), (_, want) in zip(rows, conformance.EXCLUDED):
        assert reason == want, f"the reason for {pattern!r} differs from EXCLUDED's"


def test_the_doc_gives_each_exclusion_its_suites_and_count() -> None:
    names = _collected()
    for pattern, suites, count, _reason in _rows():
        hits = [n for n in names if re.search(pattern, n)]
        assert hits, f"{pattern!r} matches no test of the installed onnx"
        assert count == len(hits), f"{pattern!r} matches {len(hits)} tests, the doc says {count}"
        assert suites == ", ".join(sorted({names[n] for n in hits}))
