"""The model zoo: every stored graph is small, fills deterministically from a seed, passes onnx.checker
once filled, runs on onnxruntime at its CI shape (batch 1 and 4) with finite outputs of the manifest's
shapes, and plugnn imports it and matches onnxruntime there, on the default backends (CpuAcc, CpuRef)
and on CpuRef alone, within the manifest's tolerance (max |diff| / max |onnxruntime| per output)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import plugnn  # noqa: E402
import plugnn.onnx  # noqa: E402
from zoo import weights  # noqa: E402

MANIFEST = weights.load_manifest()
ENTRIES = MANIFEST["models"]
# files are mostly node and value names once the weights are gone; swin_tiny (2341 nodes) is the
# largest at 427 KB, the others 2-170 KB
MAX_FILE_BYTES = 512 * 1024
MAX_TOTAL_BYTES = 5 * 1024 * 1024
# the families the zoo must cover (the list)
FAMILIES = {"torchvision-classification", "torchvision-segmentation", "detection-backbone", "transformers-encoder",
            "transformers-decoder", "unet", "yolo", "rnn", "audio", "mlp"}
# the batch-1 result against the first item of the batch-4 result: both onnxruntime, the same weights;
# only the summation order of batched kernels may differ
BATCH_CONSISTENCY = 1e-4


def test_manifest_covers_every_stored_graph_and_family() -> None:
    stored = sorted(p.name for p in (weights.ZOO_DIR / "models").glob("*.onnx"))
    listed = sorted(Path(e["file"]).name for e in ENTRIES)
    assert stored == listed
    assert len({e["name"] for e in ENTRIES}) == len(ENTRIES)
    assert FAMILIES <= {e["family"] for e in ENTRIES}
    assert {e["opset"] for e in ENTRIES} == {13, 17}


def test_the_zoo_stays_small() -> None:
    sizes = {e["name"]: weights.model_path(e).stat().st_size for e in ENTRIES}
    assert sum(sizes.values()) <= MAX_TOTAL_BYTES
    assert {n: s for n, s in sizes.items() if s > MAX_FILE_BYTES} == {}


class Zoo:
    """One model's stripped graph, its filling from seed 0 and an onnxruntime session (cached per model)."""

    def __init__(self, entry: dict[str, Any]) -> None:
        self.entry = entry
        self.path = weights.model_path(entry)
        self.stripped = onnx.load(str(self.path))
        self.filled = weights.materialize(self.path, seed=0)
        self.filled_bytes = self.filled.SerializeToString()
        self._session: Any = None
        self._outputs: dict[int, list[np.ndarray]] = {}

    def run_plugnn(self, runtime: Any, batch: int, backends: list[str]) -> list[np.ndarray]:
        network = plugnn.onnx.load(self.filled, input_shapes=weights.input_shapes(self.entry, "ci", batch))
        optimized = plugnn.optimize(network, runtime, backends)
        with runtime.load_network(optimized) as loaded:
            outputs = loaded.run(weights.make_inputs(self.entry, "ci", batch, seed=0))
        return [outputs[spec["name"]] for spec in self.entry["outputs"]]

    def run(self, batch: int) -> list[np.ndarray]:
        if batch not in self._outputs:
            if self._session is None:
                options = ort.SessionOptions()
                options.intra_op_num_threads = 2
                self._session = ort.InferenceSession(self.filled_bytes, options,
                                                     providers=["CPUExecutionProvider"])
            self._outputs[batch] = self._session.run(None, weights.make_inputs(self.entry, "ci", batch, seed=0))
        return self._outputs[batch]


@pytest.fixture(scope="module", params=ENTRIES, ids=[e["name"] for e in ENTRIES])
def zoo(request: pytest.FixtureRequest) -> Iterator[Zoo]:
    # module scope with one parameter per model: pytest runs each model's tests together and then
    # drops it, so at most one filled model (VGG-11's is 0.5 GB) is held at a time
    yield Zoo(request.param)


def test_stripped_graph_is_small_and_holds_no_weights(zoo: Zoo) -> None:
    size = zoo.path.stat().st_size
    assert size <= MAX_FILE_BYTES
    assert size == zoo.entry["file_bytes"]
    stripped = weights.stripped_tensors(zoo.stripped)
    assert len(stripped) == zoo.entry["strip"]["stripped_tensors"] > 0
    for tensor in stripped:
        assert not tensor.raw_data and not tensor.float_data
        mean, std = weights.stats_of(tensor)
        assert np.isfinite(mean) and np.isfinite(std) and std >= 0
    for tensor in zoo.stripped.graph.initializer:
        if not weights.is_stripped(tensor):
            assert not weights.should_strip(onnx.numpy_helper.to_array(tensor)), tensor.name


def test_graph_matches_its_manifest_entry(zoo: Zoo) -> None:
    entry, graph = zoo.entry, zoo.stripped.graph
    assert weights.operators(zoo.stripped) == entry["operators"]
    opsets = {o.domain: o.version for o in zoo.stripped.opset_import}
    assert opsets.get("", opsets.get("ai.onnx")) == entry["opset"]
    initializers = {t.name for t in graph.initializer}
    inputs = [i for i in graph.input if i.name not in initializers]
    assert [i.name for i in inputs] == [i["name"] for i in entry["inputs"]]
    for value, spec in zip(inputs, entry["inputs"]):
        tensor_type = value.type.tensor_type
        assert onnx.helper.tensor_dtype_to_np_dtype(tensor_type.elem_type) == np.dtype(spec["dtype"])
        dims = [d.dim_param if d.HasField("dim_param") else d.dim_value for d in tensor_type.shape.dim]
        assert dims == spec["dims"]
    assert [o.name for o in graph.output] == [o["name"] for o in entry["outputs"]]
    sizes = weights.bindings(entry, "ci", 1)
    for spec in entry["inputs"]:
        assert entry["input_shapes"]["ci"][spec["name"]] == weights.concrete(spec["dims"], sizes)


def test_materialize_is_deterministic_and_seeded(zoo: Zoo) -> None:
    again = weights.materialize(zoo.stripped, seed=0)
    first = {t.name: t.raw_data for t in weights.stripped_tensors(zoo.filled)}
    assert {t.name: t.raw_data for t in weights.stripped_tensors(again)} == first
    assert weights.stripped_tensors(zoo.stripped)[0].raw_data == b""  # the stripped proto was not modified
    # another seed, other values (checked on the five smallest random tensors, to keep VGG-11 quick)
    random = sorted((t for t in weights.stripped_tensors(zoo.stripped) if weights.stats_of(t)[1] > 0),
                    key=lambda t: (int(np.prod(t.dims)), t.name))
    assert random
    for tensor in random[:5]:
        assert weights.fill_values(tensor, seed=1).tobytes() != first[tensor.name], tensor.name
        assert weights.fill_values(tensor, seed=0).tobytes() == first[tensor.name], tensor.name


def test_filled_model_passes_the_checker(zoo: Zoo) -> None:
    onnx.checker.check_model(zoo.filled_bytes)


@pytest.mark.parametrize("batch", [1, 4])
def test_filled_model_runs_on_onnxruntime(zoo: Zoo, batch: int) -> None:
    outputs = zoo.run(batch)
    assert len(outputs) == len(zoo.entry["outputs"])
    for value, spec in zip(outputs, zoo.entry["outputs"]):
        expected = list(spec["shape"]["ci"])
        expected[spec["dims"].index("batch")] = batch
        assert list(value.shape) == expected, spec["name"]
        assert value.dtype == np.float32
        assert np.all(np.isfinite(value)), spec["name"]
        assert np.abs(value).max() > 0, f"{spec['name']}: all zeros"
    if batch > 1:  # the first batch item is the batch-1 input (make_inputs draws per item)
        for value, single, spec in zip(outputs, zoo.run(1), zoo.entry["outputs"]):
            first = np.take(value, [0], axis=spec["dims"].index("batch"))
            assert weights.relative_difference(first, single) <= BATCH_CONSISTENCY, spec["name"]


@pytest.fixture(scope="module")
def runtime() -> Iterator[plugnn.Runtime]:
    with plugnn.Runtime() as rt:
        yield rt


@pytest.mark.parametrize("batch", [1, 4])
@pytest.mark.parametrize("backends", ["default", "CpuRef"])
def test_plugnn_matches_onnxruntime(zoo: Zoo, runtime: plugnn.Runtime, batch: int, backends: str) -> None:
    chosen = runtime.preferred_backends if backends == "default" else ["CpuRef"]
    tolerance = zoo.entry["tolerance"]["CpuRef" if backends == "CpuRef" else "CpuAcc"]
    ours = zoo.run_plugnn(runtime, batch, chosen)
    for value, expected, spec in zip(ours, zoo.run(batch), zoo.entry["outputs"]):
        assert value.shape == expected.shape and value.dtype == expected.dtype, spec["name"]
        difference = weights.relative_difference(value, expected)
        assert difference <= tolerance, f"{spec['name']}: max |diff| / max |onnxruntime| = {difference:.3g}"
