"""scripts/onnx_backend_table.py: the measured "which backend runs each operator" table of docs/onnx.md."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("onnx")

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "onnx_backend_table.py"


@pytest.fixture(scope="module")
def table_module():
    spec = importlib.util.spec_from_file_location("onnx_backend_table", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _rows(text: str) -> dict[str, list[str]]:
    return {cells[0]: cells[1:] for cells in
            ([c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()[2:])}


def test_rows_count_where_the_layers_went(table_module) -> None:
    only = r"^test_(relu|add_uint8|shape|slice)$"
    rows = _rows(table_module.render(table_module.survey(["CpuAcc", "CpuRef"], only), ["CpuAcc", "CpuRef"]))
    assert rows["Relu"][:2] == ["CpuAcc 1 (of 1)", ""]
    # uint8 Add is not float32: it is counted under "other element types", on CpuRef, with CpuAcc's reason.
    assert rows["Add"][:2] == ["", "CpuRef 1 (of 1)"]
    assert "float32 only" in rows["Add"][2]
    assert rows["Shape"][0] == "folded 1 (of 1)"
    assert set(rows) == {"Relu", "Add", "Shape", "Slice"}


def test_cpuref_alone_takes_every_layer(table_module) -> None:
    rows = _rows(table_module.render(table_module.survey(["CpuRef"], r"^test_(relu|softmax_axis_0)$"), ["CpuRef"]))
    assert rows == {"Relu": ["CpuRef 1 (of 1)", "", ""], "Softmax": ["CpuRef 1 (of 1)", "", ""]}


def test_write_fills_the_markers_and_refuses_a_file_without_them(table_module, tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(f"before\n{table_module.START}\nold\n{table_module.END}\nafter\n")
    assert table_module.main(["--only", r"^test_relu$", "--write", str(doc)]) == 0
    text = doc.read_text()
    assert text.startswith("before\n") and text.endswith("after\n") and "old" not in text
    assert "| Relu | CpuAcc 1 (of 1) |" in text
    plain = tmp_path / "plain.md"
    plain.write_text("no markers\n")
    assert table_module.main(["--only", r"^test_relu$", "--write", str(plain)]) == 1
    assert plain.read_text() == "no markers\n"


def test_docs_table_is_what_the_script_measures_now(table_module) -> None:
    """docs/onnx.md's table must match the backends as they are: regenerate it when CpuAcc changes."""
    doc = (SCRIPT.parents[1] / "docs" / "onnx.md").read_text()
    section = doc.split(table_module.START, 1)[1].split(table_module.END, 1)[0].strip()
    measured = table_module.render(table_module.survey(["CpuAcc", "CpuRef"], None), ["CpuAcc", "CpuRef"])
    assert section == measured, "docs/onnx.md's backend table is stale: python scripts/onnx_backend_table.py --write docs/onnx.md"


def test_readme_and_docs_give_the_operator_count_the_importer_has() -> None:
    import plugnn.onnx

    count = f"{len(plugnn.onnx.OPERATORS)} operators of the default domain"
    root = SCRIPT.parents[1]
    assert count in (root / "README.md").read_text()
    assert count in (root / "docs" / "onnx.md").read_text()
