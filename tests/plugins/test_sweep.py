"""plugnn.sweep, the layer sweep of `plugnn check-backend`: every layer kind but PRECOMPILED has a
generator; each generator covers what its kind's enums and parameters offer (every operation,
mode, reduction, coordinate transform, spatial rank, type class); CpuRef claims every generated
layer and refuses the malformed twin of each kind."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator

import numpy as np
import pytest

from plugnn import descriptors as d
from plugnn import sweep
from plugnn.layers import LayerKind
from plugnn.loader import BUNDLED_DIR, create_backend, load_shared_object
from plugnn.tensor import DataType

K = LayerKind
FLOATS = {DataType.FLOAT32, *sweep._float_types()}


def members(enum: type) -> set:
    return {m for m in enum if m.name != "INVALID"}


def cases(kind: LayerKind) -> list[sweep.Case]:
    return sweep.cases(kind)


def descriptors(kind: LayerKind) -> list:
    return [c.spec.descriptor for c in cases(kind)]


def input_types(kind: LayerKind, index: int = 0) -> set[DataType]:
    return {c.spec.inputs[index].dtype for c in cases(kind) if len(c.spec.inputs) > index}


@pytest.fixture(scope="module")
def cpuref() -> Iterator:
    shared = load_shared_object(os.path.join(BUNDLED_DIR, "Plugnn_CpuRef_backend.so"))
    backend = create_backend(shared)
    yield backend
    backend.close()


def test_every_kind_but_precompiled_has_a_generator() -> None:
    assert set(sweep.GENERATORS) == set(LayerKind) - sweep.NOT_SWEPT
    assert sweep.NOT_SWEPT == {K.PRECOMPILED}
    for kind in sweep.GENERATORS:
        assert cases(kind), sweep.kind_name(kind)


def test_cases_are_the_same_on_every_call() -> None:
    for kind in (K.CAST, K.GATHER, K.RESIZE):
        first, second = cases(kind), cases(kind)
        assert [c.name for c in first] == [c.name for c in second]
        for x, y in zip(first, second):
            for a, b in zip(x.inputs, y.inputs):
                np.testing.assert_array_equal(a, b, err_msg=x.name)


def test_case_names_are_unique_within_a_kind() -> None:
    for kind in sweep.GENERATORS:
        names = [c.name for c in cases(kind)]
        assert len(names) == len(set(names)), (sweep.kind_name(kind), sorted(n for n in names if names.count(n) > 1))


def test_elementwise_unary_covers_every_op_and_its_types() -> None:
    descs = descriptors(K.ELEMENTWISE_UNARY)
    assert {x.op for x in descs} == members(d.UnaryOp)
    by_op: dict[d.UnaryOp, set[DataType]] = {}
    for c in cases(K.ELEMENTWISE_UNARY):
        by_op.setdefault(c.spec.descriptor.op, set()).add(c.spec.inputs[0].dtype)
    for op in (d.UnaryOp.EXP, d.UnaryOp.FLOOR, d.UnaryOp.IS_NAN, d.UnaryOp.ACOSH):
        assert FLOATS <= by_op[op], op
    assert {DataType.INT8, DataType.INT64} <= by_op[d.UnaryOp.ABS]
    assert by_op[d.UnaryOp.LOGICAL_NOT] == {DataType.BOOL}
    assert set(sweep.INTEGER_TYPES) <= by_op[d.UnaryOp.BITWISE_NOT]


def test_unary_inputs_lie_in_each_functions_domain() -> None:
    for c in cases(K.ELEMENTWISE_UNARY):
        x = np.asarray(c.inputs[0], np.float64) if c.spec.inputs[0].dtype.is_float else None
        if x is None or not x.size:
            continue
        op = c.spec.descriptor.op.name
        if op in ("SQRT", "RSQRT", "LOG"):
            assert x.min() > 0, c.name
        if op in ("ASIN", "ACOS", "ATANH"):
            assert np.abs(x).max() < 1, c.name
        if op == "ACOSH":
            assert x.min() > 1, c.name
        if op in ("FLOOR", "CEIL") or (op == "ROUND" and "halves" not in c.name):
            fraction = np.abs(x - np.round(x))
            assert fraction.min() >= 0.2 and np.abs(fraction - 0.5).min() >= 0.2, c.name
        if op.startswith("IS_") and x.size >= 15:
            assert np.isnan(x).any() and np.isposinf(x).any() and np.isneginf(x).any(), c.name


def test_select_takes_every_type_and_broadcasts() -> None:
    assert input_types(K.SELECT, 0) == {DataType.BOOL}
    assert {DataType.BOOL, DataType.INT64, DataType.UINT8} | FLOATS <= input_types(K.SELECT, 1)
    assert any(len({i.shape for i in c.spec.inputs}) == 3 for c in cases(K.SELECT))


def test_reduce_covers_every_op_axes_and_keep_dims() -> None:
    descs = descriptors(K.REDUCE)
    ops = members(d.ReduceOp)
    assert {x.op for x in descs} == ops
    for op in ops - {d.ReduceOp.ARG_MAX, d.ReduceOp.ARG_MIN}:
        mine = [x for x in descs if x.op is op]
        assert {len(x.axes) for x in mine} >= {0, 1, 2}, op
        assert {x.keep_dims for x in mine} == {True, False}, op
    for op in (d.ReduceOp.ARG_MAX, d.ReduceOp.ARG_MIN):
        mine = [c for c in cases(K.REDUCE) if c.spec.descriptor.op is op]
        assert {c.spec.descriptor.select_last_index for c in mine} == {True, False}
        for c in mine:  # no ties: the index is the only answer
            x = c.inputs[0]
            assert np.unique(x).size == x.size, c.name
    assert any(0 in c.spec.inputs[0].shape for c in cases(K.REDUCE)), "an empty reduction"
    bool_ops = {c.spec.descriptor.op for c in cases(K.REDUCE) if c.spec.inputs[0].dtype is DataType.BOOL}
    assert bool_ops == {d.ReduceOp.MAX, d.ReduceOp.MIN}
    assert {DataType.INT32, DataType.INT64, DataType.UINT8} | FLOATS <= input_types(K.REDUCE)


def test_normalization_covers_layer_rms_group_instance_and_lp() -> None:
    N = d.NormalizationOp
    found = {c.spec.descriptor.op for c in cases(K.NORMALIZATION)}
    assert found == members(N)
    group = [c for c in cases(K.NORMALIZATION) if c.spec.descriptor.op is N.GROUP]
    assert any(c.spec.descriptor.num_groups == c.spec.inputs[0].shape[1] for c in group), "instance normalization"
    assert any(1 < c.spec.descriptor.num_groups < c.spec.inputs[0].shape[1] for c in group)
    assert {c.spec.descriptor.num_groups for c in cases(K.NORMALIZATION) if c.spec.descriptor.op is N.LP} == {1, 2}
    layer = [x for x in descriptors(K.NORMALIZATION) if x.op in (N.LAYER, N.RMS)]
    assert {x.has_bias for x in layer} == {True, False} and len({x.axis for x in layer}) >= 3
    assert FLOATS <= input_types(K.NORMALIZATION)


def test_gather_covers_take_elements_nd_with_negative_and_run_time_indices() -> None:
    G = d.GatherOp
    all_cases = cases(K.GATHER)
    assert {c.spec.descriptor.op for c in all_cases} == members(G)
    assert {c.spec.descriptor.batch_dims for c in all_cases if c.spec.descriptor.op is G.ND} == {0, 1}
    for op in members(G):
        indices = [c.inputs[1] for c in all_cases if c.spec.descriptor.op is op]
        assert any((i < 0).any() for i in indices), f"{op}: negative indices"
    constant = [c for c in all_cases if c.spec.constants and c.spec.constants[1] is not None]
    run_time = [c for c in all_cases if not c.spec.constants]
    assert constant and run_time
    assert input_types(K.GATHER, 1) == {DataType.INT32, DataType.INT64}
    assert {DataType.BOOL, DataType.INT8} | FLOATS <= input_types(K.GATHER)


def test_scatter_covers_every_op_and_reduction_with_repeated_indices() -> None:
    pairs = {(x.op, x.reduction) for x in descriptors(K.SCATTER)}
    assert pairs == set(itertools.product(members(d.ScatterOp), members(d.ScatterReduction)))
    repeated = [c for c in cases(K.SCATTER) if c.spec.descriptor.op is d.ScatterOp.ELEMENTS
                and c.spec.descriptor.axis == 0 and c.inputs[1].shape[0] > c.inputs[0].shape[0]]
    assert repeated, "more updates than rows along the axis: indices repeat"
    assert DataType.BOOL in input_types(K.SCATTER) and FLOATS <= input_types(K.SCATTER)


def test_slice_has_negative_larger_and_empty_steps() -> None:
    descs = cases(K.SLICE)
    steps = {s for c in descs for s in c.spec.descriptor.steps}
    assert -1 in steps and any(s < -1 for s in steps) and any(s > 1 for s in steps)
    assert any(0 in c.spec.outputs[0].shape for c in descs), "an empty slice"
    assert {c.spec.inputs[0].rank for c in descs} >= {1, 2, 3, 4}


def test_split_has_uneven_and_empty_pieces() -> None:
    sizes = []
    for c in cases(K.SPLIT):
        axis = c.spec.descriptor.axis % c.spec.inputs[0].rank
        sizes.append([o.shape[axis] for o in c.spec.outputs])
    assert any(len(set(s)) > 1 for s in sizes) and any(0 in s for s in sizes) and any(len(s) == 1 for s in sizes)


def test_pad_covers_every_mode_cropping_and_the_value_input() -> None:
    descs = cases(K.PAD)
    assert {c.spec.descriptor.mode for c in descs} == members(d.PadMode)
    for mode in members(d.PadMode):
        assert any(min(c.spec.descriptor.pads_begin + c.spec.descriptor.pads_end) < 0 for c in descs
                   if c.spec.descriptor.mode is mode), f"{mode}: a negative pad"
    assert any(len(c.spec.inputs) == 2 for c in descs)
    assert any(max(c.spec.descriptor.pads_end) > max(c.spec.inputs[0].shape) for c in descs
               if c.spec.descriptor.mode is d.PadMode.WRAP), "wrap pads longer than the axis"


def test_resize_covers_modes_coordinates_nearest_modes_and_1_to_4_axes() -> None:
    descs = cases(K.RESIZE)
    pairs = {(c.spec.descriptor.mode, c.spec.descriptor.coordinates) for c in descs}
    assert pairs == set(itertools.product(members(d.ResizeMode), members(d.CoordinateTransform)))
    nearest = {c.spec.descriptor.nearest_mode for c in descs if c.spec.descriptor.mode is d.ResizeMode.NEAREST}
    assert nearest == members(d.NearestMode)
    for mode in members(d.ResizeMode):
        resized = {sum(i != o for i, o in zip(c.spec.inputs[0].shape, c.spec.outputs[0].shape)) for c in descs
                   if c.spec.descriptor.mode is mode}
        assert {1, 2, 3, 4} <= resized, mode
    assert any(c.spec.descriptor.antialias for c in descs) and any(c.spec.descriptor.exclude_outside for c in descs)
    nearest_types = {c.spec.inputs[0].dtype for c in descs if c.spec.descriptor.mode is d.ResizeMode.NEAREST}
    assert {DataType.BOOL, DataType.INT8, DataType.UINT64} | FLOATS <= nearest_types


def _type_class(dtype: DataType) -> str:
    if dtype.is_float:
        return "float"
    if dtype is DataType.BOOL:
        return "bool"
    return "unsigned" if dtype.name.startswith("UINT") else "signed"


def test_cast_covers_every_pair_of_type_classes_and_rounds_once() -> None:
    descs = cases(K.CAST)
    pairs = {(_type_class(c.spec.inputs[0].dtype), _type_class(c.spec.outputs[0].dtype)) for c in descs}
    classes = {"float", "signed", "unsigned", "bool"}
    assert pairs == set(itertools.product(classes, classes))
    assert {c.spec.descriptor.saturate for c in descs} == {True, False}
    for c in descs:  # floats to integers: in range, away from integers (truncation has one answer)
        source, target = c.spec.inputs[0].dtype, c.spec.outputs[0].dtype
        if source.is_float and target.is_integer:
            x = np.asarray(c.inputs[0], np.float64)
            info = np.iinfo(target.numpy_dtype)
            assert info.min <= x.min() and x.max() <= info.max, c.name
            nonzero = x[x != 0]
            assert (np.abs(nonzero - np.round(nonzero)) >= 0.25).all(), c.name
    trap = [c for c in descs if "rounds once" in c.name and c.spec.outputs[0].dtype is DataType.FLOAT16][0]
    x = trap.inputs[0]
    assert not np.array_equal(x.astype(np.float16), x.astype(np.float32).astype(np.float16))


def test_convolution_covers_1_to_3_d_forward_and_transposed_with_groups_and_dilation() -> None:
    descs = descriptors(K.CONVOLUTION)
    assert {(x.op, x.spatial_rank) for x in descs} == set(itertools.product(members(d.ConvolutionOp), (1, 2, 3)))
    for op in members(d.ConvolutionOp):
        mine = [x for x in descs if x.op is op]
        assert any(x.groups > 1 for x in mine) and any(max(x.dilations) > 1 for x in mine), op
        assert any(max(x.pads_begin + x.pads_end) > 0 for x in mine) and any(max(x.strides) > 1 for x in mine), op
    assert any(max(x.output_padding) > 0 for x in descs)
    assert any(x.fused_activation is not None for x in descs) and {x.has_bias for x in descs} == {True, False}
    assert FLOATS <= input_types(K.CONVOLUTION)


def test_pooling_covers_1_to_3_d_max_average_lp() -> None:
    descs = descriptors(K.POOLING)
    assert {(x.kind, x.spatial_rank) for x in descs} == set(itertools.product(members(d.PoolingKind), (1, 2, 3)))
    assert {x.rounding for x in descs} == members(d.OutputRounding)
    assert {x.padding_method for x in descs if x.kind is d.PoolingKind.AVERAGE} == members(d.PaddingMethod)
    assert {x.p for x in descs if x.kind is d.PoolingKind.LP} >= {1.0, 2.0, 3.0}
    assert any(max(x.dilations) > 1 for x in descs)
    integer = {c.spec.inputs[0].dtype for c in cases(K.POOLING) if c.spec.inputs[0].dtype.is_integer}
    assert integer and {c.spec.descriptor.kind for c in cases(K.POOLING)
                        if c.spec.inputs[0].dtype.is_integer} == {d.PoolingKind.MAX}


def test_top_k_largest_smallest_without_ties() -> None:
    descs = cases(K.TOP_K)
    assert {(c.spec.descriptor.largest, c.spec.descriptor.sorted) for c in descs} == set(
        itertools.product((True, False), (True, False)))
    for c in descs:
        x = c.inputs[0]
        assert np.unique(x).size == x.size, c.name
        if not c.spec.descriptor.sorted:  # any order is right: only k = 1 has one answer
            axis = c.spec.descriptor.axis % x.ndim
            assert c.spec.outputs[0].shape[axis] == 1, c.name
    ks = {c.spec.outputs[0].shape[c.spec.descriptor.axis % c.inputs[0].ndim] for c in descs}
    assert 0 in ks and max(ks) > 1
    assert {DataType.INT8, DataType.INT64} | FLOATS <= input_types(K.TOP_K)


def test_cumulative_covers_op_exclusive_reverse() -> None:
    found = {(x.op, x.exclusive, x.reverse) for x in descriptors(K.CUMULATIVE)}
    assert found == set(itertools.product(members(d.CumulativeOp), (True, False), (True, False)))
    assert {DataType.UINT8, DataType.INT64} | FLOATS <= input_types(K.CUMULATIVE)


def test_one_hot_covers_axes_index_types_and_out_of_range_indices() -> None:
    descs = cases(K.ONE_HOT)
    axes = {c.spec.descriptor.axis % (c.spec.inputs[0].rank + 1) == c.spec.inputs[0].rank for c in descs}
    assert axes == {True, False}, "the depth last and elsewhere"
    assert {DataType.INT32, DataType.INT64, DataType.UINT8, DataType.FLOAT32} <= input_types(K.ONE_HOT, 0)
    assert {DataType.BOOL, DataType.INT8} | FLOATS <= input_types(K.ONE_HOT, 1)
    depth = [(c.inputs[0], c.spec.outputs[0].shape[c.spec.descriptor.axis % c.spec.outputs[0].rank]) for c in descs]
    assert any((np.asarray(i, np.float64) < 0).any() for i, _ in depth)
    assert any((np.abs(np.asarray(i, np.float64)) >= n).any() for i, n in depth), "an index out of range"


def test_triangular_covers_upper_lower_and_diagonals() -> None:
    descs = descriptors(K.TRIANGULAR)
    assert {x.upper for x in descs} == {True, False}
    for upper in (True, False):
        ks = {x.k for x in descs if x.upper is upper}
        assert min(ks) < 0 < max(ks) and 0 in ks
    assert {DataType.BOOL, DataType.UINT64} | FLOATS <= input_types(K.TRIANGULAR)


def test_every_kind_has_a_wide_case() -> None:
    """Rows longer than a 16-wide vector and not a multiple of 8 (vector loops and tails)."""
    for kind in sweep.GENERATORS:
        if kind.value < K.ELEMENTWISE_UNARY.value or kind.value in range(K.RECURRENT.value, K.TOP_K.value) or \
                kind.value >= K.QUANTIZATION.value:
            continue
        assert any(max((max(i.shape, default=0) for i in c.spec.inputs), default=0) >= 37 for c in cases(kind)), \
            sweep.kind_name(kind)


def test_cpuref_claims_every_generated_layer(cpuref) -> None:
    for kind in sweep.GENERATORS:
        for c in cases(kind):
            answer = cpuref.is_layer_supported(c.spec)
            assert answer.supported, (sweep.kind_name(kind), c.name, answer.reason)


def test_cpuref_refuses_the_malformed_twin_of_every_kind(cpuref) -> None:
    for kind in sweep.GENERATORS:
        bad = sweep.malformed(cases(kind)[0])
        assert bad.spec.outputs[0] != cases(kind)[0].spec.outputs[0]
        answer = cpuref.is_layer_supported(bad.spec)
        assert not answer.supported and answer.reason.strip(), (sweep.kind_name(kind), bad.name)
