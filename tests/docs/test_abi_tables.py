"""docs/backends.md's ABI tables are what scripts/abi_tables.py reads from backend_api.h now:
regenerate them (`python scripts/abi_tables.py --write docs/backends.md`) when the header changes."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "abi_tables.py"


@pytest.fixture(scope="module")
def tables():  # noqa: ANN201 - the script as a module
    spec = importlib.util.spec_from_file_location("abi_tables", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_backends_md_tables_are_the_headers(tables) -> None:  # noqa: ANN001
    doc = (ROOT / "docs" / "backends.md").read_text()
    for name in tables.TABLES:
        assert tables.section(doc, name) == tables.render(name), (
            f"docs/backends.md's {name} table differs from backend_api.h: "
            "python scripts/abi_tables.py --write docs/backends.md")


def test_the_tables_hold_what_the_generated_module_holds(tables) -> None:  # noqa: ANN001
    """The text parser agrees with the cffi-generated view of the same header (plugnn._abi_defs)."""
    from plugnn import _abi_defs

    header = tables.HEADER.read_text()
    kinds = {m.name.removeprefix("PN_LAYER_"): m.value for m in tables.enums(header)["pn_layer_kind"] if m.value}
    assert kinds == {k.name: int(k) for k in _abi_defs.LayerKind}
    dtypes = {m.name.removeprefix("PN_DTYPE_"): m.value for m in tables.enums(header)["pn_data_type"] if m.value}
    assert dtypes == {t.name: int(t) for t in _abi_defs.DataType}
    version = f"{_abi_defs.PLUGNN_BACKEND_API_VERSION_MAJOR} / {_abi_defs.PLUGNN_BACKEND_API_VERSION_MINOR}"
    assert f"| {version}: this header is ABI" in tables.render("constants")


def test_since_markers_and_continued_comments(tables) -> None:  # noqa: ANN001
    header = """typedef enum pn_thing {
    PN_THING_INVALID = 0,
    PN_THING_A = 1,        /* first */
    /* since 1.1 */
    PN_THING_B = 2,        /* a comment that goes
                              on to the next line */
    PN_THING_C = 3         /* since 1.2: its own */
} pn_thing;"""
    members = tables.enums(header)["pn_thing"]
    assert [(m.name, m.value, m.since, m.comment) for m in members[1:]] == [
        ("PN_THING_A", 1, "1.0", "first"), ("PN_THING_B", 2, "1.1", "a comment that goes on to the next line"),
        ("PN_THING_C", 3, "1.2", "its own")]


def test_write_needs_the_markers(tables, tmp_path: Path) -> None:  # noqa: ANN001
    doc = tmp_path / "doc.md"
    doc.write_text("no markers\n")
    assert tables.main(["--write", str(doc)]) == 1
    start, end = tables.markers("kinds")
    doc.write_text(f"a\n{start}\nSTALE TABLE\n{end}\nb\n")
    assert tables.main(["--write", str(doc)]) == 0
    text = doc.read_text()
    assert "STALE TABLE" not in text and "| `CONVOLUTION_2D` | 1 | 1.0 |" in text and text.endswith(f"{end}\nb\n")
