"""The generated cffi module, the Python enums and the version all come from the header."""

import enum
import re
from pathlib import Path

import pytest

import plugnn
from plugnn import descriptors, tensor
from plugnn._abi import ffi, status_name
from plugnn.cli import PACKAGE_DIR

HEADER = PACKAGE_DIR / "include" / "plugnn" / "backend_api.h"
REPO_HEADER = Path(__file__).resolve().parents[2] / "native" / "include" / "plugnn" / "backend_api.h"


def test_installed_header_is_the_repository_header() -> None:
    assert HEADER.read_text() == REPO_HEADER.read_text()


def test_version_is_read_from_the_header() -> None:
    text = REPO_HEADER.read_text()
    major = int(re.search(r"#define PLUGNN_BACKEND_API_VERSION_MAJOR (\d+)", text).group(1))
    minor = int(re.search(r"#define PLUGNN_BACKEND_API_VERSION_MINOR (\d+)", text).group(1))
    assert plugnn.BACKEND_API_VERSION == (major, minor) == (1, 0)


@pytest.mark.parametrize("py_enum, c_enum, prefix", [
    (tensor.DataType, "pn_data_type", "PN_DTYPE_"),
    (descriptors.LayerKind, "pn_layer_kind", "PN_LAYER_"),
    (descriptors.DataLayout, "pn_data_layout", "PN_LAYOUT_"),
    (descriptors.ActivationKind, "pn_activation_kind", "PN_ACTIVATION_"),
    (descriptors.PoolingKind, "pn_pooling_kind", "PN_POOLING_"),
    (descriptors.OutputRounding, "pn_output_rounding", "PN_ROUNDING_"),
    (descriptors.PaddingMethod, "pn_padding_method", "PN_PADDING_"),
    (descriptors.BinaryOp, "pn_binary_op", "PN_BINARY_"),
    (descriptors.VariadicOp, "pn_variadic_op", "PN_VARIADIC_"),
])
def test_python_enums_match_the_header(py_enum: type[enum.IntEnum], c_enum: str, prefix: str) -> None:
    c_values = {name.removeprefix(prefix): value for name, value in ffi.typeof(c_enum).relements.items()}
    assert c_values.pop("INVALID") == 0
    assert {m.name: m.value for m in py_enum} == c_values


def test_status_enum_is_numbered_with_ok_zero() -> None:
    elements = ffi.typeof("pn_status").relements
    assert elements["PN_OK"] == 0
    assert sorted(elements.values()) == list(range(len(elements)))
    assert status_name(6) == "PN_ERR_INTERNAL"
    assert status_name(99) == "status 99"


def abi_structs() -> list[str]:
    return sorted(set(re.findall(r"typedef struct (pn_\w+) \{", REPO_HEADER.read_text())))


@pytest.mark.parametrize("struct", abi_structs())
def test_every_abi_struct_starts_with_struct_size(struct: str) -> None:
    if struct == "pn_string_out":  # documented as frozen forever, carries no size
        return
    name, field = ffi.typeof(struct).fields[0]
    assert name == "struct_size" and field.offset == 0 and ffi.sizeof(field.type) == 4


def test_every_enum_but_status_has_invalid_zero() -> None:
    enums = re.findall(r"typedef enum (pn_\w+) \{", REPO_HEADER.read_text())
    assert len(enums) >= 9
    for name in enums:
        if name != "pn_status":
            assert 0 in ffi.typeof(name).elements, name


def test_entry_points_are_declared() -> None:
    for decl in ("const char* GetBackendId(void);", "void GetVersion(uint32_t* major_out, uint32_t* minor_out);",
                 "void* BackendFactory(void);"):
        assert f"PLUGNN_BACKEND_EXPORT {decl}" in REPO_HEADER.read_text()


def test_import_does_not_load_numpy_or_the_native_glue() -> None:
    import subprocess
    import sys

    code = "import sys, plugnn; print('numpy' in sys.modules, 'plugnn._abi_cffi' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
