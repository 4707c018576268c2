"""The counts README.md and docs/*.md state are what scripts/doc_numbers.py computes now
(the layers of check-backend's sweep, the kinds a bundled backend claims, the ABI version):
regenerate them with `python scripts/doc_numbers.py --write` when they change."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "doc_numbers.py"


@pytest.fixture(scope="module")
def numbers():  # noqa: ANN201 - the script as a module
    spec = importlib.util.spec_from_file_location("doc_numbers", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_every_marked_number_is_what_its_script_computes(numbers) -> None:  # noqa: ANN001
    stale = [f"{path.relative_to(numbers.ROOT)}:{line}: {name} is {now}, the text says {written}"
             for path in numbers.documents() for line, name, written, now in numbers.stale(path)]
    assert not stale, "\n".join(stale) + "\n(python scripts/doc_numbers.py --write)"


def test_the_counts_the_issue_found_stale_are_marked(numbers) -> None:  # noqa: ANN001
    marked = {m.group(1) for path in numbers.documents() for m in numbers.MARK.finditer(path.read_text())}
    assert {"sweep_layers", "sweep_kinds", "abi_version", "claimed.CpuAcc", "claimed.CpuRef"} <= marked


def test_the_sweep_counts_add_up(numbers) -> None:  # noqa: ANN001
    kinds = [k for k in numbers._sweep_cases()]
    assert int(numbers.value("sweep_kinds")) == len(kinds)
    assert int(numbers.value("sweep_layers")) == sum(int(numbers.value(f"sweep_cases.{k}")) for k in kinds)
    for backend in numbers.BUNDLED:
        claimed, refused = int(numbers.value(f"claimed.{backend}")), int(numbers.value(f"refused.{backend}"))
        assert claimed + refused == int(numbers.value("sweep_layers"))
    assert numbers.value("claimed.CpuRef") == numbers.value("sweep_layers")  # the oracle runs every layer


def test_write_fills_marks_and_unknown_names_are_stale(numbers, tmp_path: Path) -> None:  # noqa: ANN001
    doc = tmp_path / "doc.md"
    doc.write_text("a <!--n:sweep_kinds-->0<!--/n--> b <!--n:no_such-->1<!--/n-->\n")
    assert [entry[1:] for entry in numbers.stale(doc)] == [("sweep_kinds", "0", numbers.value("sweep_kinds")),
                                                           ("no_such", "1", "unknown name")]
    with pytest.raises(KeyError):
        numbers.write(doc)
    doc.write_text("a <!--n:sweep_kinds-->0<!--/n--> b\n")
    assert numbers.write(doc) == 1
    assert doc.read_text() == f"a <!--n:sweep_kinds-->{numbers.value('sweep_kinds')}<!--/n--> b\n"
