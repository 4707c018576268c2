"""CpuAcc's data movement (plugins/accel/src/ops/data_movement.c, batch_norm.c): SLICE (any axes,
steps of any sign and size, empty and size-1 dims, ranks 0 to 6) and SPLIT (any axis, empty
pieces) on every element size the ABI has (1, 2, 4 and 8 bytes: BOOL, INT8, UINT8, FLOAT16,
BFLOAT16, INT16, UINT16, FLOAT32, INT32, UINT32, FLOAT64, INT64, UINT64), CONCAT (any axis,
runs long enough to be cut into chunks, an input already at its place in the output; every
element type too), RESHAPE, COPY and GATHER TAKE on every element type, CAST (cast.c: CpuRef's
bytes for every pair it runs), and
BATCH_NORMALIZATION (channels-second of rank 2 to 4, NHWC, constant and run-time operands).
Every kernel set this machine runs, at 1, 2, 3 and 7 threads. The copies are compared with
NumPy exactly (bit for bit); batch normalization with NumPy float64 within rtol 1e-5, atol 1e-5
and the same bits at every thread count. Outputs start filled with NaN / 0xA5 bytes, so an
element a kernel forgets shows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

import plugnn
from plugnn.descriptors import (BatchNormalizationDescriptor, CastDescriptor, ConcatDescriptor, DataLayout,
                                GatherDescriptor, LayerKind,
                                SliceDescriptor, SplitDescriptor)
from plugnn.layers import LayerSpec
from plugnn.tensor import DataType, TensorInfo

from .common import CONFIGS, HAVE_CPUACC, THREADS
from .common import execute as common_execute

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")

RNG = np.random.default_rng(20261127)
# One type of each element size and kind: 1, 2, 4, 8 bytes, integers, floats, bool.
DTYPES = [DataType.BOOL, DataType.INT8, DataType.UINT8, DataType.FLOAT16, DataType.BFLOAT16, DataType.INT16,
          DataType.UINT16, DataType.FLOAT32, DataType.INT32, DataType.UINT32, DataType.FLOAT64, DataType.INT64,
          DataType.UINT64]


def values(shape: Sequence[int], dtype: DataType) -> np.ndarray:
    """Distinct-looking values of `dtype` (random bytes for the integers, so every bit moves)."""
    nd = dtype.numpy_dtype
    if dtype is DataType.BOOL:
        return RNG.integers(0, 2, shape).astype(np.bool_)
    if dtype.name in ("FLOAT16", "BFLOAT16", "FLOAT32", "FLOAT64"):
        return (RNG.standard_normal(shape) * 100).astype(nd)
    raw = RNG.integers(0, 256, (int(np.prod(shape)) * dtype.itemsize,), dtype=np.uint8)
    return raw.view(nd).reshape(shape)


def layer_of(kind: LayerKind, desc: object, inputs: Sequence[np.ndarray], outputs: Sequence[tuple[int, ...]],
             dtype: DataType, constants: Sequence[int] = ()) -> LayerSpec:
    infos = tuple(TensorInfo(a.shape, DataType.from_any(a.dtype)) for a in inputs)
    consts = tuple(inputs[i] if i in constants else None for i in range(len(inputs))) if constants else ()
    return LayerSpec(kind, kind.name.lower(), desc, infos, tuple(TensorInfo(tuple(s), dtype) for s in outputs),
                     constants=consts)


def execute(rt: plugnn.Runtime, layer: LayerSpec, arrays: Sequence[np.ndarray],
            outputs: Sequence[np.ndarray] | None = None) -> list[np.ndarray]:
    """common.execute into `outputs`, or into outputs of the layer's types filled with 0xA5 bytes
    (NaN for the float types too)."""
    if outputs is None:
        outputs = []
        for info in layer.outputs:
            out = np.empty(info.shape, info.dtype.numpy_dtype)
            out.reshape(-1).view(np.uint8)[:] = 0xA5
            outputs.append(out)
    return common_execute(rt, layer, arrays, outputs)


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def check_exact(runtimes: dict[tuple[str, int], plugnn.Runtime], layer: LayerSpec, arrays: Sequence[np.ndarray],
                expected: Sequence[np.ndarray]) -> None:
    """Every config's outputs are `expected`, byte for byte."""
    for (isa, n), rt in runtimes.items():
        got = execute(rt, layer, arrays)
        for k, (g, e) in enumerate(zip(got, expected)):
            assert g.shape == e.shape, (isa, n, k)
            np.testing.assert_array_equal(bits(g), bits(e), err_msg=f"{layer.kind.name} output {k}: isa={isa} "
                                          f"num_threads={n}")


# ---- SLICE ------------------------------------------------------------------------------------

def slice_case(shape: tuple[int, ...], spec: Sequence[tuple[int | None, int | None, int]]) \
        -> tuple[SliceDescriptor, tuple[slice, ...], tuple[int, ...]]:
    """The descriptor (resolved starts, as the importer writes them), NumPy's index and the
    output shape of a Python slice per axis."""
    index = tuple(slice(b, e, s) for b, e, s in spec)
    out_shape = np.empty(shape, np.uint8)[index].shape
    starts = []
    for (b, e, s), dim, n in zip(spec, shape, out_shape):
        starts.append(range(dim)[slice(b, e, s)][0] if n > 0 else 0)
    return SliceDescriptor(tuple(starts), tuple(s for _, _, s in spec)), index, out_shape


SLICES = [
    ((7,), [(1, 6, 1)]),
    ((7,), [(None, None, -1)]),
    ((13,), [(11, 2, -3)]),
    ((1, 232, 14, 14), [(None, None, 1), (0, 116, 1), (None, None, 1), (None, None, 1)]),   # a channel half
    ((1, 232, 14, 14), [(None, None, 1), (116, 232, 1), (None, None, 1), (None, None, 1)]),
    ((1, 56, 56, 96), [(None, None, 1), (0, None, 2), (1, None, 2), (None, None, 1)]),     # patch merging
    ((1, 3, 64, 64), [(None, None, 1), (None, None, 1), (1, None, 2), (0, None, 2)]),      # space to depth
    ((1, 56, 56, 9), [(None, None, 1), (-3, None, 1), (None, None, 1), (None, None, 1)]),  # a roll's part
    ((3, 5, 7, 9), [(2, 0, -1), (None, None, 2), (6, None, -2), (8, 1, -4)]),
    ((2, 3, 4, 5, 6), [(None, None, -1), (1, 2, 1), (None, None, 3), (4, 0, -2), (None, None, 1)]),
    ((2, 1, 3, 1, 2, 5), [(1, None, 1), (None, None, 1), (None, None, -1), (None, None, 1), (0, 1, 1), (1, 4, 1)]),
    ((5, 0, 3), [(None, None, 1), (None, None, 1), (None, None, -1)]),                      # empty input
    ((5, 4, 3), [(2, 2, 1), (None, None, 1), (None, None, 1)]),                              # empty output
    ((70001,), [(3, None, 1)]),                                                              # chunked run
    ((3, 50000), [(None, None, -1), (None, None, -1)]),                                      # long reversed rows
]


@pytest.mark.parametrize("shape, spec", SLICES, ids=lambda v: str(v).replace(" ", ""))
def test_slice_float32(runtimes, shape, spec) -> None:  # type: ignore[no-untyped-def]
    desc, index, out_shape = slice_case(shape, spec)
    x = values(shape, DataType.FLOAT32)
    layer = layer_of(LayerKind.SLICE, desc, [x], [out_shape], DataType.FLOAT32)
    check_exact(runtimes, layer, [x], [x[index]])


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("case", [1, 5, 8, 9, 14], ids=lambda i: f"slice{i}")
def test_slice_every_element_type(runtimes, dtype: DataType, case: int) -> None:  # type: ignore[no-untyped-def]
    shape, spec = SLICES[case]
    desc, index, out_shape = slice_case(shape, spec)
    x = values(shape, dtype)
    layer = layer_of(LayerKind.SLICE, desc, [x], [out_shape], dtype)
    check_exact(runtimes, layer, [x], [x[index]])


def test_slice_rank0(runtimes) -> None:  # type: ignore[no-untyped-def]
    x = np.array(3.5, np.float32)
    layer = layer_of(LayerKind.SLICE, SliceDescriptor((), ()), [x], [()], DataType.FLOAT32)
    check_exact(runtimes, layer, [x], [x])


# ---- SPLIT ------------------------------------------------------------------------------------

SPLITS = [
    ((1, 232, 14, 14), 1, [116, 116]),
    ((2, 64, 20, 20), 1, [32, 0, 32]),
    ((2, 64, 20, 20), -1, [7, 13]),
    ((3, 5, 7), 0, [1, 2, 0, 0]),
    ((9, 1, 2), 1, [1]),
    ((4, 3 * 40000), 1, [40000, 40000, 40000]),   # chunked runs
    ((0, 6), 1, [2, 4]),
    ((17,), 0, [5, 5, 7]),
    ((1, 3, 28, 28, 85), -1, [2, 2, 81]),        # YOLO's head: short runs of any length
    ((5, 3, 7), -1, [1, 3, 3]),
]


def split_expected(x: np.ndarray, axis: int, sizes: Sequence[int]) -> list[np.ndarray]:
    return np.split(x, np.cumsum(sizes)[:-1], axis=axis)


@pytest.mark.parametrize("shape, axis, sizes", SPLITS, ids=lambda v: str(v).replace(" ", ""))
@pytest.mark.parametrize("dtype", [DataType.FLOAT32, DataType.BOOL, DataType.FLOAT16, DataType.INT64],
                         ids=lambda d: d.name)
def test_split(runtimes, shape, axis, sizes, dtype: DataType) -> None:  # type: ignore[no-untyped-def]
    x = values(shape, dtype)
    expected = split_expected(x, axis, sizes)
    layer = layer_of(LayerKind.SPLIT, SplitDescriptor(axis), [x], [e.shape for e in expected], dtype)
    check_exact(runtimes, layer, [x], expected)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_split_every_element_type(runtimes, dtype: DataType) -> None:  # type: ignore[no-untyped-def]
    x = values((3, 10, 5), dtype)
    expected = split_expected(x, 1, [3, 0, 6, 1])
    layer = layer_of(LayerKind.SPLIT, SplitDescriptor(1), [x], [e.shape for e in expected], dtype)
    check_exact(runtimes, layer, [x], expected)


# ---- CONCAT -----------------------------------------------------------------------------------

CONCATS = [
    ([(1, 64, 56, 56), (1, 32, 56, 56), (1, 32, 56, 56)], 1),   # a dense block's, batch 1
    ([(2, 3, 5), (2, 4, 5), (2, 0, 5), (2, 1, 5)], 1),
    ([(2, 3, 5), (2, 3, 7)], -1),
    ([(4, 9), (1, 9)], 0),
    ([(3, 1, 70000), (3, 2, 70000)], 1),                        # chunked runs
    ([(0, 4), (0, 4)], 0),
    ([(1, 3, 28, 28, 2), (1, 3, 28, 28, 2), (1, 3, 28, 28, 81)], -1),   # YOLO's head
    ([(4, 5, 1), (4, 5, 3), (4, 5, 6), (4, 5, 17)], -1),
]


@pytest.mark.parametrize("shapes, axis", CONCATS, ids=lambda v: str(v).replace(" ", ""))
def test_concat(runtimes, shapes, axis) -> None:  # type: ignore[no-untyped-def]
    xs = [values(s, DataType.FLOAT32) for s in shapes]
    expected = np.concatenate(xs, axis=axis)
    layer = layer_of(LayerKind.CONCAT, ConcatDescriptor(axis), xs, [expected.shape], DataType.FLOAT32)
    check_exact(runtimes, layer, xs, [expected])


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_concat_every_element_type(runtimes, dtype: DataType) -> None:  # type: ignore[no-untyped-def]
    xs = [values(s, dtype) for s in [(2, 3, 5), (2, 0, 5), (2, 4, 5)]]
    expected = np.concatenate(xs, axis=1)
    layer = layer_of(LayerKind.CONCAT, ConcatDescriptor(1), xs, [expected.shape], dtype)
    check_exact(runtimes, layer, xs, [expected])


def test_concat_input_already_in_place(runtimes) -> None:  # type: ignore[no-untyped-def]
    """An input whose data is its region of the output (a producer wrote there) stays as it is;
    the others are copied around it."""
    a, b, c = (values(s, DataType.FLOAT32) for s in [(1, 16, 9, 9), (1, 8, 9, 9), (1, 24, 9, 9)])
    expected = np.concatenate([a, b, c], axis=1)
    layer = layer_of(LayerKind.CONCAT, ConcatDescriptor(1), [a, b, c], [expected.shape], DataType.FLOAT32)
    backend_rt = next(iter(runtimes.values()))
    for rt in (backend_rt, *runtimes.values()):
        out = np.full(expected.shape, np.nan, np.float32)
        out[:, 16:24] = b
        view = out[:, 16:24]
        assert view.flags.c_contiguous
        factory = rt.backend("CpuAcc").create_workload_factory()
        workload = factory.create_workload(layer)
        factory.close()
        try:
            workload.execute([a, view, c], [out])
        finally:
            workload.close()
        np.testing.assert_array_equal(out, expected)


# ---- BATCH_NORMALIZATION ---------------------------------------------------------------------

def bn_expected(x: np.ndarray, p: Sequence[np.ndarray], eps: float, axis: int) -> np.ndarray:
    scale, bias, mean, var = (a.astype(np.float64) for a in p)
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    r = [a.reshape(shape) for a in (scale, bias, mean, var)]
    return r[0] * (x.astype(np.float64) - r[2]) / np.sqrt(r[3] + eps) + r[1]


@pytest.mark.parametrize("shape, layout", [((3, 17), DataLayout.NCHW), ((2, 5, 33), DataLayout.NCHW),
                                           ((1, 256, 28, 28), DataLayout.NCHW), ((2, 7, 5, 3), DataLayout.NHWC),
                                           ((0, 4, 3, 3), DataLayout.NCHW),
                                           ((1, 19, 1, 1), DataLayout.NCHW)], ids=str)
@pytest.mark.parametrize("constant", [True, False], ids=["constant", "runtime"])
def test_batch_norm(runtimes, shape, layout, constant: bool) -> None:  # type: ignore[no-untyped-def]
    axis = 3 if layout is DataLayout.NHWC else 1
    c = shape[axis]
    x = RNG.standard_normal(shape).astype(np.float32)
    params = [RNG.standard_normal(c).astype(np.float32), RNG.standard_normal(c).astype(np.float32),
              RNG.standard_normal(c).astype(np.float32), RNG.uniform(0.1, 2.0, c).astype(np.float32)]
    eps = 1e-3
    layer = layer_of(LayerKind.BATCH_NORMALIZATION, BatchNormalizationDescriptor(eps, layout), [x, *params], [shape],
                     DataType.FLOAT32, constants=(1, 2, 3, 4) if constant else ())
    expected = bn_expected(x, params, eps, axis)
    first: dict[str, np.ndarray] = {}
    for (isa, n), rt in runtimes.items():
        (y,) = execute(rt, layer, [x, *params])
        if isa not in first:
            first[isa] = y
            np.testing.assert_allclose(y.astype(np.float64), expected, rtol=1e-5, atol=1e-5, err_msg=isa)
        else:
            np.testing.assert_array_equal(y, first[isa], err_msg=f"isa={isa} num_threads={n} differs from "
                                          f"num_threads={THREADS[0]}")


# ---- RESHAPE, COPY, GATHER and CAST of any element type (the masks transformers build) ----------

@pytest.mark.parametrize("kind", [LayerKind.RESHAPE, LayerKind.COPY], ids=lambda k: k.name)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape, out_shape", [((1, 128), (128, 1)), ((3, 70001), (70001, 3)), ((0, 4), (4, 0)),
                                              ((), (1, 1))], ids=str)
def test_reshape_and_copy_every_element_type(runtimes, kind: LayerKind, dtype: DataType, shape,
                                             out_shape) -> None:  # type: ignore[no-untyped-def]
    x = values(shape, dtype)
    out = out_shape if kind is LayerKind.RESHAPE else shape
    layer = layer_of(kind, None, [x], [out], dtype)
    check_exact(runtimes, layer, [x], [x.reshape(out)])


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("axis, index_shape", [(0, (128, 1)), (1, (2, 3)), (-1, ()), (0, (0,))], ids=str)
def test_gather_every_element_type(runtimes, dtype: DataType, axis: int,
                                   index_shape: tuple[int, ...]) -> None:  # type: ignore[no-untyped-def]
    data = values((130, 3, 5), dtype)
    ids = RNG.integers(-data.shape[axis], data.shape[axis], index_shape).astype(np.int64)
    expected = np.take(data, ids, axis=axis)
    layer = layer_of(LayerKind.GATHER, GatherDescriptor("take", axis=axis), [data, ids], [expected.shape], dtype)
    check_exact(runtimes, layer, [data, ids], [expected])


def cast_source(dtype: DataType, n: int) -> np.ndarray:
    """Values that exercise a cast: zeros, -0.0, NaN and infinities for the floats, random bytes
    for the integers."""
    x = values((n,), dtype)
    if dtype.name in ("FLOAT16", "BFLOAT16", "FLOAT32", "FLOAT64"):
        special = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 0.5, -1.5, 3e9], np.float64)
        if dtype is DataType.BFLOAT16:
            return x  # (no NumPy float type to write the specials through)
        with np.errstate(over="ignore"):  # 3e9 is an infinity in float16
            x[:len(special)] = special.astype(dtype.numpy_dtype)[:n]
    elif dtype is not DataType.BOOL:
        x[::3] = 0
    return x


CASTS = [(DataType.INT64, DataType.BOOL), (DataType.INT32, DataType.BOOL), (DataType.FLOAT32, DataType.BOOL),
         (DataType.BOOL, DataType.FLOAT32), (DataType.FLOAT32, DataType.INT64), (DataType.INT64, DataType.FLOAT32),
         (DataType.FLOAT64, DataType.FLOAT16), (DataType.INT64, DataType.INT8), (DataType.UINT8, DataType.FLOAT64),
         (DataType.BOOL, DataType.INT64), (DataType.FLOAT16, DataType.BFLOAT16), (DataType.INT64, DataType.INT64),
         (DataType.UINT8, DataType.FLOAT32), (DataType.INT8, DataType.FLOAT32), (DataType.INT32, DataType.FLOAT32)]


@pytest.mark.parametrize("src, dst", CASTS, ids=lambda d: d.name)
@pytest.mark.parametrize("n", [0, 129, 50001])
def test_cast_is_cpurefs(runtimes, src: DataType, dst: DataType, n: int) -> None:  # type: ignore[no-untyped-def]
    """Every pair CpuAcc runs gives CpuRef's bytes (pn_convert's rules; x != 0 for BOOL targets,
    NaN included), at every kernel set and thread count (50001 elements: several chunks)."""
    x = cast_source(src, n)
    layer = layer_of(LayerKind.CAST, CastDescriptor(False), [x], [(n,)], dst)
    with plugnn.Runtime() as rt:
        ref = rt.backend("CpuRef")
        factory = ref.create_workload_factory()
        try:
            workload = factory.create_workload(layer)
        finally:
            factory.close()
        expected = np.empty((n,), dst.numpy_dtype)
        try:
            workload.execute([x], [expected])
        finally:
            workload.close()
    if dst is DataType.BOOL and src is not DataType.FLOAT16:
        np.testing.assert_array_equal(expected, x != 0)  # the reference itself: NaN is true, -0.0 false
    check_exact(runtimes, layer, [x], [expected])


# ---- Refusals ----------------------------------------------------------------------------------

def test_quantized_moves_need_one_quantization() -> None:
    """A move of bytes between tensors of different scales or zero points would change the
    values: refused with both named; the same quantization runs."""
    for out, ok in ((TensorInfo((3, 4), DataType.INT8, 0.5, 3), False), (TensorInfo((3, 4), DataType.INT8, 0.25, 3), True)):
        layer = LayerSpec(LayerKind.RESHAPE, "q", None, (TensorInfo((2, 6), DataType.INT8, 0.25, 3),), (out,))
        with plugnn.Runtime() as rt:
            support = rt.backend("CpuAcc").is_layer_supported(layer)
        assert support.supported == ok, support.reason
        if not ok:
            assert support.reason == ("CpuAcc runs Reshape as a move of bytes: output 0's quantization (scale 0.5, "
                                      "zero point 3) is not input 0's (scale 0.25, zero point 3)"), support.reason


@pytest.mark.parametrize("kind, desc, dtype, expected", [
    (LayerKind.BATCH_NORMALIZATION, BatchNormalizationDescriptor(1e-5), DataType.FLOAT16, "float32 only"),
    (LayerKind.CAST, CastDescriptor(True), DataType.FLOAT64,
     "CpuAcc runs Cast with saturate only to integer and BOOL targets; output 0 is float16"),
])
def test_refused_with_reason(kind: LayerKind, desc: object, dtype: DataType, expected: str) -> None:
    x = values((2, 3, 4, 4), dtype)
    inputs = [x] if kind is LayerKind.CAST else [x] + [values((3,), dtype)] * 4
    layer = layer_of(kind, desc, inputs, [(2, 3, 4, 4)], DataType.FLOAT16 if kind is LayerKind.CAST else dtype)
    with plugnn.Runtime() as rt:
        support = rt.backend("CpuAcc").is_layer_supported(layer)
    assert not support.supported
    assert "CpuAcc" in support.reason and expected in support.reason, support.reason


# ---- The fused reshape-transpose (fusion_patterns.c, index_copy.h) -----------------------------

def shuffle_net(shape: tuple[int, ...], steps: Sequence[tuple[str, Any]], export_middle: bool = False) \
        -> tuple[plugnn.Network, Any]:
    """x -> relu -> the reshape / transpose steps -> relu -> y, and the NumPy function of it;
    with export_middle the first step's output is also a graph output (so it cannot be fused)."""
    from plugnn import Network

    net = Network("shuffle")
    t = net.add_activation(net.add_input("x", shape), "relu", name="in_relu")
    first = None
    for i, (what, arg) in enumerate(steps):
        t = net.add_reshape(t, arg, name=f"r{i}") if what == "reshape" else net.add_transpose(t, arg, name=f"t{i}")
        first = t if first is None else first
    net.add_output(net.add_activation(t, "relu", name="out_relu"), "y")
    if export_middle:
        net.add_output(first, "middle")

    def numpy(x: np.ndarray) -> np.ndarray:
        y = np.maximum(x, 0)
        for what, arg in steps:
            y = y.reshape(arg) if what == "reshape" else np.transpose(y, arg)
        return np.maximum(y, 0)

    return net, numpy


SHUFFLES = {
    "channel shuffle g2": ((1, 232, 7, 7), [("reshape", (1, 2, 116, 7, 7)), ("transpose", (0, 2, 1, 3, 4)),
                                            ("reshape", (1, 232, 7, 7))]),
    "channel shuffle g3 odd": ((2, 9, 5, 3), [("reshape", (2, 3, 3, 5, 3)), ("transpose", (0, 2, 1, 3, 4)),
                                              ("reshape", (2, 9, 5, 3))]),
    "window partition": ((1, 14, 14, 24), [("reshape", (1, 2, 7, 2, 7, 24)), ("transpose", (0, 1, 3, 2, 4, 5)),
                                           ("reshape", (4, 49, 24))]),
    "window reverse": ((4, 49, 8), [("reshape", (1, 2, 2, 7, 7, 8)), ("transpose", (0, 1, 3, 2, 4, 5)),
                                    ("reshape", (1, 14, 14, 8))]),
    "transpose then reshape": ((3, 5, 16), [("transpose", (1, 0, 2)), ("reshape", (5, 48))]),
    "reshape then transpose": ((6, 10), [("reshape", (2, 3, 10)), ("transpose", (1, 0, 2))]),
}


def plan_types(optimized: Any) -> list[str]:
    return [r["type"] for r in optimized.assignments()]


@pytest.mark.parametrize("name", list(SHUFFLES))
def test_reshape_transpose_fused_into_one_copy(name: str) -> None:
    shape, steps = SHUFFLES[name]
    net, numpy = shuffle_net(shape, steps)
    x = RNG.standard_normal(shape).astype(np.float32)
    expected = numpy(x)
    for isa, n in CONFIGS:
        with plugnn.Runtime(backend_options={"CpuAcc": {"num_threads": n, "isa": isa}}) as rt:
            optimized = plugnn.optimize(net, rt, ["CpuAcc", "CpuRef"])
            types = plan_types(optimized)
            assert sum(t.startswith("Precompiled(reshape-transpose") for t in types) == 1, types
            assert not any(t in ("Reshape", "Transpose") for t in types), types
            with rt.load_network(optimized) as loaded:
                np.testing.assert_array_equal(loaded.run({"x": x})["y"], expected, err_msg=f"{isa} {n}")


def test_reshape_used_elsewhere_is_not_absorbed() -> None:
    shape, steps = SHUFFLES["channel shuffle g2"]
    net, numpy = shuffle_net(shape, steps, export_middle=True)
    x = RNG.standard_normal(shape).astype(np.float32)
    with plugnn.Runtime() as rt:
        optimized = plugnn.optimize(net, rt, ["CpuAcc", "CpuRef"])
        types = plan_types(optimized)
        assert types.count("Reshape") == 1 and "Transpose" not in types, types   # the transpose took the last
        with rt.load_network(optimized) as loaded:
            out = loaded.run({"x": x})
    np.testing.assert_array_equal(out["y"], numpy(x))
    np.testing.assert_array_equal(out["middle"], np.maximum(x, 0).reshape(steps[0][1]))


def test_lone_transpose_and_fuse_off_stay_unfused() -> None:
    net, _ = shuffle_net((3, 4, 5), [("transpose", (2, 0, 1))])
    with plugnn.Runtime() as rt:
        assert "Transpose" in plan_types(plugnn.optimize(net, rt, ["CpuAcc", "CpuRef"]))
    shape, steps = SHUFFLES["window partition"]
    net, numpy = shuffle_net(shape, steps)
    x = RNG.standard_normal(shape).astype(np.float32)
    with plugnn.Runtime(backend_options={"CpuAcc": {"fuse": "0"}}) as rt:
        optimized = plugnn.optimize(net, rt, ["CpuAcc", "CpuRef"])
        assert not any(t.startswith("Precompiled") for t in plan_types(optimized))
        with rt.load_network(optimized) as loaded:
            np.testing.assert_array_equal(loaded.run({"x": x})["y"], numpy(x))


def test_strided_inner_transpose_keeps_the_block_transpose() -> None:
    """YOLO's head: [1, 255, H, W] -> [1, 3, 85, H, W] -> (0, 1, 3, 4, 2): the innermost output dim
    is strided in x, so the Transpose keeps its block transposes and the Reshape stays."""
    steps = [("reshape", (1, 3, 85, 7, 9)), ("transpose", (0, 1, 3, 4, 2))]
    net, numpy = shuffle_net((1, 255, 7, 9), steps)
    x = RNG.standard_normal((1, 255, 7, 9)).astype(np.float32)
    with plugnn.Runtime() as rt:
        optimized = plugnn.optimize(net, rt, ["CpuAcc", "CpuRef"])
        types = plan_types(optimized)
        assert "Transpose" in types and "Reshape" in types, types
        with rt.load_network(optimized) as loaded:
            np.testing.assert_array_equal(loaded.run({"x": x})["y"], numpy(x))


# ---- Batch normalization with its activation (batch_norm.h) --------------------------------------

def bn_net(shape: tuple[int, ...], act: str, layout: str = "NCHW", runtime_scale: bool = False,
           export_bn: bool = False) -> tuple[plugnn.Network, list[np.ndarray]]:
    from plugnn import Network

    c = shape[3] if layout == "NHWC" else shape[1]
    params = [RNG.standard_normal(c).astype(np.float32), RNG.standard_normal(c).astype(np.float32),
              RNG.standard_normal(c).astype(np.float32), RNG.uniform(0.2, 2.0, c).astype(np.float32)]
    net = Network("bn_act")
    x = net.add_activation(net.add_input("x", shape), "tanh", name="pre")  # no convolution to fold into
    scale = net.add_input("scale", (c,)) if runtime_scale else params[0]
    bn = net.add_batch_normalization(x, scale, *params[1:], epsilon=1e-3, layout=layout, name="bn")
    net.add_output(net.add_activation(bn, act, name="act"), "y")
    if export_bn:
        net.add_output(bn, "bn_out")
    return net, params


def bn_act_expected(x: np.ndarray, params: Sequence[np.ndarray], axis: int, act: str) -> np.ndarray:
    y = bn_expected(np.tanh(x.astype(np.float64)), params, 1e-3, axis)
    return {"relu": np.maximum(y, 0), "sigmoid": 1 / (1 + np.exp(-y)), "tanh": np.tanh(y)}[act]


@pytest.mark.parametrize("shape, layout", [((1, 12, 9, 11), "NCHW"), ((2, 5, 7, 3), "NHWC"), ((3, 17), "NCHW")],
                         ids=str)
@pytest.mark.parametrize("act", ["relu", "sigmoid", "tanh"])
def test_batch_norm_with_its_activation_is_one_layer(shape, layout: str, act: str) -> None:
    net, params = bn_net(shape, act, layout)
    x = RNG.standard_normal(shape).astype(np.float32)
    expected = bn_act_expected(x, params, 3 if layout == "NHWC" else 1, act)
    first: dict[str, np.ndarray] = {}
    for isa, n in CONFIGS:
        with plugnn.Runtime(backend_options={"CpuAcc": {"num_threads": n, "isa": isa}}) as rt:
            optimized = plugnn.optimize(net, rt, ["CpuAcc", "CpuRef"])
            types = plan_types(optimized)
            assert sum(t.startswith("Precompiled(batch normalization") for t in types) == 1, types
            with rt.load_network(optimized) as loaded:
                y = loaded.run({"x": x})["y"]
        if isa not in first:
            first[isa] = y
            np.testing.assert_allclose(y.astype(np.float64), expected, rtol=1e-5, atol=1e-5, err_msg=isa)
        else:
            np.testing.assert_array_equal(y, first[isa], err_msg=f"isa={isa} num_threads={n}")


def test_batch_norm_stays_apart_with_run_time_operands_or_another_reader() -> None:
    shape = (1, 6, 5, 5)
    x = RNG.standard_normal(shape).astype(np.float32)
    net, params = bn_net(shape, "relu", runtime_scale=True)
    with plugnn.Runtime() as rt:
        optimized = plugnn.optimize(net, rt, ["CpuAcc", "CpuRef"])
        assert "BatchNormalization" in plan_types(optimized)
        with rt.load_network(optimized) as loaded:
            y = loaded.run({"x": x, "scale": params[0]})["y"]
    np.testing.assert_allclose(y, bn_act_expected(x, params, 1, "relu"), rtol=1e-5, atol=1e-5)
    net, params = bn_net(shape, "relu", export_bn=True)
    with plugnn.Runtime() as rt:
        optimized = plugnn.optimize(net, rt, ["CpuAcc", "CpuRef"])
        types = plan_types(optimized)
        assert "BatchNormalization" in types and "Activation" in types, types
        with rt.load_network(optimized) as loaded:
            out = loaded.run({"x": x})
    np.testing.assert_allclose(out["y"], bn_act_expected(x, params, 1, "relu"), rtol=1e-5, atol=1e-5)
