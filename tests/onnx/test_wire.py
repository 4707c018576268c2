"""Large weights read once from a model's bytes (plugnn.onnx.wire, importer.read_model(held=...)):
the held arrays equal what numpy_helper reads, every model the walker cannot follow (or that
is malformed) is read and reported exactly as without holding, and sessions and
plugnn.onnx.load run the same on either path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import plugnn  # noqa: E402
import plugnn.onnx  # noqa: E402
from plugnn.errors import ModelError  # noqa: E402
from plugnn.onnx import importer, wire  # noqa: E402

from conftest import make_model, run_plugnn  # noqa: E402

RNG_SEED = 7


def _weights() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(RNG_SEED)
    return {
        "w": rng.standard_normal((64, 32)).astype(np.float32),          # 8 KiB: held
        "b": rng.standard_normal(32).astype(np.float32),                # 128 bytes: stays in the proto
        "idx": rng.integers(0, 64, size=(300,)).astype(np.int64),       # 2.4 KiB int64: held
        "h": rng.standard_normal((16, 64)).astype(np.float16),          # 2 KiB float16: held
        "m": rng.integers(0, 2, size=(2048,)).astype(bool),             # 2 KiB bool: held
        "d": rng.standard_normal((4, 64)).astype(np.float64),           # 2 KiB float64: held
        "empty": np.zeros((0, 32), np.float32),                         # no data
    }


def _model() -> Any:
    w = _weights()
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["xw"]),
        helper.make_node("Add", ["xw", "b"], ["y"]),
        helper.make_node("Gather", ["w", "idx"], ["g"], axis=0),
        helper.make_node("Cast", ["h"], ["hf"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["m"], ["mf"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["d"], ["df"], to=TensorProto.FLOAT),
        helper.make_node("Concat", ["empty", "b2"], ["e"], axis=0),
    ]
    w["b2"] = w["b"].reshape(1, 32)
    return make_model(nodes, {"x": [2, 64]}, ["y", "g", "hf", "mf", "df", "e"], w)


def _read(model: Any, held: dict[str, np.ndarray] | None) -> tuple[Any, dict[str, np.ndarray]]:
    proto, source = importer.read_model(model, held=held)
    return proto, importer.read_initializers(proto, source, held)


def _same_error(model: Any) -> str:
    """The message read_model gives with and without holding (they must agree)."""
    messages = []
    for held in (None, {}):
        with pytest.raises(ModelError) as caught:
            importer.read_model(model, held=held)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    return messages[0]


def test_split_holds_only_large_plain_payloads() -> None:
    data = _model().SerializeToString()
    split = wire.split_weights(data)
    assert split is not None
    stripped, held = split
    parsed = onnx.ModelProto()
    parsed.ParseFromString(stripped)
    names = {parsed.graph.initializer[h.index].name for h in held}
    assert names == {"w", "idx", "h", "m", "d"}
    assert len(stripped) < len(data) - sum(h.length for h in held) + 64
    for h in held:
        tensor = parsed.graph.initializer[h.index]
        assert not tensor.raw_data and tuple(tensor.dims) == h.dims


@pytest.mark.parametrize("given", ["path", "bytes", "bytearray", "memoryview"])
def test_held_arrays_equal_numpy_helper(tmp_path: Path, given: str) -> None:
    model = _model()
    data = model.SerializeToString()
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    source: Any = {"path": str(path), "bytes": data, "bytearray": bytearray(data), "memoryview": memoryview(data)}[given]
    held: dict[str, np.ndarray] = {}
    _, arrays = _read(source, held)
    assert set(held) == {"w", "idx", "h", "m", "d"}
    expected = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    assert set(arrays) == set(expected)
    for name, array in arrays.items():
        assert array.dtype == expected[name].dtype and array.shape == expected[name].shape, name
        np.testing.assert_array_equal(array, expected[name])
        assert not array.flags.writeable and array.flags.c_contiguous and array.flags.aligned
    _, plain = _read(source, None)
    for name, array in plain.items():
        np.testing.assert_array_equal(array, arrays[name])


def test_session_and_load_agree_with_the_unheld_path(tmp_path: Path) -> None:
    model = _model()
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    x = np.random.default_rng(RNG_SEED).standard_normal((2, 64)).astype(np.float32)
    from_file = plugnn.InferenceSession(str(path), providers=["CpuRef"]).run(None, {"x": x})
    from_proto = plugnn.InferenceSession(model, providers=["CpuRef"]).run(None, {"x": x})  # never held
    for a, b in zip(from_file, from_proto):
        np.testing.assert_array_equal(a, b)
    w = _weights()
    np.testing.assert_allclose(from_file[0], x @ w["w"] + w["b"], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(from_file[1], w["w"][w["idx"]])
    loaded = run_plugnn(plugnn.Runtime(), str(path), {"x": x})
    for name, b in zip(["y", "g", "hf", "mf", "df", "e"], from_proto):
        np.testing.assert_array_equal(loaded[name], b)


def test_initializer_listed_as_graph_input_keeps_its_default(tmp_path: Path) -> None:
    model = _model()
    w = _weights()["w"]
    model.graph.input.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, [64, 32]))
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    session = plugnn.InferenceSession(str(path), providers=["CpuRef"])
    assert [a.name for a in session.get_overridable_initializers()] == ["w"]
    x = np.ones((2, 64), np.float32)
    default = session.run(["y"], {"x": x})[0]
    np.testing.assert_allclose(default, x @ w + _weights()["b"], rtol=1e-5, atol=1e-5)


def test_a_truncated_file_is_reported_as_before(tmp_path: Path) -> None:
    data = _model().SerializeToString()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[: len(data) // 2])
    assert "not an ONNX model" in _same_error(str(path))
    assert "not an ONNX model" in _same_error(data[: len(data) // 2])


def test_garbage_and_empty_files_are_reported_as_before(tmp_path: Path) -> None:
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    _same_error(str(empty))
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(bytes(range(256)) * 8)
    _same_error(str(garbage))
    assert wire.split_weights(bytes(range(256)) * 8) is None


def test_a_raw_size_mismatch_is_left_to_the_reader() -> None:
    model = _model()
    tensor = next(t for t in model.graph.initializer if t.name == "w")
    tensor.raw_data = tensor.raw_data[:-4]  # one float short
    data = model.SerializeToString()
    split = wire.split_weights(data)
    assert split is not None
    parsed = onnx.ModelProto()
    parsed.ParseFromString(split[0])
    assert "w" not in {parsed.graph.initializer[h.index].name for h in split[1]}
    with pytest.raises(ModelError, match="'w'"):
        _read(data, {})


def test_external_data_is_read_straight_into_arrays(tmp_path: Path) -> None:
    model = _model()
    onnx.save(model, str(tmp_path / "ext.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
              location="weights.bin", size_threshold=1024)
    data = (tmp_path / "ext.onnx").read_bytes()
    assert wire.split_weights(data) is None  # every large tensor lives in weights.bin
    held: dict[str, np.ndarray] = {}
    _, arrays = _read(str(tmp_path / "ext.onnx"), held)
    assert set(held) == {"w", "idx", "h", "m", "d"}
    for name, value in _weights().items():
        np.testing.assert_array_equal(arrays[name], value)
        assert arrays[name].dtype == value.dtype
    x = np.ones((2, 64), np.float32)
    ours = plugnn.InferenceSession(str(tmp_path / "ext.onnx"), providers=["CpuRef"]).run(["g"], {"x": x})[0]
    np.testing.assert_array_equal(ours, _weights()["w"][_weights()["idx"]])


def test_a_short_external_file_names_the_tensor(tmp_path: Path) -> None:
    onnx.save(_model(), str(tmp_path / "ext.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
              location="weights.bin", size_threshold=1024)
    weights_file = tmp_path / "weights.bin"
    weights_file.write_bytes(weights_file.read_bytes()[:100])
    with pytest.raises(ModelError, match="weights.bin"):
        importer.read_model(str(tmp_path / "ext.onnx"), held={})
    with pytest.raises(ModelError, match="weights.bin"):
        importer.read_model(str(tmp_path / "ext.onnx"))


def test_packed_dims_and_non_canonical_keys_are_followed() -> None:
    values = np.arange(512, dtype=np.float32).reshape(16, 32)
    tensor = (wire._encode_varint((1 << 3) | 2) + wire._encode_varint(2) + bytes([16, 32])  # dims, packed
              + wire._encode_varint((2 << 3) | 0) + bytes([TensorProto.FLOAT])
              + wire._encode_varint((8 << 3) | 2) + wire._encode_varint(1) + b"v"
              + wire._encode_varint((9 << 3) | 2) + wire._encode_varint(values.nbytes) + values.tobytes())
    base = make_model([helper.make_node("Identity", ["v"], ["y"])], {}, ["y"])
    graph = base.graph.SerializeToString() + wire._encode_varint((5 << 3) | 2) + wire._encode_varint(len(tensor)) \
        + tensor
    rest = onnx.ModelProto()
    rest.CopyFrom(base)
    rest.ClearField("graph")
    # the graph's key written non-canonically (two bytes: 0xBA 0x00 is field 7, wire type 2)
    model_bytes = rest.SerializeToString() + b"\xba\x00" + wire._encode_varint(len(graph)) + graph
    held: dict[str, np.ndarray] = {}
    proto, source = importer.read_model(model_bytes, held=held)
    assert set(held) == {"v"}
    np.testing.assert_array_equal(held["v"], values)
    out = plugnn.InferenceSession(model_bytes, providers=["CpuRef"]).run(None, {})[0]
    np.testing.assert_array_equal(out, values)


def test_a_group_field_makes_the_walker_step_aside() -> None:
    data = _model().SerializeToString()
    grouped = data + b"\x0b\x0c"  # an empty group of field 1: protobuf keeps it as an unknown field
    assert wire.split_weights(grouped) is None
    held: dict[str, np.ndarray] = {}
    _, arrays = _read(grouped, held)
    assert not held and set(arrays) == set(_read(data, None)[1])


def test_a_graph_given_twice_is_parsed_by_protobuf() -> None:
    model = _model()
    graph = model.graph.SerializeToString()
    data = model.SerializeToString() + wire._encode_varint((7 << 3) | 2) + wire._encode_varint(len(graph)) + graph
    assert wire.split_weights(data) is None
    _same_error(data)  # protobuf merges the two graphs: every initializer twice


def test_a_qdq_model_reads_its_held_weight_constants() -> None:
    rng = np.random.default_rng(RNG_SEED)
    weight = rng.integers(-127, 128, size=(64, 32)).astype(np.int8)  # 2 KiB: held
    inits = {"w_q": weight, "w_s": np.float32(0.02), "w_z": np.int8(0), "x_s": np.float32(0.05),
             "x_z": np.int8(0), "y_s": np.float32(0.1), "y_z": np.int8(0)}
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "x_s", "x_z"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "x_s", "x_z"], ["xd"]),
        helper.make_node("DequantizeLinear", ["w_q", "w_s", "w_z"], ["wd"]),
        helper.make_node("MatMul", ["xd", "wd"], ["yf"]),
        helper.make_node("QuantizeLinear", ["yf", "y_s", "y_z"], ["yq"]),
        helper.make_node("DequantizeLinear", ["yq", "y_s", "y_z"], ["y"]),
    ]
    model = make_model(nodes, {"x": [4, 64]}, ["y"], inits, opset=13)
    data = model.SerializeToString()
    held: dict[str, np.ndarray] = {}
    proto, _ = importer.read_model(data, held=held)
    assert "w_q" in held
    plain, _ = importer.read_model(data)
    assert [n.op_type for n in proto.graph.node] == [n.op_type for n in plain.graph.node]
    x = rng.standard_normal((4, 64)).astype(np.float32)
    ours = plugnn.InferenceSession(data, providers=["CpuRef"]).run(None, {"x": x})[0]
    reference = plugnn.InferenceSession(model, providers=["CpuRef"]).run(None, {"x": x})[0]
    np.testing.assert_array_equal(ours, reference)


def test_without_preadv_the_file_is_read_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(_model(), str(path))
    with_preadv = _read(str(path), {})[1]
    monkeypatch.delattr(wire.os, "preadv", raising=False)
    without = _read(str(path), {})[1]
    for name, array in with_preadv.items():
        np.testing.assert_array_equal(without[name], array)
