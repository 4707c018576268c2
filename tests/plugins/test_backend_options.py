"""Backend options in the ABI (1.2): the reserved keys of backend_api.h, pn_backend.list_options,
Backend.options() for native and Python backends, `plugnn backends` printing them, check-backend
exercising them, and a plugin built against the 1.1 header (no list_options) still loading."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from plugnn import loader
from plugnn._abi_defs import OptionType
from plugnn.backend import NUM_THREADS, Backend, OptionInfo
from plugnn.check import check_backend
from plugnn.errors import BackendOptionError
from plugnn.runtime import Runtime

pytestmark = pytest.mark.plugins

REPO = Path(__file__).resolve().parent.parent.parent
HEADER = REPO / "native" / "include" / "plugnn" / "backend_api.h"
CPUACC_OPTIONS = ["num_threads", "isa", "fuse", "amx", "blocked_chains", "nontemporal_bytes", "flush_denormals",
                  "packed_weight_bytes"]


def bundled(backend_id: str) -> Path:
    return Path(loader.BUNDLED_DIR) / f"Plugnn_{backend_id}_backend.so"


def mock_file(mock_out_dir: Path, mock: str) -> Path:
    manifest = json.loads((mock_out_dir / "mocks.json").read_text())
    return mock_out_dir / mock / manifest[mock]["file"]


def test_the_reserved_keys_come_from_the_header() -> None:
    defines = dict(re.findall(r'^#define\s+(PN_OPTION_\w+)\s+"(\w+)"', HEADER.read_text(), re.M))
    assert defines == {"PN_OPTION_NUM_THREADS": "num_threads"}
    assert NUM_THREADS == "num_threads"
    assert [t.name for t in OptionType] == ["STRING", "INT", "BOOL", "FLOAT"]


def test_cpuacc_lists_its_options_from_one_table() -> None:
    with Runtime() as runtime:
        backend = runtime.backend("CpuAcc")
        options = backend.options()
        assert [o.name for o in options] == CPUACC_OPTIONS
        by_name = {o.name: o for o in options}
        assert by_name[NUM_THREADS].type == "int" and int(by_name[NUM_THREADS].default) >= 1
        assert by_name["fuse"].type == "bool" and by_name["fuse"].default == "1"
        assert by_name["blocked_chains"].default == "1"
        assert by_name["isa"].type == "string" and by_name["isa"].default in ("portable", "avx2", "avx512")
        assert by_name["amx"].type == "bool" and by_name["amx"].default in ("0", "1")
        assert by_name["packed_weight_bytes"].read_only and not by_name["fuse"].read_only
        assert all(o.help for o in options)
        for option in options:  # a new backend reads each listed default
            assert backend.get_option(option.name) == option.default, option.name
        assert backend.takes_option(NUM_THREADS) and not backend.takes_option("no_such_option")


def test_cpuacc_options_parse_and_refuse_as_before() -> None:
    with Runtime() as runtime:
        backend = runtime.backend("CpuAcc")
        backend.set_option("fuse", "0")
        assert backend.get_option("fuse") == "0"
        backend.set_option(NUM_THREADS, "3")
        assert backend.get_option(NUM_THREADS) == "3"
        for key, value, text in [("fuse", "yes", "must be 1 or 0"), (NUM_THREADS, "0", "from 1 to 256"),
                                 ("isa", "sse9", "must be auto, portable, avx2 or avx512"),
                                 ("nontemporal_bytes", "-1", "non-negative integer"),
                                 ("packed_weight_bytes", "0", "read-only")]:
            with pytest.raises(BackendOptionError, match=text) as info:
                backend.set_option(key, value)
            assert info.value.status == "PN_ERR_INVALID_ARGUMENT"
        with pytest.raises(BackendOptionError, match=r"no option 'threads' \(options: num_threads, isa, fuse, amx, "
                                                     r"blocked_chains, nontemporal_bytes, flush_denormals, packed_weight_bytes\)") as info:
            backend.get_option("threads")
        assert info.value.status == "PN_ERR_NOT_FOUND"
        with pytest.raises(BackendOptionError) as info:
            backend.set_option("threads", "1")
        assert info.value.status == "PN_ERR_NOT_FOUND"
        # the listed defaults are a new backend object's: setting options changes no description
        assert backend.options()[0].default == Runtime().backend("CpuAcc").get_option(NUM_THREADS)


def test_cpuref_lists_no_options() -> None:
    with Runtime() as runtime:
        backend = runtime.backend("CpuRef")
        assert backend.has("list_options")
        assert backend.options() == ()


def test_a_python_backend_lists_options_by_overriding() -> None:
    class Knob(Backend):
        backend_id = "PyKnob"

        def is_layer_supported(self, layer):  # type: ignore[no-untyped-def]
            raise NotImplementedError

        def create_workload_factory(self, memory_manager=None):  # type: ignore[no-untyped-def]
            raise NotImplementedError

        def options(self) -> tuple[OptionInfo, ...]:
            return (OptionInfo(NUM_THREADS, "int", "1", "threads"),)

    class Plain(Knob):
        backend_id = "PyPlain"

        def options(self) -> tuple[OptionInfo, ...]:
            return Backend.options(self)

    assert Knob().takes_option(NUM_THREADS)
    assert Plain().options() == () and not Plain().takes_option(NUM_THREADS)
    assert OptionInfo("a", "bool", "0", "h", True).as_dict() == {"name": "a", "type": "bool", "default": "0",
                                                                "help": "h", "read_only": True}


def test_a_plugin_built_against_the_1_1_header_keeps_loading(plugin_dir: Callable[..., Path]) -> None:
    with Runtime(dynamic_backends_path=str(plugin_dir("minor_1_1"))) as runtime:
        backend = runtime.backend("MockMinor11")
        assert backend.version == (1, 1)
        # list_options lies past its struct_size (a trap there): never called, no options listed
        assert not backend.has("list_options")
        assert backend.options() == ()
        assert backend.get_option("which") == "minor_1_1"  # its 1.0 options still work


def test_a_plugin_built_against_the_frozen_1_0_header_lists_no_options(plugin_dir: Callable[..., Path]) -> None:
    with Runtime(dynamic_backends_path=str(plugin_dir("abi_1_0"))) as runtime:
        backend = runtime.backend("MockAbi10")
        assert backend.version == (1, 0) and not backend.has("list_options")
        assert backend.options() == ()


def test_backends_command_prints_each_backends_options(plugin_dir: Callable[..., Path],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLUGNN_DYNAMIC_BACKEND_PATHS", f"{plugin_dir('minor_1_1')}:{{bundled}}")
    run = subprocess.run([sys.executable, "-m", "plugnn", "backends"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "CpuAcc options:" in run.stdout and "CpuRef options:" not in run.stdout
    table = run.stdout.split("CpuAcc options:", 1)[1]
    for name in CPUACC_OPTIONS:
        assert re.search(rf"^{name}\s", table, re.M), name
    assert "int, read-only" in table
    data = json.loads(subprocess.run(
        [sys.executable, "-m", "plugnn", "backends", "--json"],
        capture_output=True, text=True, timeout=120, check=True).stdout)
    rows = {b["backend_id"]: b for b in data["backends"]}
    assert [o["name"] for o in rows["CpuAcc"]["options"]] == CPUACC_OPTIONS
    assert rows["CpuRef"]["options"] == [] and rows["MockMinor11"]["options"] == []


def test_check_backend_exercises_the_listed_options(mock_out_dir: Path) -> None:
    report = check_backend(bundled("CpuAcc"))
    assert report.checks["lifecycle"].status == "pass", report.text()
    text = report.text()
    assert all(name in text for name in CPUACC_OPTIONS), text
    assert check_backend(mock_file(mock_out_dir, "minor_1_1")).passed


def test_the_options_table_in_the_docs_is_cpuaccs() -> None:
    """docs/backends.md holds the options CpuAcc lists: every name, type and help line."""
    with Runtime() as runtime:
        options = runtime.backend("CpuAcc").options()
    docs = (REPO / "docs" / "backends.md").read_text()
    for option in options:
        row = f"| `{option.name}` | {option.type}{', read-only' if option.read_only else ''} | {option.help} |"
        assert row in docs, row


def test_cpuacc_option_amx_is_on_where_the_cpu_has_it_and_refused_where_not() -> None:
    """amx (the integer GEMM on AMX-INT8 tiles): the default says whether this CPU has AMX-INT8 and
    Linux lets the process use it; 0 is always taken; 1 is refused where it cannot run."""
    with Runtime() as runtime:
        backend = runtime.backend("CpuAcc")
        usable = backend.get_option("amx") == "1"
        has_flag = "amx_int8" in Path("/proc/cpuinfo").read_text()
        assert usable <= has_flag  # never on without the CPU's flag
        backend.set_option("amx", "0")
        assert backend.get_option("amx") == "0"
        if usable:
            backend.set_option("amx", "1")
            assert backend.get_option("amx") == "1"
        else:
            with pytest.raises(BackendOptionError, match="no AMX-INT8") as info:
                backend.set_option("amx", "1")
            assert info.value.status == "PN_ERR_UNSUPPORTED"
