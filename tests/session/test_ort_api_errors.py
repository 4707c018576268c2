"""Malformed uses of the onnxruntime-style API get a typed plugnn error naming what is at fault,
and leave the session usable: options, providers, OrtValue, I/O binding, run_async, overrides."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

import plugnn
from plugnn.capi.onnxruntime_pybind11_state import Fail, InvalidArgument, NotImplemented
from session import models

IMAGE = np.random.default_rng(4).standard_normal((1, 3, 6, 6)).astype(np.float32)


@pytest.fixture(autouse=True)
def plugnn_logger_kept() -> Iterator[None]:
    """The logger "plugnn" as it was before the test (the logger idioms change its level)."""
    logger = logging.getLogger("plugnn")
    level, handlers = logger.level, list(logger.handlers)
    yield
    logger.setLevel(level)
    for handler in [h for h in logger.handlers if h not in handlers]:
        logger.removeHandler(handler)


@pytest.fixture(scope="module")
def session() -> Any:
    with plugnn.InferenceSession(models.cnn(), backends=["CpuRef"]) as s:
        yield s


@pytest.mark.parametrize("field, value, message", [
    ("intra_op_num_threads", -1, "intra_op_num_threads takes an integer >= 0"),
    ("intra_op_num_threads", 2.5, "takes an integer >= 0, got 2.5"),
    ("intra_op_num_threads", True, "takes an integer >= 0, got True"),
    ("graph_optimization_level", 5, r"takes one of GraphOptimizationLevel \(ORT_DISABLE_ALL"),
    ("execution_mode", "parallel", "takes one of ExecutionMode"),
    ("enable_profiling", "yes", "enable_profiling takes a bool"),
    ("profile_file_prefix", 3, "profile_file_prefix takes a str"),
    ("log_severity_level", -2, "log_severity_level takes an integer >= -1"),
])
def test_session_options_fields_are_typed(field: str, value: Any, message: str) -> None:
    so = plugnn.SessionOptions()
    with pytest.raises(plugnn.SessionError, match=message):
        setattr(so, field, value)
    assert getattr(so, field) == getattr(plugnn.SessionOptions(), field)  # unchanged


def test_session_options_methods_check_their_arguments() -> None:
    so = plugnn.SessionOptions()
    so.graph_optimization_level = 1  # an int of the enum is taken, as onnxruntime's enum
    assert so.graph_optimization_level is plugnn.GraphOptimizationLevel.ORT_ENABLE_BASIC
    so.optimized_model_filepath = Path("model.onnx")
    assert so.optimized_model_filepath == "model.onnx"
    with pytest.raises(plugnn.SessionError, match="takes two str"):
        so.add_session_config_entry("key", 3)
    with pytest.raises(plugnn.SessionError, match="the key is empty"):
        so.add_session_config_entry("", "x")
    with pytest.raises(Fail, match="does not have configuration with key: absent"):
        so.get_session_config_entry("absent")
    with pytest.raises(plugnn.SessionError, match="a free dimension override takes an integer >= 0, got -1"):
        so.add_free_dimension_override_by_name("batch", -1)
    with pytest.raises(plugnn.SessionError, match="dim_denotation must be a non-empty str"):
        so.add_free_dimension_override_by_denotation("", 1)
    with pytest.raises(plugnn.SessionError, match="add_initializer takes an OrtValue"):
        so.add_initializer("w", [1.0, 2.0])
    with pytest.raises(plugnn.SessionError, match="2 names and 1 values"):
        so.add_external_initializers(["a", "b"], [plugnn.OrtValue.ortvalue_from_numpy(np.zeros(2, np.float32))])
    with pytest.raises(NotImplemented, match="no onnxruntime custom-op libraries"):
        so.register_custom_ops_library("libcustom.so")
    copy = so.copy()
    copy.add_session_config_entry("only", "copy")
    with pytest.raises(Fail):
        so.get_session_config_entry("only")
    with pytest.raises(plugnn.SessionError, match="not JSON"):
        so.apply_model_config("{", "model.onnx")
    with pytest.raises(plugnn.SessionError, match="no 'session_options' object"):
        so.apply_model_config(json.dumps({"session_options": 3}), "model.onnx")


def test_run_options_check_their_arguments(session: Any) -> None:
    ro = plugnn.RunOptions()
    with pytest.raises(plugnn.SessionError, match="terminate takes a bool"):
        ro.terminate = "yes"
    with pytest.raises(plugnn.SessionError, match="add_run_config_entry takes a non-empty str key"):
        ro.add_run_config_entry("", "x")
    with pytest.raises(Fail, match="RunOptions does not have configuration with key: k"):
        ro.get_run_config_entry("k")
    with pytest.raises(plugnn.SessionError, match="run_options must be a plugnn.RunOptions or None, got dict"):
        session.run(None, {"image": IMAGE}, {"terminate": True})
    ro.terminate = True
    with pytest.raises(Fail, match="terminate flag") as caught:
        session.run(None, {"image": IMAGE}, ro)
    assert isinstance(caught.value, plugnn.errors.RunStoppedError)
    ro.terminate = False
    assert session.run(None, {"image": IMAGE}, ro)[0].shape == (1, 4)


def test_logger_settings_check_their_arguments() -> None:
    with pytest.raises(Fail, match=r"takes a severity from 0 \(verbose\) to 4 \(fatal\), got 5"):
        plugnn.set_default_logger_severity(5)
    with pytest.raises(Fail, match="integer >= 0"):
        plugnn.set_default_logger_verbosity(-1)
    with pytest.raises(Fail, match="takes a callable or None, got str"):
        plugnn.set_default_logger_callback("not a callable")
    with pytest.raises(Fail, match="got -1"):
        plugnn.set_default_logger_callback(print, severity=-1)


@pytest.mark.parametrize("providers, provider_options, message", [
    ("CPUExecutionProvider", None, "'providers' should be a sequence of provider names"),
    ([("CpuRef",)], None, "a provider is a name or a"),
    (["CpuRef"], {"CpuRef": {}}, "'provider_options' should be a sequence of dicts"),
    (["CpuRef"], ["x"], "'provider_options' values must be dicts"),
    ([("CpuRef", {})], [{}], r"only provider names \(str\) go with 'provider_options'"),
    (None, [{}], "provider_options= goes with providers="),
])
def test_provider_arguments_are_checked(providers: Any, provider_options: Any, message: str) -> None:
    with pytest.raises(plugnn.SessionError, match=message):
        plugnn.InferenceSession(models.cnn(), providers=providers, provider_options=provider_options)


def test_check_and_normalize_provider_args_follows_onnxruntime() -> None:
    check = plugnn.check_and_normalize_provider_args
    assert check(None, None, ["a"]) == ([], [])
    assert check([("a", {1: 2}), "b"], None, ["a", "b"]) == (["a", "b"], [{"1": "2"}, {}])
    with pytest.warns(UserWarning, match="Duplicate provider 'a'"):
        assert check(["a", "b", "a"], [{"x": 1}, {}, {"y": 2}], ["a", "b"]) == (["a", "b"], [{"x": "1"}, {}])
    with pytest.warns(UserWarning, match="Specified provider 'z' is not in available provider names"):
        check(["z"], None, ["a"])
    with pytest.raises(ValueError, match="should be the same length"):
        check(["a", "b"], [{}], ["a", "b"])


def test_a_borrowed_runtime_takes_no_session_thread_setting() -> None:
    so = plugnn.SessionOptions()
    so.intra_op_num_threads = 2
    with plugnn.Runtime() as runtime, pytest.raises(plugnn.SessionError, match="intra_op_num_threads applies to a runtime"):
        plugnn.InferenceSession(models.cnn(), so, runtime=runtime)
    with pytest.raises(plugnn.SessionError, match="sess_options must be a plugnn.SessionOptions"):
        plugnn.InferenceSession(models.cnn(), sess_options={"intra_op_num_threads": 2})
    with pytest.raises(plugnn.SessionError, match="SessionOptions given twice"):
        plugnn.InferenceSession(models.cnn(), so, sess_options=so)


def test_ort_value_refuses_what_it_cannot_hold() -> None:
    with pytest.raises(InvalidArgument, match="takes a numpy.ndarray, got list"):
        plugnn.OrtValue.ortvalue_from_numpy([1.0])
    with pytest.raises(NotImplemented, match="device 'cuda'"):
        plugnn.OrtValue.ortvalue_from_shape_and_type([2], np.float32, "cuda", 0)
    with pytest.raises(InvalidArgument, match="the CPU is device 0"):
        plugnn.OrtValue.ortvalue_from_numpy(IMAGE, "cpu", 1)
    with pytest.raises(InvalidArgument, match="negative dim"):
        plugnn.OrtValue.ortvalue_from_shape_and_type([2, -1], np.float32)
    with pytest.raises(InvalidArgument, match="item sizes differ"):
        plugnn.OrtValue.ortvalue_from_numpy_with_onnx_type(np.zeros(3, np.float32), 7)
    with pytest.raises(InvalidArgument, match="not a NumPy type or ONNX element type"):
        plugnn.OrtValue.ortvalue_from_shape_and_type([2], object())
    value = plugnn.OrtValue.ortvalue_from_numpy(np.zeros((2, 2), np.float32))
    with pytest.raises(InvalidArgument, match="3 elements for a tensor of 4"):
        value.update_inplace(np.zeros(3))
    value.update_inplace(np.arange(4, dtype=np.float32))
    assert value.numpy().tolist() == [[0, 1], [2, 3]]
    text = plugnn.OrtValue.ortvalue_from_numpy(np.array(["a", "bc"]))
    assert text.data_type() == "tensor(string)" and text.numpy().tolist() == ["a", "bc"]
    with pytest.raises(InvalidArgument, match="no fixed size in bytes"):
        text.tensor_size_in_bytes()
    sequence = plugnn.OrtValue([np.zeros(2, np.int64)])
    assert sequence.is_tensor_sequence() and sequence.data_type() == "seq(tensor(int64))"
    with pytest.raises(InvalidArgument, match="holds a sequence, not a tensor"):
        sequence.shape()
    with pytest.raises(NotImplemented, match="no sparse tensors"):
        value.as_sparse_tensor()
    assert plugnn.OrtDevice.make("cuda", 0).device_name() == "cuda"
    with pytest.raises(InvalidArgument, match="unknown device 'tpu'"):
        plugnn.OrtDevice.make("tpu", 0)


def test_io_binding_refuses_what_does_not_fit(session: Any) -> None:
    binding = session.io_binding()
    with pytest.raises(InvalidArgument, match="'nope' is not an input of the model"):
        binding.bind_cpu_input("nope", IMAGE)
    with pytest.raises(NotImplemented, match="device 'cuda'"):
        binding.bind_input("image", "cuda", 0, np.float32, list(IMAGE.shape), IMAGE.ctypes.data)
    with pytest.raises(InvalidArgument, match="buffer_ptr must be a host address"):
        binding.bind_input("image", "cpu", 0, np.float32, list(IMAGE.shape), 0)
    with pytest.raises(InvalidArgument, match="needs its element_type and shape"):
        binding.bind_output("logits", "cpu", 0, None, None, IMAGE.ctypes.data)
    with pytest.raises(InvalidArgument, match="takes an OrtValue"):
        binding.bind_ortvalue_input("image", IMAGE)
    binding.bind_cpu_input("image", IMAGE)
    wrong = plugnn.OrtValue.ortvalue_from_shape_and_type([3, 4], np.float32)
    binding.bind_ortvalue_output("logits", wrong)
    with pytest.raises(plugnn.InputError, match="logits"):
        session.run_with_iobinding(binding)
    other = plugnn.InferenceSession(models.cnn(), backends=["CpuRef"])
    with pytest.raises(InvalidArgument, match="an IOBinding of this session"):
        other.run_with_iobinding(binding)
    other.close()
    binding.clear_binding_outputs()
    session.run_with_iobinding(binding)  # no output bound: all of them, allocated
    assert [o.shape() for o in binding.get_outputs()] == [[1, 4], [1, 4]]
    assert session.run(["logits"], {"image": IMAGE})[0].shape == (1, 4)  # still usable


def test_run_async_checks_its_arguments_and_reports_callback_errors(session: Any,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(plugnn.SessionError, match="callback must be callable"):
        session.run_async(None, {"image": IMAGE}, "not callable", None)
    done = threading.Event()

    def raising(results: list[Any], data: Any, error: str) -> None:
        done.set()
        raise RuntimeError("the callback's own bug")

    with caplog.at_level("ERROR", logger="plugnn"):
        session.run_async(None, {"image": IMAGE}, raising, None)
        assert done.wait(30)
        session._executor.shutdown(wait=True)  # the log record is written after the callback returns
        session._executor = None
    assert "the run_async callback raised" in caplog.text
    closed = plugnn.InferenceSession(models.cnn(), backends=["CpuRef"])
    closed.close()
    with pytest.raises(plugnn.SessionError, match="the session is closed"):
        closed.run_async(None, {"image": IMAGE}, lambda *a: None, None)


def test_profiling_a_model_on_the_dynamic_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The layers of every segment a run ran are Node events; runtime steps (here the string
    Identity, the sequence ops) are not layers and have none."""
    from onnx import TensorProto, helper

    monkeypatch.chdir(tmp_path)
    so = plugnn.SessionOptions()
    so.enable_profiling = True
    with plugnn.InferenceSession(models.strings(), so) as session:
        session.run(None, {"text": np.array([["a", "b"], ["c", "d"]])})
        assert session.dynamic is not None
        events = json.loads(Path(session.end_profiling()).read_text())
    assert [e["name"] for e in events if e["cat"] == "Session"] == ["model_loading_uri", "session_initialization",
                                                                     "model_run"]
    nodes = [helper.make_node("Relu", ["a"], ["r"], name="relu"),
             helper.make_node("SequenceConstruct", ["r", "a"], ["s"], name="construct"),
             helper.make_node("ConcatFromSequence", ["s"], ["c"], name="concat", axis=0),
             helper.make_node("Sigmoid", ["c"], ["y"], name="sigmoid")]
    graph = helper.make_graph(nodes, "seq", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    with plugnn.InferenceSession(proto, so) as session:
        session.run(None, {"a": np.array([-1.0, 2.0], np.float32)})
        assert session.dynamic is not None
        events = json.loads(Path(session.end_profiling()).read_text())
    layers = [e for e in events if e["cat"] == "Node"]
    assert {e["name"] for e in layers} == {"relu_kernel_time", "sigmoid_kernel_time"}
    assert {e["args"]["op_name"] for e in layers} == {"Activation"}
    with plugnn.InferenceSession(models.cnn()) as session:
        assert session.end_profiling() == "" and session.get_profiling_start_time_ns() == 0


def test_optimized_model_config_entries_are_checked(tmp_path: Path) -> None:
    so = plugnn.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "sub" / "out.onnx")
    so.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "many")
    with pytest.raises(plugnn.SessionError, match="must be an integer, got 'many'"):
        plugnn.InferenceSession(models.cnn(), so)
    so.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "0")
    plugnn.InferenceSession(models.cnn(), so).close()
    written = onnx.load(str(tmp_path / "sub" / "out.onnx"))
    assert {t.name for t in written.graph.initializer} == {t.name for t in models.cnn().graph.initializer}


def test_memory_settings_are_accepted_and_checked() -> None:
    info = plugnn.OrtMemoryInfo("Cpu", plugnn.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, plugnn.OrtMemType.DEFAULT)
    plugnn.create_and_register_allocator(info, None)
    with pytest.raises(NotImplemented, match="device 'Cuda'"):
        plugnn.create_and_register_allocator(
            plugnn.OrtMemoryInfo("Cuda", plugnn.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, plugnn.OrtMemType.DEFAULT))
    cfg = plugnn.OrtArenaCfg({"max_mem": 16, "arena_extend_strategy": 1})
    assert (cfg.max_mem, cfg.arena_extend_strategy, cfg.initial_chunk_size_bytes) == (16, 1, -1)
    assert plugnn.OrtArenaCfg(8, 0, 4, 2).max_dead_bytes_per_chunk == 2
    with pytest.raises(InvalidArgument, match="unknown key"):
        plugnn.OrtArenaCfg({"colour": 1})
    with pytest.raises(InvalidArgument, match="takes 4 ints"):
        plugnn.OrtArenaCfg(1, 2)
