"""`plugnn run`: the demo and ONNX models from the shell, every section, every user error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from plugnn import demo

# A hang detector, not a time limit: the work each subprocess does is bounded, and a loaded
# machine (2 vCPUs at load 10) may take many times what it takes alone.
HANG_GUARD_S = 1800

DEMO_LAYERS = 19  # 25 layers built, 6 batch normalizations folded into the convolutions (CpuRef)


def _built_in_backends() -> list[str]:
    """The backends `plugnn run` prefers by default: the runtime's own order (CpuAcc, CpuRef)."""
    import plugnn as pn

    with pn.Runtime() as runtime:
        return runtime.preferred_backends


def _default_plan() -> tuple[int, dict[str, int], str]:
    """What optimize() makes of the demo with the default backends, through the Python API: the
    layer count, the layers per type and the first layer's name. The CLI must print the same
    (CpuRef runs the 19 layers left after batch-norm folding; CpuAcc fuses activations and
    residual adds and, with AVX-512, runs runs of convolutions as one blocked chain)."""
    import plugnn as pn

    with pn.Runtime() as runtime:
        layers = pn.optimize(demo.network(), runtime, BUILT_IN).layers
    types: dict[str, int] = {}
    for node in layers:
        types[node.type_name] = types.get(node.type_name, 0) + 1
    return len(layers), types, layers[0].name


BUILT_IN = _built_in_backends()
DEFAULT_BACKEND = BUILT_IN[0]  # the backend that runs the whole demo by default
DEFAULT_LAYERS, DEFAULT_TYPES, STEM = _default_plan()


def plugnn(*args: str, prelude: str = "") -> subprocess.CompletedProcess[str]:
    """`python -m plugnn ARGS`; `prelude` runs first in the child (e.g. to hide a package)."""
    if prelude:
        command = [sys.executable, "-c", f"{prelude}\nimport sys\nfrom plugnn.cli import main\n"
                                         f"sys.exit(main(sys.argv[1:]))", *args]
    else:
        command = [sys.executable, "-m", "plugnn", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=HANG_GUARD_S)


def run_json(*args: str) -> dict:
    result = plugnn("run", *args, "--json")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return json.loads(result.stdout)


def demo_reference(image: np.ndarray) -> np.ndarray:
    """The demo network run in-process through the Python API."""
    import plugnn as pn

    with pn.Runtime() as runtime:
        optimized = pn.optimize(demo.network(), runtime, [DEFAULT_BACKEND])
        with runtime.load_network(optimized) as loaded:
            return loaded.run({demo.INPUT_NAME: image})[demo.OUTPUT_NAME]


def assert_one_line_error(result: subprocess.CompletedProcess[str], *fragments: str) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("plugnn: error: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


# ---- the demo ----------------------------------------------------------------------------------------


def test_demo_prints_every_section() -> None:
    result = plugnn("run")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # no progress bar, no logging when stderr is not a terminal
    out = result.stdout
    for section in ("Model: built-in demo", f"Backends: {DEFAULT_BACKEND}", f"Placement ({DEFAULT_LAYERS} layers run",
                    "Inputs:", "Outputs:", "Timing (10 runs after 1 warm-up run"):
        assert section in out, out
    placement = next(line.split() for line in out.splitlines() if line.strip().startswith("#1-"))
    assert placement[:4] == [f"#1-{DEFAULT_LAYERS}", DEFAULT_BACKEND, str(DEFAULT_LAYERS), "layers:"], out
    assert all(name in out for name in DEFAULT_TYPES) and "fallbacks: none" in out
    assert "BatchNormalization x6 folded into the layer before" in out
    assert "image  (1, 3, 32, 32)  float32  random (seed 0)" in out
    assert "probabilities  (1, 10) float32  min " in out and "first values: [" in out
    assert "median " in out and " ms" in out
    assert "\r" not in out and "\x1b" not in out


def test_demo_json_has_everything() -> None:
    data = run_json()
    assert data["model"] is None and data["network"] == "plugnn_demo"
    assert data["backends"]["preferred"][0] == DEFAULT_BACKEND and data["backends"]["used"] == [DEFAULT_BACKEND]
    groups = data["placement"]["groups"]
    assert [(g["backend"], g["first"], g["last"], g["count"]) for g in groups] == [(DEFAULT_BACKEND, 1, DEFAULT_LAYERS,
                                                                                     DEFAULT_LAYERS)]
    assert groups[0]["types"] == DEFAULT_TYPES
    assert len(data["placement"]["layers"]) == DEFAULT_LAYERS and data["placement"]["fallbacks"] == []
    assert data["placement"]["removed"][0]["types"] == {"BatchNormalization": 6}
    assert data["inputs"] == [{"name": "image", "shape": [1, 3, 32, 32], "dtype": "float32",
                               "source": "random (seed 0)"}]
    (output,) = data["outputs"]
    assert output["name"] == "probabilities" and output["shape"] == [1, 10] and output["dtype"] == "float32"
    assert 0 <= output["min"] <= output["mean"] <= output["max"] <= 1 and output["mean"] == pytest.approx(0.1)
    assert len(output["first"]) == 5 and output["nonfinite"] == 0
    timing = data["timing"]
    assert timing["iterations"] == 10 and timing["profiled"] is False
    assert 0 < timing["min_ms"] <= timing["median_ms"] <= timing["max_ms"]
    assert "profile" not in data and "compare" not in data and "output_files" not in data


@pytest.mark.skipif("CpuAcc" not in BUILT_IN, reason="CpuAcc is not built")
def test_backend_options_reach_the_backend() -> None:
    """--option is set on the backend before optimize: CpuAcc with fusion and blocked chains off
    runs the demo layer by layer; a bad value is refused naming the option."""
    default = run_json("-c", "CpuAcc,CpuRef", "--iterations", "1")
    plain = run_json("-c", "CpuAcc,CpuRef", "--iterations", "1", "--option", "CpuAcc:fuse=0",
                     "--option", "CpuAcc: blocked_chains = 0 ", "--option", "CpuAcc:num_threads=1")
    assert default["backends"]["options"] == {}
    assert plain["backends"]["options"] == {"CpuAcc": {"fuse": "0", "blocked_chains": "0", "num_threads": "1"}}
    assert default["placement"]["fused"] and not plain["placement"]["fused"]
    assert len(plain["placement"]["layers"]) > len(default["placement"]["layers"])
    assert_one_line_error(plugnn("run", "--option", "CpuAcc:num_threads=0"),
                          "--option CpuAcc:num_threads=0", "num_threads", "'0'")


def test_iterations_and_profile() -> None:
    data = run_json("--iterations", "3", "--profile")
    assert data["timing"]["iterations"] == 3 and data["timing"]["profiled"] is True
    profile = data["profile"]
    assert [p["layer"] for p in profile] == [a["layer"] for a in data["placement"]["layers"]]
    assert {p["backend"] for p in profile} == {DEFAULT_BACKEND}
    assert sum(p["share"] for p in profile) == pytest.approx(1.0)
    text = plugnn("run", "--iterations", "2", "--profile").stdout
    assert "Timing (2 runs after 1 warm-up run" in text and "profiling on" in text
    assert "Profile (median per layer over 2 runs):" in text
    assert any(line.split()[:2] == [STEM, DEFAULT_BACKEND] and line.endswith("%") for line in text.splitlines())
    assert any(line.split()[:1] == ["total"] and line.endswith("100.0%") for line in text.splitlines())


def test_output_dir_files_match_the_run(tmp_path: Path) -> None:
    out = tmp_path / "out" / "nested"
    data = run_json("--output-dir", str(out), "--seed", "7")
    assert data["output_files"] == [{"name": "probabilities", "path": str(out / "probabilities.npy")}]
    saved = np.load(out / "probabilities.npy")
    assert saved.shape == (1, 10) and saved.dtype == np.float32
    summary = data["outputs"][0]
    assert float(saved.min()) == summary["min"] and float(saved.max()) == summary["max"]
    assert saved.reshape(-1)[:5].tolist() == summary["first"]
    image = np.random.default_rng(7).standard_normal((1, 3, 32, 32)).astype(np.float32)
    np.testing.assert_array_equal(saved, demo_reference(image))
    assert "Output files:\n  probabilities -> " in plugnn("run", "--output-dir", str(out)).stdout


def test_input_file_is_used(tmp_path: Path) -> None:
    image = np.linspace(-2, 2, 3 * 32 * 32, dtype=np.float32).reshape(1, 3, 32, 32)
    np.save(tmp_path / "image.npy", image)
    data = run_json("--input", f"image={tmp_path / 'image.npy'}", "--output-dir", str(tmp_path))
    assert data["inputs"][0]["source"] == str(tmp_path / "image.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "probabilities.npy"), demo_reference(image))


def test_seed_changes_random_inputs(tmp_path: Path) -> None:
    first = [run_json("--seed", str(seed), "--iterations", "1")["outputs"][0]["first"] for seed in (1, 1, 2)]
    assert first[0] == first[1] != first[2]


def test_backend_list() -> None:
    data = run_json("-c", "CpuRef", "--iterations", "1")
    assert data["backends"]["preferred"] == ["CpuRef"]
    assert {a["backend"] for a in data["placement"]["layers"]} == {"CpuRef"}
    assert all(a["attempts"][0]["backend"] == "CpuRef" for a in data["placement"]["layers"])


def test_demo_without_onnx_installed() -> None:
    hide = "import sys\nsys.modules['onnx'] = None\nsys.modules['onnxruntime'] = None"
    result = plugnn("run", "--iterations", "1", prelude=hide)
    assert result.returncode == 0, result.stderr
    assert "probabilities  (1, 10) float32" in result.stdout
    assert_one_line_error(plugnn("run", "--compare", "onnxruntime", prelude=hide), "pip install onnxruntime")
    assert_one_line_error(plugnn("run", "model.onnx", prelude=hide), "no such model file")


# ---- progress -------------------------------------------------------------------------------------------


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_progress_bar_only_on_a_terminal() -> None:
    import pty

    quiet = plugnn("run", "--iterations", "150")
    assert quiet.returncode == 0 and quiet.stderr == "" and "\r" not in quiet.stdout
    master, slave = pty.openpty()
    try:
        child = subprocess.run([sys.executable, "-m", "plugnn", "run", "--iterations", "150"],
                               stdout=subprocess.PIPE, stderr=slave, text=True, timeout=HANG_GUARD_S)
        os.close(slave)
        slave = -1
        seen = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
    finally:
        if slave >= 0:
            os.close(slave)
        os.close(master)
    assert child.returncode == 0
    assert b"running [" in seen and b"150/150" in seen  # on the terminal, then erased
    assert seen.endswith(b"\r")
    assert "\r" not in child.stdout and "running [" not in child.stdout


# ---- user errors: one line, exit status 2 ------------------------------------------------------------------


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("files")
    np.save(d / "good.npy", np.zeros((1, 3, 32, 32), np.float32))
    np.save(d / "float64.npy", np.zeros((1, 3, 32, 32)))
    np.save(d / "small.npy", np.zeros((1, 3, 16, 16), np.float32))
    np.savez(d / "archive.npz", a=np.zeros(3))
    (d / "text.npy").write_text("not numpy\n")
    (d / "not_a_model.onnx").write_bytes(b"\x00\x01definitely not protobuf\xff" * 10)
    (d / "a_file").write_text("x")
    return d


@pytest.mark.parametrize("args, fragments", [
    (["missing.onnx"], ["no such model file: missing.onnx"]),
    (["-c", "NoSuchBackend"], ["unknown backend 'NoSuchBackend'", "available backends: " + ", ".join(BUILT_IN)]),
    (["-c", "CpuRef,,CpuRef"], ["comma-separated list"]),
    (["-c", ""], ["comma-separated list"]),
    (["-c", "CpuRef,CpuRef"], ["CpuRef more than once"]),
    (["--input", "image"], ["--input takes NAME=FILE.npy"]),
    (["--input", "image={d}/nope.npy"], ["no such file"]),
    (["--input", "image={d}/float64.npy"], ["holds float64, the network takes float32"]),
    (["--input", "image={d}/small.npy"], ["holds shape (1, 3, 16, 16), the network takes (1, 3, 32, 32)"]),
    (["--input", "picture={d}/good.npy"], ["--input names 'picture'", "it takes: image (1, 3, 32, 32) float32"]),
    (["--input", "image={d}/good.npy", "--input", "image={d}/good.npy"], ["more than once"]),
    (["--input", "image={d}/archive.npz"], ["is an .npz archive"]),
    (["--input", "image={d}/text.npy"], ["is not a .npy file"]),
    (["--input-shape", "image=1,3,32,32"], ["--input-shape applies to ONNX models"]),
    (["--output-dir", "{d}/a_file"], ["exists and is not a directory"]),
    (["--dynamic-backends-path", "{d}/no_such_dir"], ["no usable backends", "does not exist"]),
    (["{d}"], ["must be a file"]),
    (["--option", "CpuRef=1"], ["--option takes BACKEND:KEY=VALUE", "'CpuRef=1'"]),
    (["--option", "CpuRef:num_threads"], ["--option takes BACKEND:KEY=VALUE"]),
    (["--option", ":num_threads=1"], ["--option takes BACKEND:KEY=VALUE"]),
    (["--option", "CpuRef:=1"], ["--option takes BACKEND:KEY=VALUE"]),
    (["--option", "NoSuchBackend:num_threads=1"], ["--option NoSuchBackend:", "no backend 'NoSuchBackend'",
                                                   "available: " + ", ".join(BUILT_IN)]),
    (["--option", "CpuRef:colour=blue"], ["--option CpuRef:colour=blue", "backend 'CpuRef'", "colour"]),
])
def test_user_errors(files: Path, args: list[str], fragments: list[str]) -> None:
    args = [a.format(d=files) for a in args]
    assert_one_line_error(plugnn("run", *args), *fragments)


@pytest.mark.parametrize("args", [["--iterations", "0"], ["--iterations", "x"], ["--compare", "tflite"],
                                  ["--seed", "one"], ["a.onnx", "b.onnx"], ["--no-such-option"]])
def test_argument_errors_exit_2(args: list[str]) -> None:
    result = plugnn("run", *args)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines()[-1].startswith(("plugnn run: error:", "plugnn: error:"))
    assert "Traceback" not in result.stderr


# ---- ONNX models ------------------------------------------------------------------------------------------------


def test_profile_breaks_a_fused_chain_down() -> None:
    """A CNN's blocked chain (CpuAcc on AVX-512) is not one row: its original layers are rows
    under it (pn_workload.read_profile), each once, their times adding up to at most the chain's."""
    if not any(t.startswith("Precompiled(blocked NCHW16c chain") for t in DEFAULT_TYPES):
        pytest.skip("no blocked chain on this machine (CpuAcc without AVX-512, or not the default backend)")
    data = run_json("--iterations", "2", "--profile")
    (chain,) = [p for p in data["profile"] if p.get("nodes")]
    replaced = next(a for a in data["placement"]["layers"] if a["layer"] == chain["layer"])["replaces"]
    names = [n["layer"] for n in chain["nodes"]]
    assert len(names) == len(set(names)) and set(names) <= set(replaced) and len(names) > 4
    assert all(n["median_ms"] >= 0 for n in chain["nodes"])
    assert sum(n["share"] for n in chain["nodes"]) <= chain["share"] + 1e-9
    text = plugnn("run", "--iterations", "2", "--profile").stdout
    lines = text[text.index("Profile (median"):].splitlines()
    at = next(i for i, line in enumerate(lines) if line.split()[:2] == [chain["layer"], DEFAULT_BACKEND])
    nested = [line.split()[0] for line in lines[at + 1:at + 1 + len(names)]]
    assert nested == names
    assert lines[at + 1 + len(names)].strip().startswith("(rest of the fused layer)")


@pytest.fixture(scope="module")
def small_onnx(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("onnx")
    from plugnn import synthetic_models

    return Path(synthetic_models.save(synthetic_models.small_cnn(1), tmp_path_factory.mktemp("m") / "small.onnx"))


def test_onnx_model_compared_with_onnxruntime(small_onnx: Path, tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    data = run_json(str(small_onnx), "--compare", "onnxruntime", "--output-dir", str(tmp_path), "--iterations", "2")
    assert data["model"] == str(small_onnx) and data["placement"]["groups"][0]["count"] == DEFAULT_LAYERS
    compare = data["compare"]
    assert compare["agree"] is True and compare["provider"] == "CPUExecutionProvider"
    (result,) = compare["outputs"]
    assert result["name"] == "probabilities" and result["ok"] and result["max_abs_diff"] < 1e-5
    # the same network and weights as the demo, so the same numbers
    image = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    np.testing.assert_array_equal(np.load(tmp_path / "probabilities.npy"), demo_reference(image))
    text = plugnn("run", str(small_onnx), "--compare", "onnxruntime", "--iterations", "1").stdout
    assert "Compared with onnxruntime" in text and "outputs agree" in text
    assert text.splitlines()[-1].split()[0] == "probabilities" and text.rstrip().endswith("ok")
    section = text[text.index("Compared with onnxruntime"):].splitlines()
    assert section[3].split() == ["output", "max", "abs", "diff", "max", "rel", "diff", "max|onnxruntime|", "verdict"]
    assert all(len(line) <= 100 for line in section if "model:" not in line)


def test_demo_compared_with_onnxruntime() -> None:
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    data = run_json("--compare", "onnxruntime", "--iterations", "1")
    assert data["compare"]["agree"] and "small_cnn" in data["compare"]["model"]
    assert data["compare"]["outputs"][0]["max_rel_diff"] < 1e-5


def test_onnx_model_errors(files: Path, tmp_path: Path) -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    assert_one_line_error(plugnn("run", str(files / "not_a_model.onnx")), "not_a_model.onnx")
    graph = helper.make_graph([helper.make_node("NonZero", ["x"], ["nz"], name="nz"),
                               helper.make_node("Transpose", ["nz"], ["y"], name="t")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "nonzero.onnx")
    assert_one_line_error(plugnn("run", str(tmp_path / "nonzero.onnx"), "--graph", str(tmp_path / "g.dot")),
                          "--graph draws one network; this model runs on plugnn's dynamic path")


def test_a_model_for_the_dynamic_path_runs(tmp_path: Path) -> None:
    """A NonZero feeding further nodes (what a detection head has): the model runs on the dynamic
    path as segments, with the placement of each, the profile and the comparison."""
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["r"], name="relu"),
                               helper.make_node("NonZero", ["r"], ["nz"], name="nz"),
                               helper.make_node("Transpose", ["nz"], ["y"], name="t")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 5])],
                              [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = str(tmp_path / "nonzero.onnx")
    onnx.save(model, path)
    x = np.array([[1, -2, 0, 3, 4], [0, 5, -1, 0, 2], [7, 0, 0, -3, 1]], np.float32)
    np.save(tmp_path / "x.npy", x)
    data = run_json(path, "--input", f"x={tmp_path / 'x.npy'}", "--compare", "onnxruntime", "--iterations", "2",
                    "--profile", "--output-dir", str(tmp_path))
    assert data["compare"]["agree"] is True
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), np.transpose(np.nonzero(np.maximum(x, 0))))
    assert data["notes"][-1].startswith("runs on plugnn's dynamic path (control flow or shapes the data decides) as "
                                        "2 segments")
    groups = data["placement"]["groups"]
    assert sum(g["count"] for g in groups) == 3 and groups[0]["first"] == 1 and groups[-1]["last"] == 3
    assert {g["backend"] for g in groups} == {DEFAULT_BACKEND}
    assert [row["layer"] for row in data["profile"]] == ["relu", "nz", "t"]
    text = plugnn("run", path, "--dim", "N=4", "--iterations", "1", "--details").stdout
    assert "Placement (3 layers run, in execution order):" in text and "nodes #0..#1" in text


def test_onnx_dynamic_input_takes_the_file_shape(tmp_path: Path) -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = str(tmp_path / "dynamic.onnx")
    onnx.save(model, path)
    x = np.arange(-7, 8, dtype=np.float32).reshape(5, 3)
    np.save(tmp_path / "x.npy", x)
    data = run_json(path, "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", str(tmp_path), "--iterations", "1")
    assert data["inputs"][0]["shape"] == [5, 3]
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), np.maximum(x, 0))
    assert run_json(path, "--input-shape", "x=4,3", "--iterations", "1")["outputs"][0]["shape"] == [4, 3]
    data = run_json(path, "--iterations", "1")  # the symbol N set to 1, and the report says so
    assert data["inputs"][0]["shape"] == [1, 3] and data["outputs"][0]["shape"] == [1, 3]
    assert data["notes"] == ["set to 1: N (a symbolic dimension with no --dim; choose one with --dim SYMBOL=N or "
                             "--input-shape NAME=D,D,...)"]
    assert run_json(path, "--dim", "N=6", "--iterations", "1")["outputs"][0]["shape"] == [6, 3]
    assert_one_line_error(plugnn("run", path, "--dim", "M=6"), "--dim names 'M', which no input of the model has")
    assert_one_line_error(plugnn("run", path, "--dim", "N=0"), "must be positive")
    assert_one_line_error(plugnn("run", path, "--input-shape", "y=4,3"), "does not take")
    assert_one_line_error(plugnn("run", path, "--input-shape", "x=4,a"), "must be integers")


# ---- placement across several backends (in-process, with a Python backend) -------------------------------------


@pytest.fixture
def relu_backend(no_static_backends: None) -> None:
    """A Python backend "PyRelu" that runs relu activations only, registered for this test."""
    from plugnn import Backend, BackendRegistry, SupportResult, Workload, WorkloadFactory
    from plugnn.descriptors import LayerKind

    class ReluWorkload(Workload):
        def execute(self, inputs, outputs, workspace=None):  # type: ignore[no-untyped-def]
            np.maximum(inputs[0], 0, out=outputs[0])

    class Factory(WorkloadFactory):
        def create_workload(self, layer):  # type: ignore[no-untyped-def]
            return ReluWorkload()

    class PyRelu(Backend):
        def is_layer_supported(self, layer):  # type: ignore[no-untyped-def]
            ok = layer.kind is LayerKind.ACTIVATION and layer.descriptor.kind.name == "RELU"
            return SupportResult(ok, "" if ok else f"PyRelu runs relu only, not {layer.kind.name}")

        def create_workload_factory(self, memory_manager=None):  # type: ignore[no-untyped-def]
            return Factory()

    BackendRegistry.register("PyRelu", PyRelu)


def test_groups_and_fallbacks_across_backends(relu_backend: None, capsys: pytest.CaptureFixture[str]) -> None:
    from plugnn.cli import main

    assert main(["run", "-c", "PyRelu,CpuRef", "--iterations", "1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["backends"]["used"] == ["CpuRef", "PyRelu"]
    groups = [(g["backend"], g["count"]) for g in data["placement"]["groups"]]
    assert groups[:4] == [("CpuRef", 1), ("PyRelu", 1), ("CpuRef", 2), ("PyRelu", 1)]
    assert sum(count for _, count in groups) == DEMO_LAYERS
    refused = {f["reason"]: f for f in data["placement"]["fallbacks"]}
    conv = refused["PyRelu runs relu only, not CONVOLUTION_2D"]
    assert conv["refused_by"] == "PyRelu" and conv["ran_on"] == "CpuRef" and conv["types"] == {"Convolution2d": 6}
    # the same numbers as CpuRef alone
    assert main(["run", "-c", "CpuRef", "--iterations", "1", "--json"]) == 0
    alone = json.loads(capsys.readouterr().out)
    assert alone["outputs"][0]["first"] == pytest.approx(data["outputs"][0]["first"], rel=1e-6)
    assert main(["run", "-c", "PyRelu,CpuRef", "--iterations", "1"]) == 0
    text = capsys.readouterr().out
    # 13 runs alternate between the two backends: grouped per backend, one screen at any size
    assert "  CpuRef   13 layers in 7 runs: #1, #3-4, #6-7, #9, #11, #13-14, ... (1 more)" in text
    assert "  PyRelu   6 layers in 6 runs: #2, #5, #8, #10, #12, #15\n           types: Activation x6" in text
    assert "  fallback: PyRelu refused 6 layers (Convolution2d x6) -> CpuRef\n" \
           "    why: PyRelu runs relu only, not CONVOLUTION_2D (e.g. stem)" in text
    assert max(len(line) for line in text.splitlines()[2:]) <= 100
    # by default the built-in backends come first, so the first of them runs everything
    assert main(["run", "--iterations", "1", "--json"]) == 0
    default = json.loads(capsys.readouterr().out)
    assert default["backends"]["preferred"] == [*BUILT_IN, "PyRelu"]
    assert default["backends"]["used"] == [DEFAULT_BACKEND]


def test_details_and_graph(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--details adds every layer's record; --graph FILE.dot writes the drawing (needs nothing),
    another suffix that is not a rendering format is a one-line error."""
    from plugnn.cli import main

    graph = tmp_path / "demo.dot"
    assert main(["run", "-c", "CpuRef", "--iterations", "1", "--details", "--graph", str(graph)]) == 0
    text = capsys.readouterr().out
    assert f"  graph: {graph}" in text
    assert "Details (every layer, every backend's answer):\n  network 'plugnn_demo' on preferred backends" in text
    assert "    preference: CpuRef: yes (supported)" in text
    drawing = graph.read_text()
    assert drawing.startswith('digraph "plugnn_demo" {') and 'label="stem\\nConvolution2d' in drawing
    assert main(["run", "-c", "CpuRef", "--iterations", "1", "--graph", str(tmp_path / "demo.txt")]) == 2
    assert "plugnn: error: --graph: " in capsys.readouterr().err


def test_a_transformer_runs_on_random_token_inputs(tmp_path: Path) -> None:
    """The zoo's BERT-like model takes int64 token ids, token type ids (an embedding of two rows)
    and an attention mask: random integer inputs are 0 or 1, valid for all three."""
    onnx = pytest.importorskip("onnx")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from zoo import weights

    path = tmp_path / "bert_tiny.onnx"
    onnx.save(weights.materialize(Path(__file__).resolve().parents[1] / "zoo" / "models" / "bert_tiny.onnx", 0), path)
    data = run_json(str(path), "--dim", "sequence=8", "--iterations", "1")  # batch: 1, as the notes say
    assert data["notes"][0].startswith("set to 1: batch ") and {tuple(i["shape"]) for i in data["inputs"]} == {(1, 8)}
    assert {i["name"]: (i["dtype"], i["source"]) for i in data["inputs"]} == {
        name: ("int64", "random (seed 0)") for name in ("input_ids", "attention_mask", "token_type_ids")}
    assert [o["name"] for o in data["outputs"]] == ["last_hidden_state", "pooler_output"]
