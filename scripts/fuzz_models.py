#!/usr/bin/env python3
"""Malformed models through plugnn, onnxruntime and onnx.checker, each case in child processes.

    python scripts/fuzz_models.py --mutants 3000 --edge-cases --json fuzz.json

Cases: seeded mutants of a few small graphs built with onnx.helper (byte flips, truncations and
structured mutations: attributes of the wrong type, duplicated or dropped, inputs dropped,
added or named '', op types renamed or not UTF-8, initializer dims negative or huge, duplicate
initializers, Constant data disagreeing with its dims, absurd shapes, NaN/Inf bounds, ...), and
single-operator edge cases (every operator plugnn imports, with too few inputs, too many
inputs, an empty required input and each attribute of the wrong type).

Each case runs in a child forked from this (already importing) process, one child per engine:
plugnn (an InferenceSession on the runtime's preference, CpuAcc with 1 thread then CpuRef; the
model imported and run on seeded inputs), onnxruntime, onnx.checker; a child still running
after --hang-seconds is killed and counted as a hang. plugnn's outcome is one of: ok, a typed
error (a plugnn.PlugnnError), an untyped exception (anything else), a bare MemoryError, a crash
(a signal), a hang. When plugnn and onnxruntime both run and their outputs differ, onnx.reference
decides (a difference is explained when plugnn agrees with the reference). A model that
onnx.checker rejects for duplicate names or wrong arity and that plugnn runs is counted as
accepted-invalid.

Exit status 0 when there are no untyped exceptions, crashes, hangs, bare MemoryErrors,
accepted-invalid duplicate/arity models or unexplained differences; 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import resource
import select
import signal
import struct
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import onnx
import onnx.reference  # noqa: F401 - imported once here, not in every child
import onnxruntime  # noqa: F401
from onnx import AttributeProto, TensorProto, helper, numpy_helper

QUIET = True  # the children's stdout and stderr go to /dev/null (onnxruntime's messages)
CHILD_MEMORY_BYTES = 6 << 30  # address space of each child: a blow-up is a MemoryError, not the OOM killer
OPSET = 17

# ---- seed graphs --------------------------------------------------------------------------------


def _model(nodes: list[Any], inputs: list[Any], outputs: list[Any], inits: list[Any], name: str) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, name, inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=8)


def _f(name: str, shape: list[Any]) -> Any:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def seed_graphs() -> dict[str, onnx.ModelProto]:
    rng = np.random.default_rng(0)

    def w(name: str, *shape: int) -> Any:
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)

    def i64(name: str, values: list[int]) -> Any:
        return numpy_helper.from_array(np.array(values, np.int64), name)

    graphs = {}
    graphs["cnn"] = _model([
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[1, 1], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2], name="pool1"),
        helper.make_node("BatchNormalization", ["p1", "s", "bb", "mu", "var"], ["n1"], epsilon=1e-5, name="bn"),
        helper.make_node("GlobalAveragePool", ["n1"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["fl"], axis=1, name="flatten"),
        helper.make_node("Gemm", ["fl", "wf", "bf"], ["y"], transB=1, alpha=1.0, name="fc"),
    ], [_f("x", [1, 3, 8, 8])], [_f("y", [1, 5])],
        [w("w1", 4, 3, 3, 3), w("b1", 4), w("s", 4), w("bb", 4), w("mu", 4),
         numpy_helper.from_array(np.abs(rng.standard_normal(4)).astype(np.float32) + 0.5, "var"), w("wf", 5, 4), w("bf", 5)],
        "cnn")
    graphs["attention"] = _model([
        helper.make_node("MatMul", ["x", "wq"], ["q"], name="q"),
        helper.make_node("MatMul", ["x", "wk"], ["k"], name="k"),
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1], name="kt"),
        helper.make_node("MatMul", ["q", "kt"], ["s"], name="scores"),
        helper.make_node("Softmax", ["s"], ["a"], axis=-1, name="softmax"),
        helper.make_node("MatMul", ["a", "x"], ["h"], name="mix"),
        helper.make_node("Add", ["h", "x"], ["res"], name="residual"),
        helper.make_node("LayerNormalization", ["res", "gamma", "beta"], ["y"], axis=-1, epsilon=1e-5, name="ln"),
    ], [_f("x", [1, 4, 8])], [_f("y", [1, 4, 8])], [w("wq", 8, 8), w("wk", 8, 8), w("gamma", 8), w("beta", 8)],
        "attention")
    graphs["shapes"] = _model([
        helper.make_node("Shape", ["x"], ["sh"], name="shape"),
        helper.make_node("Gather", ["sh", "zero"], ["n"], axis=0, name="gather"),
        helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"], name="unsq"),
        helper.make_node("Concat", ["n1", "minus1"], ["newshape"], axis=0, name="concat_shape"),
        helper.make_node("Reshape", ["x", "newshape"], ["flat"], name="reshape"),
        helper.make_node("Slice", ["flat", "starts", "ends", "axes1"], ["sl"], name="slice"),
        helper.make_node("Expand", ["sl", "eshape"], ["ex"], name="expand"),
        helper.make_node("Tile", ["ex", "reps"], ["ti"], name="tile"),
        helper.make_node("Range", ["r0", "r1", "r2"], ["rng"], name="range"),
        helper.make_node("Cast", ["rng"], ["rngf"], to=TensorProto.FLOAT, name="cast"),
        helper.make_node("Mul", ["ti", "rngf"], ["m"], name="mul"),
        helper.make_node("ConstantOfShape", ["cshape"], ["ones"], value=numpy_helper.from_array(np.ones(1, np.float32)),
                         name="cos"),
        helper.make_node("Add", ["m", "ones"], ["y"], name="add"),
    ], [_f("x", [2, 3, 4])], [_f("y", [2, 6, 12])],
        [i64("zero", [0]), i64("axes0", [0]), i64("minus1", [-1]), i64("starts", [1]), i64("ends", [7]),
         i64("axes1", [1]), i64("eshape", [2, 3, 6]), i64("reps", [1, 2, 2]),
         numpy_helper.from_array(np.array(0, np.int64), "r0"), numpy_helper.from_array(np.array(12, np.int64), "r1"),
         numpy_helper.from_array(np.array(1, np.int64), "r2"), i64("cshape", [2, 6, 12])], "shapes")
    graphs["recurrent"] = _model([
        helper.make_node("LSTM", ["x", "W", "R", "B"], ["Y", "Yh"], hidden_size=6, name="lstm"),
        helper.make_node("Squeeze", ["Y", "ax1"], ["ys"], name="squeeze"),
        helper.make_node("ReduceMean", ["ys"], ["y"], axes=[0], keepdims=0, name="mean"),
    ], [_f("x", [5, 1, 4])], [_f("y", [1, 6])],
        [w("W", 1, 24, 4), w("R", 1, 24, 6), w("B", 1, 48), i64("ax1", [1])], "recurrent")
    graphs["elementwise"] = _model([
        helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.full((3,), 0.5, np.float32)), name="const"),
        helper.make_node("Mul", ["x", "c"], ["m"], name="mul"),
        helper.make_node("Clip", ["m", "lo", "hi"], ["cl"], name="clip"),
        helper.make_node("Pow", ["cl", "two"], ["p"], name="pow"),
        helper.make_node("Where", ["mask", "p", "x"], ["wh"], name="where"),
        helper.make_node("ReduceSum", ["wh", "axes"], ["y"], keepdims=1, name="sum"),
        helper.make_node("ArgMax", ["wh"], ["am"], axis=1, keepdims=1, name="argmax"),
        helper.make_node("Cast", ["am"], ["y2"], to=TensorProto.FLOAT, name="cast"),
    ], [_f("x", [2, 3]), helper.make_tensor_value_info("mask", TensorProto.BOOL, [2, 3])],
        [_f("y", [2, 1]), _f("y2", [2, 1])],
        [numpy_helper.from_array(np.array(-1.0, np.float32), "lo"), numpy_helper.from_array(np.array(1.0, np.float32), "hi"),
         numpy_helper.from_array(np.array(2.0, np.float32), "two"), i64("axes", [1])], "elementwise")
    return graphs


# ---- mutations -----------------------------------------------------------------------------------

_ATTRIBUTE_KINDS = [AttributeProto.FLOAT, AttributeProto.INT, AttributeProto.STRING, AttributeProto.TENSOR,
                    AttributeProto.FLOATS, AttributeProto.INTS, AttributeProto.STRINGS, AttributeProto.UNDEFINED]


def _attribute_of_kind(name: str, kind: int, rng: np.random.Generator) -> Any:
    if kind == AttributeProto.FLOAT:
        return helper.make_attribute(name, float(rng.choice([0.0, -1.0, 1e30, float("nan")])))
    if kind == AttributeProto.INT:
        return helper.make_attribute(name, int(rng.choice([0, -1, 7, 2**62])))
    if kind == AttributeProto.STRING:
        return helper.make_attribute(name, "bogus")
    if kind == AttributeProto.TENSOR:
        return helper.make_attribute(name, numpy_helper.from_array(np.zeros(2, np.float32)))
    if kind == AttributeProto.FLOATS:
        return helper.make_attribute(name, [1.5, -2.0])
    if kind == AttributeProto.INTS:
        return helper.make_attribute(name, [int(v) for v in rng.integers(-3, 5, size=int(rng.integers(0, 4)))])
    if kind == AttributeProto.STRINGS:
        return helper.make_attribute(name, ["a", "b"])
    attr = AttributeProto()
    attr.name = name  # no value, type UNDEFINED
    return attr


def _pick(rng: np.random.Generator, seq: Any) -> Any:
    return seq[int(rng.integers(len(seq)))]


def m_attr_wrong_type(m: onnx.ModelProto, rng: np.random.Generator) -> bool:
    nodes = [n for n in m.graph.node if n.attribute]
    if not nodes:
        return False
    node = _pick(rng, nodes)
    i = int(rng.integers(len(node.attribute)))
    old = node.attribute[i]
    kinds = [k for k in _ATTRIBUTE_KINDS if k != old.type]
    node.attribute[i].CopyFrom(_attribute_of_kind(old.name, _pick(rng, kinds), rng))
    return True


def m_attr_duplicate(m: onnx.ModelProto, rng: np.random.Generator) -> bool:
    nodes = [n for n in m.graph.node if n.attribute]
    if not nodes:
        return False
    node = _pick(rng, nodes)
    dup = AttributeProto()
    dup.CopyFrom(_pick(rng, node.attribute))
    if dup.type == AttributeProto.INT:
        dup.i += 1
    node.attribute.append(dup)
    return True


def m_attr_drop(m: onnx.ModelProto, rng: np.random.Generator) -> bool:
    nodes = [n for n in m.graph.node if n.attribute]
    if not nodes:
        return False
    node = _pick(rng, nodes)
    del node.attribute[int(rng.integers(len(node.attribute)))]
    return True


def m_attr_value(m: onnx.ModelProto, rng: np.random.Generator) -> bool:
    """An attribute of the right type with an extreme value."""
    nodes = [n for n in m.graph.node if any(a.type in (AttributeProto.INT, AttributeProto.INTS, AttributeProto.FLOAT)
                                           for a in n.attribute)]
    if not nodes:
        return False
    node = _pick(rng, nodes)
    attr = _pick(rng, [a for a in node.attribute if a.type in (AttributeProto.INT, AttributeProto.INTS, AttributeProto.FLOAT)])
    if attr.type == AttributeProto.INT:
        attr.i = int(_pick(rng, [-(2**63), -100, -2, 0, 1000, 2**31, 2**63 - 1]))
    elif attr.type == AttributeProto.FLOAT:
        attr.f = float(_pick(rng, [float("nan"), float("inf"), -1e38, 0.0]))
    else:
        del attr.ints[:]
        attr.ints.extend(int(_pick(rng, [-(2**62), -5, 0, 1, 3, 2**40])) for _ in range(int(rng.integers(0, 6))))
    return True


def m_input_drop(m: onnx.ModelProto, rng: np.random.Generator) -> bool:
    nodes = [n for n in m.graph.node if n.input]
    node = _pick(rng, nodes)
    node.input.pop()
    return True


def m_input_extra(m: onnx.ModelProto, rng: np.random.Generator) -> bool:
    node = _pick(rng, list(m.graph.node))
    names = [i.name for i in m.graph.input] + [t.name for t in m.graph.initializer]
    node.input.append(_pick(rng, names))
    return True


def m_input_empty(m: onnx.ModelProto, rng: np.random.Generator) -> bool:
    nodes = [n for n in m.graph.node if n.input]
    node = _pick(rng, nodes)
    node.input[int(rng.integers(len(node.input)))] = ""
    return True


def m_input_rename(m: onnx.ModelProto, rng: np.random.Generator) -> bool:
    nodes = [n for n in m.graph.node if n.input]
    node = _pick(rng, nodes)
    node.input[int(rng.integers(len(node.input)))] = _pick(rng, ["nowhere", node.output[0] if node.output else "z"])
    return True


def m_output_drop(m: onnx.ModelProto, rng: np.random.Generator) -> bool:
    node = _pick(rng, list(m.graph.node))
    if not node.output:
        return False
    node.output[int(rng.integers(len(node.output)))] = ""
    return True


def m_op_rename(m: onnx.ModelProto, rng: np.random.Generator) -> bool:
    node = _pick(rng, list(m.graph.node))
    node.op_type = _pick(rng, ["Add", "Relu", "Conv", "Reshape", "Gather", "MatMul", "Concat", "Softmax", "Slice",
                               "Transpose", "NoSuchOp", "", "Range", "Expand", "TopK", "Split", "Pad", "Resize"])
    return True


def m_node_swap(m: onnx.ModelProto, rng: np.random.Generator) -> bool:
    n = len(m.graph.node)
    if n < 2:
        return False
    a, b = rng.choice(n, 2, replace=False)
    na, nb = onnx.NodeProto(), onnx.NodeProto()
    na.CopyFrom(m.graph.node[int(a)])
    nb.CopyFrom(m.graph.node[int(b)])
    m.graph.node[int(a)].CopyFrom(nb)
    m.graph.node[int(b)].CopyFrom(na)
    return True


def m_node_duplicate_output(m: onnx.ModelProto, rng: np.random.Generator) -> bool:
    nodes = list(m.graph.node)
    if len(nodes) < 2:
        return False
    a, b = rng.choice(len(nodes), 2, replace=False)
    if not nodes[int(a)].output or not nodes[int(b)].output:
        return False
    nodes[int(b)].output[0] = nodes[int(a)].output[0]
    return True


def m_init_dims(m: onnx.ModelProto, rng: np.random.Generator) -> bool:
    inits = list(m.graph.initializer)
    t = _pick(rng, inits)
    if not t.dims:
        t.dims.append(int(_pick(rng, [-1, 0, 2, 2**40])))
        return True
    t.dims[int(rng.integers(len(t.dims)))] = int(_pick(rng, [-1, -7, 0, 1, 3, 2**33, 2**62]))
    return True


def m_init_duplicate(m: onnx.ModelProto, rng: np.random.Generator) -> bool:
    t = _pick(rng, list(m.graph.initializer))
    dup = TensorProto()
    dup.CopyFrom(t)
    array = numpy_helper.to_array(t)
    if array.dtype.kind == "f":
        dup.CopyFrom(numpy_helper.from_array((array * 2 + 1).astype(array.dtype), t.name))
    m.graph.initializer.append(dup)
    return True


def m_init_dtype(m: onnx.ModelProto, rng: np.random.Generator) -> bool:
    t = _pick(rng, list(m.graph.initializer))
    t.data_type = int(_pick(rng, [0, 1, 2, 3, 6, 7, 8, 9, 10, 11, 16, 17, 23, 99]))
    return True


def m_init_data(m: onnx.ModelProto, rng: np.random.Generator) -> bool:
    """Raw data shorter or longer than the dims say, or values replaced by extremes."""
    t = _pick(rng, list(m.graph.initializer))
    array = numpy_helper.to_array(t)
    choice = int(rng.integers(3))
    if choice == 0:
        raw = array.tobytes()
        cut = int(rng.integers(0, max(len(raw), 1)))
        t.ClearField("float_data")
        t.ClearField("int64_data")
        t.raw_data = raw[:cut] if rng.random() < 0.7 else raw + b"\x00" * 8
        return True
    if array.dtype.kind == "f":
        bad = array.copy().reshape(-1)
        bad[int(rng.integers(bad.size))] = _pick(rng, [np.nan, np.inf, -np.inf, 3e38])
        t.CopyFrom(numpy_helper.from_array(bad.reshape(array.shape), t.name))
        return True
    if array.dtype.kind == "i":
        bad = array.copy().reshape(-1)
        if bad.size:
            bad[int(rng.integers(bad.size))] = int(_pick(rng, [-(2**62), -3, 0, 2**20, 2**33, 2**62]))
        t.CopyFrom(numpy_helper.from_array(bad.reshape(array.shape), t.name))
        return True
    return False


def m_constant_dims(m: onnx.ModelProto, rng: np.random.Generator) -> bool:
    """A tensor attribute (Constant's value, ConstantOfShape's) whose data disagree with its dims."""
    for node in m.graph.node:
        for attr in node.attribute:
            if attr.type == AttributeProto.TENSOR:
                attr.t.dims[:] = [int(_pick(rng, [0, 2, 5, 7, -1]))] * int(rng.integers(1, 3))
                return True
    return False


def m_graph_input(m: onnx.ModelProto, rng: np.random.Generator) -> bool:
    vi = _pick(rng, list(m.graph.input))
    choice = int(rng.integers(4))
    if choice == 0:
        vi.type.tensor_type.elem_type = int(_pick(rng, [0, 2, 6, 7, 8, 10, 11, 16]))
    elif choice == 1 and vi.type.tensor_type.shape.dim:
        vi.type.tensor_type.shape.dim[int(rng.integers(len(vi.type.tensor_type.shape.dim)))].dim_value = \
            int(_pick(rng, [0, 1, 2**31, 2**40]))
    elif choice == 2:
        vi.type.tensor_type.ClearField("shape")
    else:
        m.graph.input.remove(vi)
    return True


def m_graph_output(m: onnx.ModelProto, rng: np.random.Generator) -> bool:
    vo = _pick(rng, list(m.graph.output))
    if rng.random() < 0.5:
        vo.name = _pick(rng, ["", "nowhere", m.graph.input[0].name if m.graph.input else "x"])
    else:
        vo.type.tensor_type.elem_type = int(_pick(rng, [0, 6, 7, 11]))
    return True


def m_opset(m: onnx.ModelProto, rng: np.random.Generator) -> bool:
    m.opset_import[0].version = int(_pick(rng, [0, 1, 6, 7, 11, 13, 21, 99]))
    return True


def m_domain(m: onnx.ModelProto, rng: np.random.Generator) -> bool:
    node = _pick(rng, list(m.graph.node))
    node.domain = _pick(rng, ["com.microsoft", "ai.onnx.ml", "bogus", "ai.onnx.preview.training"])
    return True


def m_huge_shape(m: onnx.ModelProto, rng: np.random.Generator) -> bool:
    """A shape-like int64 initializer (Reshape, Expand, Tile, ConstantOfShape, Range bounds) made absurd."""
    ints = [t for t in m.graph.initializer if t.data_type == TensorProto.INT64]
    if not ints:
        return False
    t = _pick(rng, ints)
    array = numpy_helper.to_array(t).copy()
    flat = array.reshape(-1)
    if flat.size == 0:
        return False
    flat[int(rng.integers(flat.size))] = int(_pick(rng, [2**20, 2**26, 10**11, 2**40, -(2**40)]))
    t.CopyFrom(numpy_helper.from_array(array, t.name))
    return True


def m_range_bounds(m: onnx.ModelProto, rng: np.random.Generator) -> bool:
    """Range bounds made float, NaN or infinite."""
    names = {n.input[k] for n in m.graph.node if n.op_type == "Range" for k in range(len(n.input))}
    targets = [t for t in m.graph.initializer if t.name in names]
    if not targets:
        return False
    cast = [n for n in m.graph.node if n.op_type == "Range"]
    for t in targets:
        t.CopyFrom(numpy_helper.from_array(np.array(_pick(rng, [0.0, 1.0, np.nan, np.inf, -np.inf, 1e-30]), np.float32),
                                           t.name))
    del cast
    return True


STRUCTURED: list[Callable[[onnx.ModelProto, np.random.Generator], bool]] = [
    m_attr_wrong_type, m_attr_duplicate, m_attr_drop, m_attr_value, m_input_drop, m_input_extra, m_input_empty,
    m_input_rename, m_output_drop, m_op_rename, m_node_swap, m_node_duplicate_output, m_init_dims,
    m_init_duplicate, m_init_dtype, m_init_data, m_constant_dims, m_graph_input, m_graph_output, m_opset,
    m_domain, m_huge_shape, m_range_bounds]


def mutant(graphs: dict[str, onnx.ModelProto], index: int, seed: int) -> tuple[str, bytes]:
    """Mutant `index` of the run seeded `seed`: (a label, the model's bytes)."""
    rng = np.random.default_rng([seed, index])
    name = _pick(rng, sorted(graphs))
    kind = rng.random()
    base = graphs[name]
    if kind < 0.2:  # byte flips of the serialized model
        raw = bytearray(base.SerializeToString())
        for _ in range(int(rng.integers(1, 8))):
            raw[int(rng.integers(len(raw)))] = int(rng.integers(256))
        return f"{name}: byte flips", bytes(raw)
    if kind < 0.27:
        raw = base.SerializeToString()
        return f"{name}: truncated", raw[:int(rng.integers(len(raw)))]
    if kind < 0.3:  # an op_type that is not UTF-8 (protobuf strings cannot hold it: patched in the bytes)
        m = onnx.ModelProto()
        m.CopyFrom(base)
        node = _pick(rng, list(m.graph.node))
        marker = "Q" * len(node.op_type)
        old = node.op_type
        node.op_type = marker
        raw = m.SerializeToString().replace(marker.encode(), b"\xff\xfe" + old.encode()[2:], 1)
        return f"{name}: op_type not UTF-8", raw
    m = onnx.ModelProto()
    m.CopyFrom(base)
    applied = []
    for _ in range(int(rng.integers(1, 3))):
        fn = _pick(rng, STRUCTURED)
        try:
            if fn(m, rng):
                applied.append(fn.__name__[2:])
        except Exception:  # noqa: BLE001 - a mutation that does not apply to this graph
            continue
    return f"{name}: {'+'.join(applied) or 'none'}", m.SerializeToString()


# ---- single-operator edge cases -----------------------------------------------------------------


def edge_cases() -> list[tuple[str, bytes]]:
    """Every operator plugnn imports with a schema in the default domain, as one node on float
    [2, 3] inputs: too few inputs, too many, an empty required input, each attribute of every
    other type and with no value."""
    from plugnn.onnx.importer import supported_operators

    cases = []
    for op_type in supported_operators():
        try:
            schema = onnx.defs.get_schema(op_type, OPSET)
        except Exception:  # noqa: BLE001 - newer than OPSET
            try:
                schema = onnx.defs.get_schema(op_type, onnx.defs.onnx_opset_version())
            except Exception:  # noqa: BLE001
                continue
        opset = max(OPSET, schema.since_version)
        n_in = max(schema.min_input, 1)
        n_out = max(schema.min_output, 1)

        def build(inputs: list[str], attrs: list[Any], label: str) -> None:
            real = sorted({i for i in inputs if i})
            node = helper.make_node(op_type, inputs, [f"y{k}" for k in range(n_out)], name="op")
            node.attribute.extend(attrs)
            graph = helper.make_graph([node], "edge", [_f(i, [2, 3]) for i in real],
                                      [helper.make_tensor_value_info(f"y{k}", TensorProto.UNDEFINED, None)
                                       for k in range(n_out)])
            model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
            cases.append((f"{op_type}: {label}", model.SerializeToString()))

        names = [f"x{k}" for k in range(n_in)]
        if schema.min_input >= 1:
            build(names[:-1], [], "one input too few")
            build(["" if k == 0 else n for k, n in enumerate(names)], [], "required input 0 named ''")
        if schema.max_input < 2**31 - 1:
            build([f"x{k}" for k in range(schema.max_input + 1)], [], "one input too many")
        for attr_name, attr in sorted(schema.attributes.items()):
            for kind in _ATTRIBUTE_KINDS:
                if kind == attr.type:
                    continue
                build(names, [_attribute_of_kind(attr_name, kind, np.random.default_rng(kind))],
                      f"attribute {attr_name} of type {AttributeProto.AttributeType.Name(kind)}")
    return cases


# ---- running one case in children ---------------------------------------------------------------

_RUNTIME: Any = None


def _feeds(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    inits = {t.name for t in model.graph.initializer}
    feeds = {}
    for vi in model.graph.input:
        if vi.name in inits or not vi.type.HasField("tensor_type"):
            continue
        tt = vi.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else 2 for d in tt.shape.dim] if tt.HasField("shape") else [2, 3]
        if int(np.prod(shape, dtype=np.float64)) > 1 << 22:
            shape = [min(s, 4) for s in shape]
        try:
            dtype = helper.tensor_dtype_to_np_dtype(tt.elem_type)
        except Exception:  # noqa: BLE001
            dtype = np.dtype(np.float32)
        if dtype == np.bool_:
            feeds[vi.name] = rng.random(shape) < 0.5
        elif dtype.kind in "iu":
            feeds[vi.name] = rng.integers(0, 3, size=shape).astype(dtype)
        elif dtype.kind == "f":
            feeds[vi.name] = rng.standard_normal(shape).astype(dtype)
        else:
            feeds[vi.name] = np.zeros(shape, dtype)
    return feeds


def _plugnn(raw: bytes) -> dict[str, Any]:
    import plugnn
    from plugnn.errors import PlugnnError

    try:
        proto = onnx.ModelProto()
        try:
            proto.ParseFromString(raw)
            feeds = _feeds(proto)
        except Exception:  # noqa: BLE001 - plugnn must say so itself
            feeds = {}
        session = plugnn.InferenceSession(raw, runtime=_RUNTIME)
        outputs = session.run(None, feeds)
        return {"outcome": "ok", "outputs": [np.asarray(o) for o in outputs]}
    except PlugnnError as exc:
        return {"outcome": "typed", "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
    except MemoryError as exc:
        return {"outcome": "memory", "error": f"MemoryError: {exc}"}
    except BaseException as exc:  # noqa: BLE001 - what the harness looks for
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return {"outcome": "untyped", "error": f"{type(exc).__name__}: {str(exc)[:300]}",
                "where": f"{os.path.relpath(where.filename)}:{where.lineno}"}


def _onnxruntime(raw: bytes) -> dict[str, Any]:
    import onnxruntime as ort

    try:
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 4
        session = ort.InferenceSession(raw, options, providers=["CPUExecutionProvider"])
        proto = onnx.ModelProto()
        proto.ParseFromString(raw)
        return {"outcome": "ok", "outputs": [np.asarray(o) for o in session.run(None, _feeds(proto))]}
    except BaseException as exc:  # noqa: BLE001
        return {"outcome": "error", "error": f"{type(exc).__name__}: {str(exc)[:200]}"}


def _checker(raw: bytes) -> dict[str, Any]:
    try:
        proto = onnx.ModelProto()
        proto.ParseFromString(raw)
        onnx.checker.check_model(proto)
        return {"outcome": "ok"}
    except BaseException as exc:  # noqa: BLE001
        return {"outcome": "error", "error": f"{type(exc).__name__}: {str(exc)[:300]}"}


def _reference(raw: bytes) -> dict[str, Any]:
    from onnx.reference import ReferenceEvaluator

    try:
        proto = onnx.ModelProto()
        proto.ParseFromString(raw)
        return {"outcome": "ok", "outputs": [np.asarray(o) for o in ReferenceEvaluator(proto).run(None, _feeds(proto))]}
    except BaseException as exc:  # noqa: BLE001
        return {"outcome": "error", "error": f"{type(exc).__name__}: {str(exc)[:200]}"}


def in_child(fns: Sequence[Callable[[bytes], dict[str, Any]]], raw: bytes, hang_seconds: float
             ) -> list[dict[str, Any]]:
    """fn(raw) for each of `fns`, in order, in one forked child (each result sent as soon as it
    is known): the results; from the first that did not answer on, a crash (signal / exit
    status) or a hang (each fn gets `hang_seconds`), the ones after it not run."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        code = 0
        try:
            resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY_BYTES, CHILD_MEMORY_BYTES))
            if QUIET:
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, 1)
                os.dup2(null, 2)
            with os.fdopen(write, "wb", buffering=0) as out:
                for fn in fns:
                    data = pickle.dumps(fn(raw))
                    out.write(struct.pack("<Q", len(data)) + data)
        except BaseException:  # noqa: BLE001 - reported as the exit status
            code = 70
        os._exit(code)
    os.close(write)
    results: list[dict[str, Any]] = []
    buffer = b""
    end = time.monotonic() + hang_seconds
    hung = False
    with os.fdopen(read, "rb") as pipe:
        while len(results) < len(fns):
            left = end - time.monotonic()
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                hung = True
                break
            ready, _, _ = select.select([pipe], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = pipe.read1(1 << 20)
            if not chunk:
                break
            buffer += chunk
            while len(buffer) >= 8 and len(buffer) >= 8 + struct.unpack("<Q", buffer[:8])[0]:
                size = struct.unpack("<Q", buffer[:8])[0]
                results.append(pickle.loads(buffer[8:8 + size]))
                buffer = buffer[8 + size:]
                end = time.monotonic() + hang_seconds
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if len(results) < len(fns):
        results.append({"outcome": "hang"} if hung else
                       {"outcome": "crash", "error": f"signal {-code}" if code < 0 else f"exit {code}"})
        results += [{"outcome": "not run"}] * (len(fns) - len(results))
    return results


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x.shape != y.shape:
            return False
        if x.dtype.kind in "fc" or y.dtype.kind in "fc":
            if not np.allclose(x.astype(np.float64), y.astype(np.float64), rtol=1e-3, atol=1e-4, equal_nan=True):
                return False
        elif not np.array_equal(x, y):
            return False
    return True


def _empty_mean(raw: bytes, ours: list[np.ndarray], theirs: list[np.ndarray]) -> bool:
    """The outputs differ only where plugnn has NaN and onnxruntime 0, in a model with a
    ReduceMean reading an empty tensor (onnx.reference cannot say: it fails on such models)."""
    proto = onnx.ModelProto()
    proto.ParseFromString(raw)
    if not any(n.op_type == "ReduceMean" for n in proto.graph.node) or len(ours) != len(theirs):
        return False
    for x, y in zip(ours, theirs):
        if x.shape != y.shape:
            return False
        differ = ~np.isclose(x.astype(np.float64), y.astype(np.float64), equal_nan=True)
        if differ.any() and not (np.isnan(x[differ]).all() and (y[differ] == 0).all()):
            return False
    return True


_INVALID_NAMES = ("duplicate", "Duplicate", "more than", "Too many", "too many inputs", "Number of", "arity",
                  "exceeds", "unique", "has been used", "already")


def run_case(label: str, raw: bytes, hang_seconds: float) -> dict[str, Any]:
    result: dict[str, Any] = {"case": label}
    ours, checker, ort = in_child([_plugnn, _checker, _onnxruntime], raw, hang_seconds)
    if ort["outcome"] == "not run":  # plugnn or the checker took the child down: onnxruntime on its own
        ort = in_child([_onnxruntime], raw, hang_seconds)[0]
    if checker["outcome"] == "not run":
        checker, = in_child([_checker], raw, hang_seconds)
    result["plugnn"] = ours["outcome"]
    result["onnxruntime"] = ort["outcome"]
    result["checker"] = checker["outcome"]
    for key, value in (("plugnn_error", ours.get("error")), ("where", ours.get("where")),
                       ("checker_error", checker.get("error"))):
        if value:
            result[key] = value
    if ours["outcome"] == "ok" and checker["outcome"] == "error" and \
            any(word in checker.get("error", "") for word in _INVALID_NAMES):
        result["accepted_invalid"] = True
    if ours["outcome"] == "ok" and ort["outcome"] == "ok" and not _same(ours["outputs"], ort["outputs"]):
        reference, = in_child([_reference], raw, hang_seconds)
        if reference["outcome"] == "ok" and _same(ours["outputs"], reference["outputs"]):
            result["difference"] = "explained: plugnn agrees with onnx.reference"
        elif _empty_mean(raw, ours["outputs"], ort["outputs"]):
            result["difference"] = ("explained: ReduceMean over an empty set, which ONNX leaves undefined (plugnn: NaN, "
                                    "as NumPy's mean; onnxruntime: 0)")
        else:
            result["difference"] = f"unexplained (reference: {reference['outcome']})"
    return result


def summarize(results: list[dict[str, Any]]) -> dict[str, Any]:
    outcomes = Counter(r["plugnn"] for r in results)
    return {
        "cases": len(results),
        "plugnn": dict(outcomes),
        "onnxruntime": dict(Counter(r["onnxruntime"] for r in results)),
        "untyped": [r for r in results if r["plugnn"] == "untyped"],
        "crashes": [r for r in results if r["plugnn"] == "crash"],
        "hangs": [r for r in results if r["plugnn"] == "hang"],
        "memory_errors": [r for r in results if r["plugnn"] == "memory"],
        "accepted_invalid": [r for r in results if r.get("accepted_invalid")],
        "differences": Counter(r["difference"] for r in results if "difference" in r),
        "unexplained": [r for r in results if r.get("difference", "").startswith("unexplained")],
    }


def failures(summary: dict[str, Any]) -> int:
    return sum(len(summary[k]) for k in ("untyped", "crashes", "hangs", "memory_errors", "accepted_invalid",
                                         "unexplained"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mutants", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--edge-cases", action="store_true", help="add the single-operator edge cases")
    parser.add_argument("--edge-stride", type=int, default=1, help="take every k-th edge case")
    parser.add_argument("--hang-seconds", type=float, default=30.0)
    parser.add_argument("--json", help="write every case's result here")
    args = parser.parse_args(argv)

    global _RUNTIME
    import plugnn

    # One runtime made before the forks (its backends loaded once); the children inherit it.
    _RUNTIME = plugnn.Runtime(backend_options={"CpuAcc": {"num_threads": "1"}})
    graphs = seed_graphs()
    for graph in graphs.values():  # the import's lazy imports and first calls made here, once
        _plugnn(graph.SerializeToString())
    cases = [mutant(graphs, i, args.seed) for i in range(args.mutants)]
    if args.edge_cases:
        cases += edge_cases()[::max(args.edge_stride, 1)]
    results = []
    start = time.monotonic()
    for k, (label, raw) in enumerate(cases):
        results.append(run_case(label, raw, args.hang_seconds))
        if (k + 1) % 250 == 0:
            print(f"{k + 1}/{len(cases)} cases, {time.monotonic() - start:.0f} s", file=sys.stderr)
    summary = summarize(results)
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"summary": {k: v for k, v in summary.items()}, "results": results}, out, indent=1, default=str)
    print(json.dumps({"cases": summary["cases"], "plugnn": summary["plugnn"], "onnxruntime": summary["onnxruntime"],
                      "differences": summary["differences"]}, default=str))
    for key in ("untyped", "crashes", "hangs", "memory_errors", "accepted_invalid", "unexplained"):
        for r in summary[key]:
            print(f"{key}: {r['case']}: {r.get('plugnn_error', '')} {r.get('where', '')} {r.get('checker_error', '')[:100]}")
    return 1 if failures(summary) else 0


if __name__ == "__main__":
    sys.exit(main())
