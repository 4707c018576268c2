"""Steady re-sizes (plugnn.steady_resize): once a re-size that changed some shape values kept every
workload, step and place in the arena, the next re-sizes that change the same values only write
new dims into the bound tensors. Checked: results equal onnxruntime's over a decode-like stream
(the arena grows by doubling, the rest is steady), the network reads as the new shapes'
afterwards (infos, explain), bad input after a steady re-size is refused and leaves it usable, a
change of another symbol takes the full re-size and the steady one resumes, inputs copied for a
backend plugnn does not ship, and threads."""

from __future__ import annotations

import math
import os
import shutil
import threading
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import plugnn
from plugnn import InputError, Runtime
from plugnn.loader import BUNDLED_DIR

SCALE = np.random.default_rng(11).standard_normal(4).astype(np.float32)


def cache_model() -> Any:
    """past [B, P, 4] and x [B, 1, 4] -> present = Concat(past, x) (axis 1); y = ReduceMean over
    the cache of Relu(present * scale) + x: what a decode step's KV cache does to the shapes."""
    nodes = [
        helper.make_node("Concat", ["past", "x"], ["present"], name="concat", axis=1),
        helper.make_node("Mul", ["present", "scale"], ["scaled"], name="mul"),
        helper.make_node("Relu", ["scaled"], ["relu"], name="relu"),
        helper.make_node("ReduceMean", ["relu", "axes"], ["mean"], name="mean", keepdims=1),
        helper.make_node("Add", ["mean", "x"], ["y"], name="add"),
    ]
    graph = helper.make_graph(
        nodes, "cache",
        [helper.make_tensor_value_info("past", TensorProto.FLOAT, ["B", "P", 4]),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 1, 4])],
        [helper.make_tensor_value_info("present", TensorProto.FLOAT, ["B", "P1", 4]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", 1, 4])],
        [numpy_helper.from_array(SCALE, "scale"), numpy_helper.from_array(np.array([1], np.int64), "axes")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


MODEL = cache_model()
REFERENCE = ort.InferenceSession(MODEL.SerializeToString())
BACKENDS = ["CpuRef", "CpuAcc"]


def feed(batch: int, past: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed + 1000 * batch + past)
    return {"past": rng.standard_normal((batch, past, 4)).astype(np.float32),
            "x": rng.standard_normal((batch, 1, 4)).astype(np.float32)}


def check(session: plugnn.InferenceSession, batch: int, past: int, seed: int = 0) -> None:
    inputs = feed(batch, past, seed)
    for ours, theirs in zip(session.run(None, inputs), REFERENCE.run(None, inputs), strict=True):
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_growing_cache_is_re_sized_steadily_between_the_arenas_doublings(backend: str) -> None:
    steps = 64
    with plugnn.InferenceSession(MODEL, backends=[backend]) as session:
        for past in range(1, steps + 1):
            check(session, 1, past)
        built, = session.networks()
    assert built["instances_made"] == 1 and built["instances_resized"] == steps - 1
    full = built["instances_resized"] - built["steady_resizes"]
    # a full re-size when the cache outgrows the room planned for it (twice its size each time),
    # and the one after it (which records the steady re-size): about 2 log2(steps)
    assert built["steady_resizes"] > 0 and full <= 2 * math.ceil(math.log2(steps)) + 2, built


@pytest.mark.parametrize("backend", BACKENDS)
def test_after_steady_re_sizes_the_network_reads_as_the_new_shapes(backend: str) -> None:
    with plugnn.InferenceSession(MODEL, backends=[backend]) as session:
        for past in (3, 4, 5, 6):
            check(session, 2, past)
        assert session.networks()[0]["steady_resizes"] >= 1
        loaded = session.loaded_for({"past": (2, 6, 4), "x": (2, 1, 4)})
        assert loaded is not None
        assert loaded.input_infos["past"].shape == (2, 6, 4)
        assert loaded.output_infos["present"].shape == (2, 7, 4)
        graph = loaded.optimized.graph
        assert graph.infos[graph.outputs["present"]].shape == (2, 7, 4)
        assert "concat" in loaded.optimized.explain()
        check(session, 2, 7)  # and it re-sizes on from there


@pytest.mark.parametrize("backend", BACKENDS)
def test_bad_input_after_a_steady_re_size_is_refused_and_the_network_stays_usable(backend: str) -> None:
    with plugnn.InferenceSession(MODEL, backends=[backend]) as session:
        for past in (3, 4, 5):
            check(session, 1, past)
        steady = session.networks()[0]["steady_resizes"]
        inputs = feed(1, 6)
        with pytest.raises(InputError, match="'x'"):
            session.run(None, {**inputs, "x": inputs["x"].astype(np.float64)})
        with pytest.raises(InputError, match="past"):
            session.run(None, {**inputs, "past": inputs["past"][:, :, :3].copy()})
        check(session, 1, 6)
        check(session, 1, 7)
        assert session.networks()[0]["steady_resizes"] > steady


@pytest.mark.parametrize("backend", BACKENDS)
def test_another_symbol_takes_the_full_re_size_and_the_steady_one_resumes(backend: str) -> None:
    with plugnn.InferenceSession(MODEL, backends=[backend]) as session:
        for past in (2, 3, 4, 5):
            check(session, 1, past)
        before = session.networks()[0]
        check(session, 3, 5)  # the batch changes: other values, no steady re-size recorded for them
        after = session.networks()[0]
        assert after["instances_resized"] + after["instances_made"] > before["instances_resized"] + \
            before["instances_made"]
        for past in (6, 7, 8, 9, 10):
            check(session, 3, past)
        final = session.networks()[0]
        assert final["steady_resizes"] > after["steady_resizes"]
        check(session, 1, 2)  # back to where it started
        assert session.networks_built == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_threads_running_changing_shapes_get_their_own_results(backend: str) -> None:
    errors: list[BaseException] = []
    with plugnn.InferenceSession(MODEL, backends=[backend]) as session:
        def work(seed: int) -> None:
            rng = np.random.default_rng(seed)
            try:
                for _ in range(40):
                    check(session, int(rng.integers(1, 3)), int(rng.integers(1, 30)), seed)
            except BaseException as exc:  # noqa: BLE001 - reported by the main thread
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(seed,)) for seed in (1, 2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert not errors, errors[0]


def test_inputs_copied_for_a_backend_plugnn_does_not_ship_follow_the_steady_re_sizes(tmp_path: Path) -> None:
    """CpuRef loaded from another directory is not one plugnn ships: its graph inputs are copied
    into buffers of the network's own (loaded.py); a steady re-size makes them at the new shapes."""
    shutil.copy(os.path.join(BUNDLED_DIR, "Plugnn_CpuRef_backend.so"), tmp_path)
    with Runtime(dynamic_backends_path=tmp_path) as runtime, \
            plugnn.InferenceSession(MODEL, runtime=runtime, backends=["CpuRef"]) as session:
        for past in range(1, 20):
            check(session, 1, past)
        loaded = session.loaded_for({"past": (1, 19, 4), "x": (1, 1, 4)})
        assert loaded is not None and loaded._staging  # noqa: SLF001 - the inputs are staged
        assert session.networks()[0]["steady_resizes"] > 0
