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
    assert plugnn.BACKEND_API_VERSION == (major, minor) == (1, 3)


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
    (descriptors.QuantizationOp, "pn_quantization_op", "PN_QUANTIZATION_"),
    (descriptors.QuantizedOp, "pn_quantized_op", "PN_QUANTIZED_"),
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


# ---- descriptors: the header's field table and the Python mappings --------------------------


def descriptor_types() -> list[type]:
    return sorted({t for t in descriptors.DESCRIPTOR_TYPES.values() if t is not None} | {descriptors.ActivationDescriptor},
                  key=lambda t: t.__name__)


def test_the_field_table_is_the_header() -> None:
    from plugnn._abi_defs import DESCRIPTOR_FIELDS

    structs = sorted(s for s in abi_structs() if s.endswith("_desc"))
    assert sorted(DESCRIPTOR_FIELDS) == structs
    def plain(c_type: str) -> str:  # cffi versions differ in spelling out "enum"/"struct"
        return c_type.removeprefix("enum ").removeprefix("struct ")

    for struct, fields in DESCRIPTOR_FIELDS.items():
        assert [(n, plain(f.type.cname)) for n, f in ffi.typeof(struct).fields] == [(n, plain(t)) for n, t in fields]


def test_every_descriptor_struct_has_one_python_descriptor() -> None:
    from plugnn._abi_defs import DESCRIPTOR_FIELDS

    assert sorted(t.c_struct for t in descriptor_types()) == sorted(DESCRIPTOR_FIELDS)


@pytest.mark.parametrize("desc_type", descriptor_types(), ids=lambda t: t.__name__)
def test_every_c_field_is_mapped_exactly_once(desc_type: type) -> None:
    import dataclasses

    from plugnn._abi_defs import DESCRIPTOR_FIELDS

    mapped: list[str] = []
    for f in dataclasses.fields(desc_type):
        mapping = descriptors.c_mapping(f)
        shared = {"flag": mapping.names[:1], "array": mapping.names[:1]}.get(mapping.codec, ())  # flags, counts
        mapped += [n for n in mapping.names if not (n in shared and n in mapped)]
    c_fields = [name for name, _ in DESCRIPTOR_FIELDS[desc_type.c_struct] if name != "struct_size"]
    assert sorted(mapped) == sorted(c_fields)


ACT = descriptors.ActivationDescriptor("leaky_relu", 0.25, 0.0)
SAMPLES = [
    ACT,
    descriptors.Convolution2dDescriptor((2, 3), (1, 2, 3, 4), (2, 1), 2, "nhwc", True, True, ACT),
    descriptors.Pooling2dDescriptor("lp", (3, 2), (2, 1), (1, 0, 2, 1), (1, 2), "ceil", "include", "nchw", 3.0),
    descriptors.ElementwiseBinaryDescriptor("prelu", ACT),
    descriptors.ElementwiseVariadicDescriptor("mean"),
    descriptors.FullyConnectedDescriptor(True, False, 0.5, 2.0, True, ACT, True),
    descriptors.SoftmaxDescriptor(-2),
    descriptors.BatchNormalizationDescriptor(2.0 ** -10, "nhwc"),  # floats a float32 holds exactly
    descriptors.LrnDescriptor(5, 2.0 ** -10, 0.5, 2.0, "nchw"),
    descriptors.ConcatDescriptor(-1),
    descriptors.TransposeDescriptor((0, 2, 3, 1)),
    descriptors.ElementwiseUnaryDescriptor("erf"),
    descriptors.ReduceDescriptor("arg_max", (2,), False, True),
    descriptors.NormalizationDescriptor("group", 1, 4, 2.0 ** -12, True),
    descriptors.GatherDescriptor("nd", 0, 1),
    descriptors.ScatterDescriptor("elements", "max", -1),
    descriptors.SliceDescriptor((0, 3, 1), (1, -1, 2)),
    descriptors.SplitDescriptor(-2),
    descriptors.PadDescriptor("wrap", (0, 1, -2), (3, 0, 1)),
    descriptors.ResizeDescriptor("cubic", "tf_crop_and_resize", "ceil", -0.5, True, 2.5, True, (1.0, 1.0, 0.5, 2.0),
                                 (0.0, 0.0, 0.25, 0.125), (1.0, 1.0, 0.75, 0.875)),
    descriptors.CastDescriptor(False),
    descriptors.ConvolutionDescriptor("transposed", (2, 1, 3), (1, 0, 2), (0, 1, 2), (1, 2, 1), (1, 0, 2), 3, True, ACT),
    descriptors.PoolingDescriptor("average", (3,), (2,), (1,), (0,), (1,), "ceil", "include", 2.0),
    descriptors.RecurrentDescriptor("gru", 8, "bidirectional", (ACT, descriptors.ActivationDescriptor("tanh")) * 2,
                                    True, False, True, False, False, True, 2.5, True, False),
    descriptors.TopKDescriptor(1, False, True),
    descriptors.CumulativeDescriptor("prod", -1, True, False),
    descriptors.OneHotDescriptor(0),
    descriptors.TriangularDescriptor(False, -3),
    descriptors.DataDependentDescriptor("unique", True, -2, True, False),
    descriptors.DataDependentDescriptor("non_max_suppression", center_point_box=True),
    descriptors.ReduceDescriptor("sum", (0, 1, 3, 7), True, False),  # several axes, up to PN_MAX_DIMS - 1
    descriptors.ReduceDescriptor("log_sum_exp", (), False, False),   # no axes
    descriptors.NormalizationDescriptor("lp", -3, 1, 0.0, False),
    descriptors.NormalizationDescriptor("rms", 2, 0, 2.0 ** -20, True),
    descriptors.TopKDescriptor(-2, True, False),
    descriptors.CumulativeDescriptor("sum", 3, False, True),
    descriptors.QuantizationDescriptor("quantize_linear", -2, 32, "bfloat16"),
    descriptors.QuantizationDescriptor("dynamic_quantize_linear"),
    descriptors.QuantizedConvolutionDescriptor("qlinear", (2, 1, 3), (1, 0, 2), (0, 1, 2), (1, 2, 1), 3, True),
    descriptors.QuantizedConvolutionDescriptor("integer", (2,), (1,), (0,), (3,), 1, False),
    descriptors.QuantizedMatMulDescriptor("qlinear"),
    descriptors.GridSampleDescriptor("cubic", "reflection", True),
    descriptors.RoiAlignDescriptor("max", 3, 5, 2, 0.125, False),
    descriptors.DeformableConvolutionDescriptor((2, 1, 3), (1, 0, 2), (0, 1, 2), (1, 2, 1), 3, 2, True, True),
    descriptors.SpectralDescriptor("dft", 12, -3, True, True),
    descriptors.SpectralDescriptor("stft", 16, 0, False, True, 8, True),
    descriptors.LinearAlgebraDescriptor("determinant"),
    descriptors.RandomDescriptor("normal", 2 ** 64 - 3, -1.5, 0.25, True),
    descriptors.RandomDescriptor("multinomial", 7, 0.0, 0.0, False),
    descriptors.TreeEnsembleDescriptor("classifier", "sum", "softmax_zero"),
    descriptors.TreeEnsembleDescriptor("regressor", "max", "probit"),
]


@pytest.mark.parametrize("desc", SAMPLES, ids=lambda d: type(d).__name__)
def test_descriptors_round_trip_through_c(desc: object) -> None:
    from plugnn import _marshal

    keep: list = []
    c = _marshal.to_c_descriptor(desc, keep)
    assert c.struct_size == ffi.sizeof(type(desc).c_struct)
    kind = next((k for k, t in descriptors.DESCRIPTOR_TYPES.items() if t is type(desc)), None)
    back = (_marshal.from_c_descriptor(kind, c, "test", None) if kind is not None
            else _marshal._read_descriptor(type(desc), c, "test", None))
    assert back == desc


def test_every_descriptor_has_a_round_trip_sample() -> None:
    assert {type(d) for d in SAMPLES} == set(descriptor_types()) - {descriptors.PrecompiledDescriptor}


def test_a_descriptor_shorter_than_its_fields_is_refused() -> None:
    from plugnn import _marshal
    from plugnn.errors import PlugnnError

    keep: list = []
    c = _marshal.to_c_descriptor(descriptors.TransposeDescriptor((1, 0)), keep)
    c.struct_size = 8  # covers `rank`, not `perm`
    with pytest.raises(PlugnnError, match="pn_transpose_desc struct_size 8 is too small"):
        _marshal.from_c_descriptor(descriptors.LayerKind.TRANSPOSE, c, "test", None)
