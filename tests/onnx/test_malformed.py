"""Malformed models and absurd sizes: each a ModelError naming the node, attribute or tensor at
fault (plugnn.onnx.validation, the importer's checks), never an untyped exception, a bare
MemoryError or an allocation that grows until the process is killed. The same models through
onnx.checker are rejected too (the duplicate names and wrong arities onnxruntime refuses)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import plugnn
from plugnn.errors import ConfigurationError, ModelError

# A hang detector, not a time limit: the work each subprocess does is bounded, and a loaded
# machine (2 vCPUs at load 10) may take many times what it takes alone.
HANG_GUARD_S = 1800

F32 = TensorProto.FLOAT


def model(nodes: list, inits: list | None = None, opset: int = 17) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "malformed", [helper.make_tensor_value_info("x", F32, [2, 3])],
                              [helper.make_tensor_value_info("y", F32, None)], inits or [])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def refused(m: onnx.ModelProto | bytes, pattern: str) -> None:
    raw = m if isinstance(m, bytes) else m.SerializeToString()
    with pytest.raises(ModelError, match=pattern):
        plugnn.InferenceSession(raw, backends=["CpuRef"]).run(None, {"x": np.ones((2, 3), np.float32)})
    with pytest.raises(ModelError, match=pattern):
        plugnn.onnx.load(raw)


def w(name: str, array: np.ndarray) -> TensorProto:
    return numpy_helper.from_array(array, name)


def test_two_initializers_of_one_name() -> None:
    m = model([helper.make_node("Add", ["x", "b"], ["y"], name="add")],
              [w("b", np.ones((2, 3), np.float32)), w("b", np.zeros((2, 3), np.float32))])
    refused(m, r"two initializers are named 'b'")


def test_a_value_assigned_twice() -> None:
    m = model([helper.make_node("Relu", ["x"], ["y"], name="first"), helper.make_node("Neg", ["x"], ["y"], name="again")])
    refused(m, r"node 'again' .*output 0 'y' is already defined")


def test_an_attribute_given_twice() -> None:
    node = helper.make_node("Softmax", ["x"], ["y"], name="soft", axis=1)
    node.attribute.extend([helper.make_attribute("axis", 0)])
    refused(model([node]), r"node 'soft' .*attribute 'axis' is given twice")


def test_an_attribute_without_a_value() -> None:
    node = helper.make_node("Softmax", ["x"], ["y"], name="soft")
    node.attribute.add().name = "axis"
    refused(model([node]), r"node 'soft' .*attribute 'axis' has no type")


@pytest.mark.parametrize("value", [[1, 2], "one", 1.5])
def test_an_attribute_of_the_wrong_type(value: object) -> None:
    refused(model([helper.make_node("Softmax", ["x"], ["y"], name="soft", axis=value)]),
            r"node 'soft' .*attribute 'axis' is of type \w+, Softmax takes INT")


def test_an_extra_input_the_converter_would_ignore() -> None:
    refused(model([helper.make_node("Relu", ["x", "x"], ["y"], name="relu")]),
            r"node 'relu' .*2 input\(s\); Relu-14 takes 1")


def test_too_few_inputs() -> None:
    refused(model([helper.make_node("Gemm", ["x"], ["y"], name="gemm")]), r"node 'gemm' .*Gemm-13 takes 2 to 3")


def test_a_required_input_named_empty() -> None:
    refused(model([helper.make_node("Add", ["x", ""], ["y"], name="add")]),
            r"node 'add' .*input 1 \(B\) is required, and its name is empty")


def test_a_negative_initializer_dim() -> None:
    t = w("b", np.ones(3, np.float32))
    t.dims[:] = [-1]
    refused(model([helper.make_node("Add", ["x", "b"], ["y"], name="add")], [t]),
            r"initializer 'b': dims \[-1\] has a negative dim")


def test_constant_data_disagreeing_with_its_dims() -> None:
    value = w("v", np.ones(3, np.float32))
    value.dims[:] = [2, 2]
    m = model([helper.make_node("Constant", [], ["c"], name="const", value=value),
               helper.make_node("Add", ["x", "c"], ["y"], name="add")])
    refused(m, r"node 'const' .*attribute 'value': tensor cannot be read")


def test_an_op_type_that_is_not_utf8() -> None:
    raw = model([helper.make_node("QQQQ", ["x"], ["y"], name="n")]).SerializeToString().replace(b"QQQQ", b"\xff\xfeLU")
    refused(raw, r"node #0: op_type b'\\xff\\xfeLU' is not UTF-8 text")


@pytest.mark.parametrize("bound", [np.nan, np.inf, -np.inf])
def test_range_bounds_that_are_not_finite(bound: float) -> None:
    m = model([helper.make_node("Range", ["a", "b", "c"], ["r"], name="range"),
               helper.make_node("Add", ["x", "r"], ["y"])],
              [w("a", np.array(0, np.float32)), w("b", np.array(bound, np.float32)), w("c", np.array(1, np.float32))])
    refused(m, r"node 'range' .*(limit = (nan|inf|-inf)|not finite)")


def test_range_is_computed_in_its_type() -> None:
    m = model([helper.make_node("Range", ["a", "b", "c"], ["y"], name="range")],
              [w("a", np.array(-3, np.int32)), w("b", np.array(7, np.int32)), w("c", np.array(3, np.int32))])
    m.graph.input.pop()
    m.graph.output[0].type.tensor_type.elem_type = TensorProto.INT32
    (got,) = plugnn.InferenceSession(m.SerializeToString(), backends=["CpuRef"]).run(None, {})
    assert got.dtype == np.int32 and got.tolist() == [-3, 0, 3, 6]


def test_checker_rejects_these_models_too() -> None:
    """The duplicate names and arities refused above are what onnx.checker rejects."""
    m = model([helper.make_node("Relu", ["x", "x"], ["y"], name="relu")])
    with pytest.raises(onnx.checker.ValidationError):
        onnx.checker.check_model(m)
    m = model([helper.make_node("Add", ["x", "b"], ["y"])], [w("b", np.ones(3, np.float32)), w("b", np.ones(3, np.float32))])
    with pytest.raises(onnx.checker.ValidationError):
        onnx.checker.check_model(m)


# ---- sizes ------------------------------------------------------------------------------------------

SHAPE_400GB = np.array([100_000, 1_000_000], np.int64)


@pytest.mark.parametrize("op", ["ConstantOfShape", "Expand", "Tile", "Pad", "Initializer"])
def test_declared_sizes_above_the_limit_are_refused_naming_node_and_size(op: str) -> None:
    if op == "ConstantOfShape":
        nodes, inits = [helper.make_node(op, ["s"], ["c"], name="big"), helper.make_node("Add", ["x", "c"], ["y"])], \
            [w("s", SHAPE_400GB)]
        where = r"node 'big' \(#0, ConstantOfShape\): output 0"
    elif op == "Expand":
        nodes, inits = [helper.make_node(op, ["one", "s"], ["c"], name="big"), helper.make_node("Add", ["x", "c"], ["y"])], \
            [w("one", np.ones((1, 1), np.float32)), w("s", SHAPE_400GB)]
        where = r"node 'big' \(#0, Expand\): output 0"
    elif op == "Tile":
        nodes, inits = [helper.make_node(op, ["x", "s"], ["y"], name="big")], [w("s", SHAPE_400GB // 2)]
        where = r"node 'big' \(#0, Tile\): output 0"
    elif op == "Pad":
        nodes, inits = [helper.make_node(op, ["x", "p"], ["y"], name="big")], \
            [w("p", np.array([0, 0, 100_000, 1_000_000], np.int64))]
        where = r"node 'big' \(#0, Pad\): output 0"
    else:
        t = TensorProto(name="w", data_type=F32, dims=[100_000, 1_000_000])
        nodes, inits = [helper.make_node("Add", ["x", "w"], ["y"], name="add")], [t]
        where = r"initializer 'w'"
    refused(model(nodes, inits), where + r".*holds \d+\.\d GiB \(\d+ bytes\), more than the limit")


def test_the_limit_is_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    m = model([helper.make_node("ConstantOfShape", ["s"], ["c"], name="cos"), helper.make_node("Add", ["x", "c"], ["y"])],
              [w("s", np.array([65536, 2, 3], np.int64))])  # 1.5 MiB
    plugnn.onnx.load(m.SerializeToString(), input_shapes=None)
    monkeypatch.setenv("PLUGNN_MAX_TENSOR_BYTES", "1M")
    with pytest.raises(ModelError, match=r"node 'cos' .*1\.5 MiB \(1572864 bytes\), more than the limit of 1\.0 MiB"):
        plugnn.onnx.load(m.SerializeToString())
    monkeypatch.setenv("PLUGNN_MAX_TENSOR_BYTES", "lots")
    with pytest.raises(ConfigurationError, match="PLUGNN_MAX_TENSOR_BYTES='lots'"):
        plugnn.onnx.load(m.SerializeToString())


def test_a_400gb_tensor_fails_with_peak_rss_under_1gb() -> None:
    """In a process of its own (its peak RSS is its own): a 400 GB ConstantOfShape, Expand and
    Range, each refused before anything is allocated."""
    script = textwrap.dedent("""
        import numpy as np, plugnn
        from onnx import helper, numpy_helper
        from plugnn.errors import ModelError
        def m(nodes, inits):
            g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", 1, [1, 1])],
                                  [helper.make_tensor_value_info("y", 1, None)], inits)
            return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
        s = numpy_helper.from_array(np.array([100000, 1000000], np.int64), "s")
        scalar = lambda n, v: numpy_helper.from_array(np.array(v, np.float32), n)
        models = [m([helper.make_node("ConstantOfShape", ["s"], ["c"], name="cos"),
                     helper.make_node("Add", ["x", "c"], ["y"])], [s]),
                  m([helper.make_node("Expand", ["x", "s"], ["y"], name="expand")], [s]),
                  m([helper.make_node("Range", ["a", "b", "c"], ["r"], name="range"),
                     helper.make_node("Add", ["x", "r"], ["y"])], [scalar("a", 0), scalar("b", 1e11), scalar("c", 1)])]
        for raw in models:
            try:
                plugnn.InferenceSession(raw, backends=["CpuRef"])
            except ModelError as exc:
                assert "GiB" in str(exc), exc
            else:
                raise SystemExit("not refused")
        # VmHWM: this process's own peak (ru_maxrss can carry the forking parent's peak over exec)
        print(next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmHWM:")))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.split()[-1]) < 1 << 30


def test_a_loop_whose_scan_outputs_outgrow_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """A trip count of 2^40 from the model, each iteration scanning 4 KiB: refused once the scan
    outputs pass the limit (here 1 MiB: 257 iterations), naming the node."""
    monkeypatch.setenv("PLUGNN_MAX_TENSOR_BYTES", "1M")
    body = helper.make_graph([helper.make_node("Identity", ["c_in"], ["c_out"]),
                              helper.make_node("Identity", ["big"], ["slice"])], "body",
                             [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                              helper.make_tensor_value_info("c_in", TensorProto.BOOL, [])],
                             [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
                              helper.make_tensor_value_info("slice", F32, [1024])],
                             [w("big", np.ones(1024, np.float32))])
    graph = helper.make_graph([helper.make_node("Loop", ["m", ""], ["scan"], name="loop", body=body)], "looped", [],
                              [helper.make_tensor_value_info("scan", F32, None)], [w("m", np.array(2**40, np.int64))])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    session = plugnn.InferenceSession(m.SerializeToString(), backends=["CpuRef"])
    with pytest.raises(plugnn.errors.RunError, match=r"node 'loop'.*scan outputs hold 1\.0 MiB after 257 iterations"):
        session.run(None, {})


@pytest.mark.parametrize("location", ["/etc/passwd", "/no/such/file", "../outside.bin", "sub/../../outside.bin",
                                      "link_out", ""])
def test_external_data_outside_the_model_directory_is_refused_alike(tmp_path, location: str) -> None:
    """One message for every refused location, whether or not a file is there (nothing about it
    is told: not its existence, not its size)."""
    import os

    import plugnn.onnx

    (tmp_path / "outside.bin").write_bytes(b"\0" * 12)
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    os.symlink(tmp_path / "outside.bin", model_dir / "link_out")
    m = model([helper.make_node("Add", ["x", "W"], ["y"], name="add")], [w("W", np.ones(3, np.float32))])
    tensor = m.graph.initializer[0]
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    entry = tensor.external_data.add()
    entry.key, entry.value = "location", location
    path = model_dir / "m.onnx"
    onnx.save(m, str(path))
    with pytest.raises(ModelError) as caught:
        plugnn.onnx.load(str(path))
    assert str(caught.value) == (f"{path}: tensor 'W': external data location {location!r} is refused: it must be a "
                                 f"relative path to a file in the model's directory")
