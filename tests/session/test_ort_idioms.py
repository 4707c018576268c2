"""The session API onnxruntime scripts actually write runs on plugnn with only the imports changed.

Each test is a piece of user code (USER_CODE style, as tests/session/test_same_code.py) run
once with onnxruntime's imports and once with plugnn's, and what it computed is compared: the
SessionOptions and provider idioms, RunOptions (terminate included), OrtValue, I/O binding,
run_async, profiling, model metadata, initializer and free-dimension overrides, the optimized
model file, string and list inputs, and the error classes scripts catch. Tolerance as in
test_same_code: float32 sums in different orders, max|diff| <= 1e-4 * max(|ort|, 1).
"""

from __future__ import annotations

import json
import os
import threading
import warnings
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

import plugnn
from session import models

ORT = ("import onnxruntime as ort\n"
       "from onnxruntime.capi.onnxruntime_pybind11_state import Fail, InvalidArgument, InvalidProtobuf, NoSuchFile\n")
PLUGNN = ("import plugnn as ort\n"
          "from plugnn.capi.onnxruntime_pybind11_state import Fail, InvalidArgument, InvalidProtobuf, NoSuchFile\n")


def run_both(code: str, folder: Path, **given: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """`code` run with onnxruntime's imports, then plugnn's, each in a folder of its own as the
    working directory; their scopes."""
    scopes = []
    before = os.getcwd()
    for name, imports in (("ort", ORT), ("plugnn", PLUGNN)):
        where = folder / name
        where.mkdir()
        scope: dict[str, Any] = {"np": np, **given}
        os.chdir(where)
        try:
            exec(imports + code, scope)  # noqa: S102 - the test's own code
        finally:
            os.chdir(before)
        scopes.append(scope)
    return scopes[0], scopes[1]


def close(ours: Any, theirs: Any) -> None:
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    assert np.abs(ours - theirs).max() <= 1e-4 * max(np.abs(theirs).max(), 1.0)


@pytest.fixture(autouse=True)
def plugnn_logger_kept() -> Iterator[None]:
    """The logger "plugnn" as it was before the test (the logger idioms change its level)."""
    logger = logging.getLogger("plugnn")
    level, handlers = logger.level, list(logger.handlers)
    yield
    logger.setLevel(level)
    for handler in [h for h in logger.handlers if h not in handlers]:
        logger.removeHandler(handler)


@pytest.fixture()
def cnn_path(tmp_path: Path) -> str:
    path = tmp_path / "cnn.onnx"
    onnx.save(models.cnn(), str(path))
    return str(path)


IMAGE = np.random.default_rng(1).standard_normal((2, 3, 8, 8)).astype(np.float32)


def test_session_options_threads_and_the_usual_provider_list(cnn_path: str, tmp_path: Path) -> None:
    code = '''
import warnings
so = ort.SessionOptions()
so.intra_op_num_threads = 2
so.inter_op_num_threads = 1
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
so.log_severity_level = 3
so.logid = "idioms"
so.enable_cpu_mem_arena = False
so.enable_mem_pattern = False
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    session = ort.InferenceSession(PATH, sess_options=so, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
warned = any("CUDAExecutionProvider" in str(w.message) for w in caught)
so.intra_op_num_threads = 1   # a session keeps the options it was made with
threads = session.get_session_options().intra_op_num_threads
level = session.get_session_options().graph_optimization_level
available = ort.get_available_providers()
last = ort.get_all_providers()[-1]
device = ort.get_device()
providers = session.get_providers()
provider_options = session.get_provider_options()
out = session.run(None, {"image": IMAGE})
'''
    theirs, ours = run_both(code, tmp_path, PATH=cnn_path, IMAGE=IMAGE)
    for key in ("warned", "threads", "level", "last", "device"):
        assert ours[key] == theirs[key], key
    assert ours["warned"] and ours["threads"] == 2 and ours["device"] == "CPU"
    for scope in (ours, theirs):
        assert "CPUExecutionProvider" in scope["available"] and "CPUExecutionProvider" in scope["providers"]
        assert "CUDAExecutionProvider" not in scope["providers"]
        assert set(scope["provider_options"]) == set(scope["providers"])
    for a, b in zip(ours["out"], theirs["out"], strict=True):
        close(a, b)
    session = ours["session"]
    assert session.runtime.backend("CpuAcc").get_option("num_threads") == "2"
    assert ours["provider_options"]["CpuAcc"]["num_threads"] == "2"
    assert ours["providers"] == ["CpuAcc", "CpuRef", "CPUExecutionProvider"]


def test_providers_as_tuples_and_provider_options(cnn_path: str, tmp_path: Path) -> None:
    code = '''
so = ort.SessionOptions()
a = ort.InferenceSession(PATH, so, providers=[("CPUExecutionProvider", {})])
b = ort.InferenceSession(PATH, providers=["CPUExecutionProvider"], provider_options=[{}])
c = ort.InferenceSession(PATH, providers=ort.get_available_providers())
outs = [s.run(None, {"image": IMAGE})[0] for s in (a, b, c)]
'''
    theirs, ours = run_both(code, tmp_path, PATH=cnn_path, IMAGE=IMAGE)
    for a, b in zip(ours["outs"], theirs["outs"], strict=True):
        close(a, b)
    with pytest.raises(plugnn.SessionError, match="should be the same length"):
        plugnn.InferenceSession(cnn_path, providers=["CPUExecutionProvider"], provider_options=[{}, {}])
    # plugnn's own providers take their backend options in the tuple
    with plugnn.InferenceSession(cnn_path, providers=[("CpuAcc", {"num_threads": 1}), "CPUExecutionProvider"]) as s:
        assert s.get_provider_options()["CpuAcc"]["num_threads"] == "1"
        assert s.get_providers() == ["CpuAcc", "CpuRef", "CPUExecutionProvider"]
    with pytest.raises(plugnn.SessionError, match="provider options apply to a runtime the session creates"), \
            plugnn.Runtime() as runtime:
        plugnn.InferenceSession(cnn_path, providers=[("CpuAcc", {"num_threads": "1"})], runtime=runtime)
    with pytest.raises(plugnn.SessionError, match="a provider is a name or a"):
        plugnn.InferenceSession(cnn_path, providers=[3])
    with pytest.warns(UserWarning, match="Duplicate provider 'CpuRef'"):
        plugnn.InferenceSession(cnn_path, providers=["CpuRef", "CpuRef"]).close()


def test_run_options_and_terminate(cnn_path: str, tmp_path: Path) -> None:
    code = '''
session = ort.InferenceSession(PATH)
session.disable_fallback()
session.enable_fallback()
ro = ort.RunOptions()
ro.logid = "batch-7"
ro.log_severity_level = 2
ro.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
entry = ro.get_run_config_entry("memory.enable_memory_arena_shrinkage")
out = session.run(None, {"image": IMAGE}, ro)
ro.terminate = True
try:
    session.run(None, {"image": IMAGE}, ro)
    stopped = None
except Fail as exc:
    stopped = str(exc)
ro.terminate = False
again = session.run(["logits"], {"image": IMAGE}, run_options=ro)
'''
    theirs, ours = run_both(code, tmp_path, PATH=cnn_path, IMAGE=IMAGE)
    assert ours["entry"] == theirs["entry"] == "cpu:0"
    assert theirs["stopped"] and "Exiting due to terminate flag being set to true" in ours["stopped"]
    close(ours["again"][0], theirs["again"][0])
    close(ours["out"][0], theirs["out"][0])


def test_terminate_is_honoured_between_layers(cnn_path: str) -> None:
    """The hook under RunOptions.terminate: LoadedNetwork.run asks `stop` before each layer."""
    with plugnn.InferenceSession(cnn_path, backends=["CpuRef"]) as session:
        session.run(None, {"image": IMAGE})
        loaded = session.loaded_for({"image": IMAGE.shape})
        assert loaded is not None
        asked = []

        def stop() -> bool:
            asked.append(len(asked))
            return len(asked) == 3  # before the third layer

        with pytest.raises(plugnn.errors.RunStoppedError, match="stopped before layer"):
            loaded.run({"image": IMAGE}, stop=stop)
        assert len(asked) == 3
        expected = session.run(None, {"image": IMAGE})  # still loaded and usable
        results = loaded.run({"image": IMAGE}, stop=lambda: False)
        close(results["logits"], expected[1])


def test_ort_values(cnn_path: str, tmp_path: Path) -> None:
    code = '''
session = ort.InferenceSession(PATH)
x = ort.OrtValue.ortvalue_from_numpy(IMAGE)
described = (x.shape(), x.data_type(), x.device_name(), x.element_type(), x.is_tensor(), x.has_value())
size = x.tensor_size_in_bytes()
outs = session.run_with_ort_values(["probabilities", "logits"], {"image": x})
values = [o.numpy() for o in outs]
types = [o.data_type() for o in outs]
fed = session.run(["probabilities"], {"image": x})[0]
y = ort.OrtValue.ortvalue_from_shape_and_type([2, 4], np.float32)
made = (y.shape(), y.data_type())
typed = ort.OrtValue.ortvalue_from_numpy_with_onnx_type(np.arange(6, dtype=np.int64).reshape(2, 3), 7)
typed_described = (typed.shape(), typed.element_type())
'''
    theirs, ours = run_both(code, tmp_path, PATH=cnn_path, IMAGE=IMAGE)
    for key in ("described", "size", "types", "made", "typed_described"):
        assert ours[key] == theirs[key], key
    assert ours["described"] == ([2, 3, 8, 8], "tensor(float)", "cpu", 1, True, True)
    for a, b in zip(ours["values"], theirs["values"], strict=True):
        close(a, b)
    close(ours["fed"], theirs["fed"])
    assert ours["x"].numpy() is IMAGE  # no copy of a C-contiguous array
    np.testing.assert_array_equal(np.from_dlpack(ours["x"]), IMAGE)
    with pytest.raises(plugnn.capi.onnxruntime_pybind11_state.NotImplemented, match="only device is 'cpu'"):
        plugnn.OrtValue.ortvalue_from_numpy(IMAGE, "cuda", 0)


def test_io_binding(cnn_path: str, tmp_path: Path) -> None:
    code = '''
session = ort.InferenceSession(PATH)
binding = session.io_binding()
binding.bind_cpu_input("image", IMAGE)
binding.bind_output("probabilities")
binding.synchronize_inputs()
session.run_with_iobinding(binding)
binding.synchronize_outputs()
allocated = binding.copy_outputs_to_cpu()[0]
logits = ort.OrtValue.ortvalue_from_shape_and_type([2, 4], np.float32)
binding.bind_ortvalue_output("logits", logits)
session.run_with_iobinding(binding)
in_place = logits.numpy().copy()
listed = [o.numpy() for o in binding.get_outputs()]
raw = session.io_binding()
buffer = np.full((2, 4), -1.0, np.float32)
raw.bind_input("image", "cpu", 0, np.float32, list(IMAGE.shape), IMAGE.ctypes.data)
raw.bind_output("probabilities", "cpu", 0, np.float32, [2, 4], buffer.ctypes.data)
session.run_with_iobinding(raw)
written = buffer.copy()
image_value = ort.OrtValue.ortvalue_from_numpy(IMAGE)
third = session.io_binding()
third.bind_ortvalue_input("image", image_value)
third.bind_output("logits", "cpu")
session.run_with_iobinding(third)
third_out = third.get_outputs()[0].numpy()
'''
    theirs, ours = run_both(code, tmp_path, PATH=cnn_path, IMAGE=IMAGE)
    for key in ("allocated", "in_place", "written", "third_out"):
        close(ours[key], theirs[key])
    for a, b in zip(ours["listed"], theirs["listed"], strict=True):
        close(a, b)
    assert (ours["written"] != -1.0).all()
    # plugnn writes a preallocated output in place (no copy on the static path)
    session = ours["session"]
    target = np.zeros((2, 4), np.float32)
    binding = session.io_binding()
    binding.bind_cpu_input("image", IMAGE)
    binding.bind_ortvalue_output("probabilities", plugnn.OrtValue.ortvalue_from_numpy(target))
    session.run_with_iobinding(binding)
    assert binding.get_outputs()[0].numpy() is target
    close(target, theirs["allocated"])
    with pytest.raises(plugnn.capi.onnxruntime_pybind11_state.InvalidArgument, match="'nope' is not an output"):
        binding.bind_output("nope")


def test_profiling_writes_onnxruntime_trace(cnn_path: str, tmp_path: Path) -> None:
    code = '''
import json
so = ort.SessionOptions()
so.enable_profiling = True
so.profile_file_prefix = "trace"
session = ort.InferenceSession(PATH, so)
started = session.get_profiling_start_time_ns()
for _ in range(2):
    session.run(None, {"image": IMAGE})
path = session.end_profiling()
with open(path) as f:
    lines = f.readlines()
events = json.loads("".join(lines))
runs = [e["name"] for e in events if e["name"] == "model_run"]
sessions = sorted({e["name"] for e in events if e["cat"] == "Session"} - {"SequentialExecutor::Execute"})
nodes = [e for e in events if e["cat"] == "Node"]
after = session.end_profiling()
'''
    theirs, ours = run_both(code, tmp_path, PATH=cnn_path, IMAGE=IMAGE)
    assert ours["runs"] == theirs["runs"] == ["model_run", "model_run"]
    assert ours["sessions"] == theirs["sessions"]
    assert Path(ours["path"]).name.startswith("trace_") and ours["path"].endswith(".json")
    assert ours["after"] == "" and ours["started"] > 0
    assert ours["lines"][0].strip() == "[" and ours["lines"][-1].strip() == "]"
    for line in ours["lines"][1:-1]:
        event = json.loads(line.rstrip().rstrip(","))
        assert {"cat", "pid", "tid", "dur", "ts", "ph", "name", "args"} <= set(event) and event["ph"] == "X"
    assert ours["nodes"] and theirs["nodes"]
    backends = set(ours["session"].runtime.backend_ids)
    for event in ours["nodes"]:
        assert event["name"].endswith("_kernel_time") and event["args"]["provider"] in backends
        assert event["args"]["op_name"]
    layers = {e["name"] for e in ours["nodes"]}
    assert len(ours["nodes"]) == 2 * len(layers)  # every layer, each run


def test_run_async(cnn_path: str, tmp_path: Path) -> None:
    code = '''
import threading
done = threading.Event()
got = {}

def callback(results, user_data, error):
    got["results"], got["data"], got["error"], got["thread"] = results, user_data, error, threading.current_thread()
    done.set()

session = ort.InferenceSession(PATH)
session.run_async(["logits"], {"image": IMAGE}, callback, {"id": 7})
finished = done.wait(30)
on_worker = got["thread"] is not threading.current_thread()
done.clear()
session.run_async(None, {"image": IMAGE.astype(np.float64)}, callback, None)
failed = done.wait(30)
'''
    theirs, ours = run_both(code, tmp_path, PATH=cnn_path, IMAGE=IMAGE)
    assert ours["finished"] and theirs["finished"] and ours["on_worker"] and theirs["on_worker"]
    assert ours["failed"] and theirs["failed"]
    assert ours["got"]["error"] and theirs["got"]["error"]
    assert "dtype float64" in ours["got"]["error"]


def test_async_results_and_user_data(cnn_path: str) -> None:
    reference = __import__("onnxruntime").InferenceSession(cnn_path).run(["logits"], {"image": IMAGE})[0]
    done = threading.Event()
    got: dict[str, Any] = {}

    def callback(results: list[Any], data: Any, error: str) -> None:
        got.update(results=results, data=data, error=error)
        done.set()

    with plugnn.InferenceSession(cnn_path) as session:
        session.run_async(["logits"], {"image": IMAGE}, callback, {"id": 7})
        assert done.wait(30)
    assert got["error"] == "" and got["data"] == {"id": 7}
    close(got["results"][0], reference)


def test_model_metadata_overridable_initializers_and_replacements(tmp_path: Path) -> None:
    path = tmp_path / "scaled.onnx"
    onnx.save(models.scaled(), str(path))
    w2 = np.linspace(-1, 1, 6).astype(np.float32)
    code = '''
session = ort.InferenceSession(PATH)
meta = session.get_modelmeta()
described = (meta.producer_name, meta.graph_name, meta.description, meta.version, meta.custom_metadata_map)
inputs = [(i.name, i.shape, i.type) for i in session.get_inputs()]
overridable = [(i.name, i.shape, i.type) for i in session.get_overridable_initializers()]
x = np.random.default_rng(3).standard_normal((3, 6)).astype(np.float32)
plain = session.run(None, {"x": x})[0]
so = ort.SessionOptions()
w_value = ort.OrtValue.ortvalue_from_numpy(W2)  # kept alive while sessions use it (onnxruntime's rule)
so.add_initializer("w", w_value)
replaced = ort.InferenceSession(PATH, so).run(None, {"x": x})[0]
by_name = ort.SessionOptions()
by_name.add_free_dimension_override_by_name("batch", 3)
named_shape = ort.InferenceSession(PATH, by_name).get_inputs()[0].shape
by_denotation = ort.SessionOptions()
by_denotation.add_free_dimension_override_by_denotation("DATA_BATCH", 5)
denoted_shape = ort.InferenceSession(PATH, by_denotation).get_inputs()[0].shape
'''
    theirs, ours = run_both(code, tmp_path, PATH=str(path), W2=w2)
    for key in ("described", "inputs", "overridable", "named_shape", "denoted_shape"):
        assert ours[key] == theirs[key], key
    assert ours["described"] == ("plugnn-tests", "scaled", "a scaled relu", 3, {"author": "tests/session/models.py"})
    assert ours["named_shape"] == [3, 6] and ours["denoted_shape"] == [5, 6]
    close(ours["plain"], theirs["plain"])
    close(ours["replaced"], theirs["replaced"])
    assert not np.allclose(ours["plain"], ours["replaced"])
    so = plugnn.SessionOptions()
    so.add_initializer("nope", plugnn.OrtValue.ortvalue_from_numpy(w2))
    with pytest.raises(plugnn.SessionError, match="has no initializer of that name"):
        plugnn.InferenceSession(str(path), so)
    so = plugnn.SessionOptions()
    so.add_initializer("w", plugnn.OrtValue.ortvalue_from_numpy(w2[:4]))
    with pytest.raises(plugnn.SessionError, match=r"float32 \[4\] does not replace the model's float32 \[6\]"):
        plugnn.InferenceSession(str(path), so)


def test_external_initializers_given_by_the_caller(tmp_path: Path) -> None:
    """An initializer whose external data is not on disk, supplied through SessionOptions."""
    model = models.scaled(denotation=False)
    w = onnx.numpy_helper.to_array(model.graph.initializer[0])
    b = onnx.numpy_helper.to_array(model.graph.initializer[1])
    path = tmp_path / "external.onnx"
    onnx.save(model, str(path), save_as_external_data=True, location="weights.bin", size_threshold=0)
    (tmp_path / "weights.bin").unlink()
    x = np.ones((2, 6), np.float32)
    expected = np.maximum(x * w + b, 0)
    so = plugnn.SessionOptions()
    so.add_external_initializers(["w", "b"], [plugnn.OrtValue.ortvalue_from_numpy(w), plugnn.OrtValue.ortvalue_from_numpy(b)])
    with plugnn.InferenceSession(str(path), so) as session:
        close(session.run(None, {"x": x})[0], expected)
    with pytest.raises(plugnn.ModelError, match="weights.bin"):
        plugnn.InferenceSession(str(path))


def test_external_data_files_given_in_memory(tmp_path: Path) -> None:
    model = models.scaled(denotation=False)
    path = tmp_path / "external.onnx"
    onnx.save(model, str(path), save_as_external_data=True, location="weights.bin", size_threshold=0)
    contents = (tmp_path / "weights.bin").read_bytes()
    x = np.random.default_rng(5).standard_normal((3, 6)).astype(np.float32)
    import onnxruntime

    expected = onnxruntime.InferenceSession(str(path)).run(None, {"x": x})[0]
    (tmp_path / "weights.bin").unlink()
    code = '''
so = ort.SessionOptions()
so.add_external_initializers_from_files_in_memory(["weights.bin"], [CONTENTS], [len(CONTENTS)])
out = ort.InferenceSession(PATH, so).run(None, {"x": X})[0]
'''
    theirs, ours = run_both(code, tmp_path, PATH=str(path), CONTENTS=contents, X=x)
    close(ours["out"], expected)
    close(theirs["out"], expected)
    so = plugnn.SessionOptions()
    so.add_external_initializers_from_files_in_memory(["weights.bin"], [contents[:10]], [10])
    with pytest.raises(plugnn.ModelError, match="which was given with 10 bytes"):
        plugnn.InferenceSession(str(path), so)
    with pytest.raises(plugnn.SessionError, match="length 99 is not within the buffer's 10 bytes"):
        so.add_external_initializers_from_files_in_memory(["weights.bin"], [contents[:10]], [99])
    with pytest.raises(plugnn.SessionError, match="1 file names, 2 buffers and 1 lengths"):
        so.add_external_initializers_from_files_in_memory(["weights.bin"], [b"", b""], [0])


def test_optimized_model_file_and_session_config_entries(cnn_path: str, tmp_path: Path) -> None:
    code = '''
so = ort.SessionOptions()
so.optimized_model_filepath = "written.onnx"
so.add_session_config_entry("session.optimized_model_external_initializers_file_name", "written.bin")
so.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "64")
entry = so.get_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes")
try:
    so.get_session_config_entry("no.such.key")
    missing = None
except RuntimeError as exc:
    missing = str(exc)
ort.InferenceSession(PATH, so)
import os
files = (os.path.isfile("written.onnx"), os.path.isfile("written.bin"))
again = ort.InferenceSession("written.onnx").run(None, {"image": IMAGE})
'''
    theirs, ours = run_both(code, tmp_path, PATH=cnn_path, IMAGE=IMAGE)
    assert ours["entry"] == theirs["entry"] == "64"
    assert "SessionOptions does not have configuration with key: no.such.key" in ours["missing"]
    assert theirs["missing"]
    assert ours["files"] == theirs["files"] == (True, True)
    for a, b in zip(ours["again"], theirs["again"], strict=True):
        close(a, b)
    import onnxruntime

    # onnxruntime runs the file plugnn wrote
    written = onnxruntime.InferenceSession(str(tmp_path / "plugnn" / "written.onnx"))
    close(written.run(None, {"image": IMAGE})[0], theirs["again"][0])


def test_strings_and_lists_are_converted(tmp_path: Path) -> None:
    path = tmp_path / "strings.onnx"
    onnx.save(models.strings(), str(path))
    numbers = tmp_path / "cnn.onnx"
    onnx.save(models.cnn(), str(numbers))
    code = '''
session = ort.InferenceSession(PATH)
words = np.array([["this", "is"], ["Olá", "你好"]])
outs = [session.run(None, {"text": value})[0].tolist() for value in (
    words, words.astype(object), np.array([[b"this", b"is"], [b"a", b"test"]], dtype="S8"), words.tolist(),
    np.array([[b"must", b"have"], [b"same", b"size"]], dtype=np.void))]
numeric = ort.InferenceSession(NUMBERS).run(["logits"], {"image": IMAGE.tolist()})[0]
'''
    theirs, ours = run_both(code, tmp_path, PATH=str(path), NUMBERS=str(numbers), IMAGE=IMAGE)
    assert ours["outs"] == theirs["outs"]
    assert ours["outs"][0] == [["this", "is"], ["Olá", "你好"]] and ours["outs"][4] == [["must", "have"], ["same", "size"]]
    close(ours["numeric"], theirs["numeric"])


def test_errors_carry_onnxruntime_names(cnn_path: str, tmp_path: Path) -> None:
    code = '''
session = ort.InferenceSession(PATH)
caught = {}
attempts = {
    "dtype": lambda: session.run(None, {"image": IMAGE.astype(np.float64)}),
    "rank": lambda: session.run(None, {"image": IMAGE[0]}),
    "output": lambda: session.run(["nope"], {"image": IMAGE}),
    "file": lambda: ort.InferenceSession("no_such_model.onnx"),
    "protobuf": lambda: ort.InferenceSession(b"not a model"),
    "missing": lambda: session.run(None, {}),
}
for name, attempt in attempts.items():
    try:
        attempt()
        caught[name] = None
    except (InvalidArgument, NoSuchFile, InvalidProtobuf) as exc:
        caught[name] = type(exc).__name__
    except ValueError as exc:
        caught[name] = "ValueError: " + str(exc)
via_module = ort.capi.onnxruntime_pybind11_state.InvalidArgument
ort.set_default_logger_severity(3)
version = ort.__version__
info = (ort.get_version_string(), ort.get_build_info())
'''
    theirs, ours = run_both(code, tmp_path, PATH=cnn_path, IMAGE=IMAGE)
    try:
        for name in ("dtype", "rank", "output", "file", "protobuf"):
            assert ours["caught"][name] == theirs["caught"][name], name
        assert theirs["caught"]["missing"].startswith("ValueError: Required inputs (['image']) are missing")
        assert "Required inputs (['image']) are missing from input feed ([])" in ours["caught"]["missing"]
        assert issubclass(ours["via_module"], plugnn.InputError)
        assert "Build Info" in ours["info"][1] and ours["version"] == plugnn.__version__
    finally:
        plugnn.set_default_logger_severity(2)
        __import__("onnxruntime").set_default_logger_severity(2)


def test_what_plugnn_does_not_do_is_a_clear_error(cnn_path: str) -> None:
    so = plugnn.SessionOptions()
    with pytest.raises(plugnn.capi.onnxruntime_pybind11_state.NotImplemented, match="docs/backends.md"):
        so.register_custom_ops_library("libcustom_op_library.so")
    with pytest.raises(plugnn.SessionError, match="intra_op_num_threads takes an integer >= 0"):
        so.intra_op_num_threads = -1
    with pytest.raises(plugnn.SessionError, match="graph_optimization_level takes one of GraphOptimizationLevel"):
        so.graph_optimization_level = 7
    with pytest.raises(plugnn.capi.onnxruntime_pybind11_state.NotImplemented, match="LoRA"):
        plugnn.RunOptions().add_active_adapter(object())
    with plugnn.InferenceSession(cnn_path) as session:
        with pytest.raises(plugnn.capi.onnxruntime_pybind11_state.Fail, match="Unknown Provider Type: Nope"):
            session.set_providers(["Nope"])
        session.set_providers(["CpuRef"])
        assert session.get_providers() == ["CpuRef"]
        close(session.run(["logits"], {"image": IMAGE})[0],
              __import__("onnxruntime").InferenceSession(cnn_path).run(["logits"], {"image": IMAGE})[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with plugnn.InferenceSession(cnn_path, providers=["CUDAExecutionProvider"]) as session:
            assert session.get_providers() == ["CpuAcc", "CpuRef", "CPUExecutionProvider"]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # onnxruntime's report of the raising callback
def test_logger_severity_and_callback(cnn_path: str, tmp_path: Path) -> None:
    code = '''
messages = []

def callback(severity, category, logid, code_location, message):
    messages.append((severity, category, logid, code_location, message))

ort.set_default_logger_callback(callback, severity=0)
try:
    session = ort.InferenceSession(PATH)
    session.run(None, {"image": IMAGE})
finally:
    ort.set_default_logger_callback(None)
    ort.set_default_logger_severity(2)
count = len(messages)
typed = all(isinstance(s, int) and all(isinstance(t, str) for t in rest) for s, *rest in messages)
refused = []
for bad in (lambda: ort.set_default_logger_callback(callback, severity=5), lambda: ort.set_default_logger_callback(3)):
    try:
        bad()
    except RuntimeError:
        refused.append(True)
ort.set_default_logger_callback(lambda *args: 1 / 0, severity=1)
try:
    ort.InferenceSession(PATH).run(None, {"image": IMAGE})   # a raising callback does not break the run
finally:
    ort.set_default_logger_callback(None)
    ort.set_default_logger_severity(2)
'''
    theirs, ours = run_both(code, tmp_path, PATH=cnn_path, IMAGE=IMAGE)
    # onnxruntime applies a callback only when it is set before its environment exists (its first
    # session in the process), so in a test process its count depends on the tests before it
    assert ours["count"] > 0
    assert ours["typed"] and theirs["typed"]
    assert ours["refused"] == theirs["refused"] == [True, True]
    assert any("built for every shape with symbols" in m[4] and "image=[2, 3, 8, 8]" in m[4] for m in ours["messages"])


def test_io_binding_on_the_dynamic_path() -> None:
    """A model on the dynamic path (a sequence inside) writes a bound output by a copy."""
    from onnx import TensorProto, helper

    nodes = [helper.make_node("SequenceConstruct", ["a", "a"], ["s"], name="construct"),
             helper.make_node("ConcatFromSequence", ["s"], ["y"], name="concat", axis=0)]
    graph = helper.make_graph(nodes, "seq", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    a = np.array([1.5, -2.0], np.float32)
    target = plugnn.OrtValue.ortvalue_from_shape_and_type([4], np.float32)
    with plugnn.InferenceSession(proto) as session:
        assert session.dynamic is not None
        binding = session.io_binding()
        binding.bind_cpu_input("a", a)
        binding.bind_ortvalue_output("y", target)
        session.run_with_iobinding(binding)
        assert binding.get_outputs()[0].numpy() is target.numpy()
        np.testing.assert_array_equal(target.numpy(), [1.5, -2.0, 1.5, -2.0])
        wrong = session.io_binding()
        wrong.bind_cpu_input("a", a)
        wrong.bind_ortvalue_output("y", plugnn.OrtValue.ortvalue_from_shape_and_type([3], np.float32))
        with pytest.raises(plugnn.capi.onnxruntime_pybind11_state.InvalidArgument, match=r"the bound buffer is \[3\]"):
            session.run_with_iobinding(wrong)


def test_dlpack_array_protocol_devices_and_memory_infos(cnn_path: str, tmp_path: Path) -> None:
    code = '''
C = ort.capi._pybind_state
x = np.arange(6, dtype=np.float32).reshape(2, 3)
v = ort.OrtValue.ortvalue_from_numpy(x)
shared = np.asarray(v).ctypes.data == v.data_ptr()
same_dtype_shared = np.asarray(v, dtype=np.float32).ctypes.data == v.data_ptr()
as64 = np.asarray(v, dtype=np.float64)
back = ort.OrtValue.from_dlpack(v)
back_shared = back.data_ptr() == v.data_ptr()
from_numpy = ort.OrtValue.from_dlpack(x).numpy()
device = v.__dlpack_device__()
from_capsule = C.OrtValue.from_dlpack(v._ortvalue.to_dlpack()).numpy()
flags = ort.OrtValue.from_dlpack(ort.OrtValue.ortvalue_from_numpy(np.array([True, False]))).numpy()
vendors = (ort.OrtDevice.make("cuda", 0).device_vendor_id() == ort.OrtDeviceVendorId.NVIDIA,
           ort.OrtDevice.make("cpu", 0).device_vendor_id() == ort.OrtDeviceVendorId.NONE, int(ort.OrtDeviceVendorId.NVIDIA))
info = ort.OrtMemoryInfo("Cpu", ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, ort.OrtMemType.DEFAULT)
info_fields = (info.name, info.device_id, info.mem_type == ort.OrtMemType.DEFAULT,
               info.allocator_type == ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR,
               info.device_mem_type == ort.OrtDeviceMemoryType.DEFAULT, info.device_vendor_id)
made = ort.OrtMemoryInfo.create_v2("Test", ort.OrtMemoryInfoDeviceType.CPU, 0, 0, ort.OrtDeviceMemoryType.DEFAULT, 128,
                                   ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR)
made_fields = (made.name, made.device_id, made.mem_type == ort.OrtMemType.DEFAULT, made.device_vendor_id)
session = ort.InferenceSession(PATH)
counts = (len(session.get_input_memory_infos()), len(session.get_output_memory_infos()), len(session.get_input_epdevices()))
'''
    theirs, ours = run_both(code, tmp_path, PATH=cnn_path)
    for key in ("shared", "same_dtype_shared", "back_shared", "device", "vendors", "info_fields", "made_fields", "counts"):
        assert ours[key] == theirs[key], key
    assert ours["shared"] and ours["back_shared"]
    # onnxruntime 1.23's C-level helper (gone in 1.32): reads a capsule's type without consuming it
    from plugnn.capi import _pybind_state as C

    capsule = plugnn.OrtValue.ortvalue_from_numpy(np.zeros(2, np.uint8)).to_dlpack()
    assert C.is_dlpack_uint8_tensor(capsule)
    assert C.OrtValue.from_dlpack(capsule, True).numpy().dtype == np.bool_
    assert not C.is_dlpack_uint8_tensor(plugnn.OrtValue.ortvalue_from_numpy(IMAGE).to_dlpack())
    with pytest.raises(plugnn.capi.onnxruntime_pybind11_state.InvalidArgument, match="unused DLPack capsule"):
        C.is_dlpack_uint8_tensor(IMAGE)
    for key in ("as64", "from_numpy", "from_capsule", "flags"):
        np.testing.assert_array_equal(ours[key], theirs[key])
        assert ours[key].dtype == theirs[key].dtype, key


def test_provider_graph_assignment_info(tmp_path: Path) -> None:
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Add", ["x", "x"], ["a"], name="add_0"),
             helper.make_node("Mul", ["a", "x"], ["m"], name="mul_0"),
             helper.make_node("Add", ["m", "x"], ["y"], name="add_1")]
    graph = helper.make_graph(nodes, "add_mul_add", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    path = tmp_path / "add_mul_add.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    code = '''
so = ort.SessionOptions()
so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
session = ort.InferenceSession(PATH, sess_options=so)
subgraphs = session.get_provider_graph_assignment_info()
node_ids = sorted(f"{n.domain}:{n.op_type}/{n.name}" for s in subgraphs for n in s.get_nodes())
eps = {s.ep_name for s in subgraphs}
try:
    ort.InferenceSession(PATH).get_provider_graph_assignment_info()
    refused = None
except Fail as exc:
    refused = str(exc)
'''
    theirs, ours = run_both(code, tmp_path, PATH=str(path))
    assert ours["node_ids"] == theirs["node_ids"] == [":Add/add_0", ":Add/add_1", ":Mul/mul_0"]
    assert theirs["eps"] == {"CPUExecutionProvider"}
    assert ours["eps"] <= set(ours["session"].runtime.backend_ids)  # plugnn names the backend that runs it
    expected = "Session configuration entry 'session.record_ep_graph_assignment_info' must be set to \"1\""
    assert expected in ours["refused"] and expected in theirs["refused"]
