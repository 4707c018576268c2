"""Run-time shapes: one specialization per new combination of input shapes, cached (LRU),
logged, sharing the model's constants, with matching layers' workloads re-sized; results are
compared with onnxruntime."""

from __future__ import annotations

import logging
import threading
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest

import plugnn
from session import models

MODEL = models.cnn()
REFERENCE = ort.InferenceSession(MODEL.SerializeToString())


def check(session: plugnn.InferenceSession, image: np.ndarray) -> None:
    ours = session.run(None, {"image": image})
    theirs = REFERENCE.run(None, {"image": image})
    for a, b in zip(ours, theirs, strict=True):
        assert a.shape == b.shape
        assert np.abs(a - b).max() <= 1e-4 * max(np.abs(b).max(), 1.0)


def images(*shapes: tuple[int, ...]) -> list[np.ndarray]:
    rng = np.random.default_rng(11)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def test_a_new_shape_costs_one_specialization_and_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="plugnn"), \
            plugnn.InferenceSession(MODEL, backends=["CpuRef"]) as session:
        assert session.specializations_made == 0  # symbolic dims: nothing is imported yet
        for image in images((1, 3, 8, 8), (4, 3, 8, 8), (1, 3, 8, 8), (4, 3, 8, 8), (2, 3, 12, 12), (4, 3, 8, 8)):
            check(session, image)
        assert session.specializations_made == 3
        lines = [r.getMessage() for r in caplog.records if "specialized" in r.getMessage()]
        assert len(lines) == 3
        assert lines[1].startswith("session 'tiny_cnn': specialized for image=[4, 3, 8, 8] in ")
        assert "ms (import " in lines[1] and "6 of 6 layers re-sized from an earlier specialization" in lines[1]
        made = session.specializations()
        assert [m["shapes"]["image"] for m in made] == [(1, 3, 8, 8), (2, 3, 12, 12), (4, 3, 8, 8)]  # LRU order
        assert all(m["milliseconds"] > 0 and set(m["stages_ms"]) == {"import", "optimize", "load"} for m in made)


def test_the_cache_is_bounded_least_recently_used_first() -> None:
    with plugnn.InferenceSession(MODEL, backends=["CpuRef"], max_specializations=2) as session:
        a, b, c = images((1, 3, 8, 8), (2, 3, 8, 8), (3, 3, 8, 8))
        for image in (a, b, a, c):  # c evicts b (a was used after b)
            check(session, image)
        assert [s["shapes"]["image"] for s in session.specializations()] == [(1, 3, 8, 8), (3, 3, 8, 8)]
        loaded = session.runtime.loaded_networks
        assert len(loaded) == 2  # the evicted one was unloaded
        check(session, b)
        assert session.specializations_made == 4
        assert len(session.runtime.loaded_networks) == 2


def test_specializations_share_the_models_constants() -> None:
    """Initializers are read once and referenced (not copied) by every specialization; the
    batch-norm weights the optimizer folds into the convolution are made by each optimization and
    replaced by the first specialization's equal array."""
    with plugnn.InferenceSession(MODEL, backends=["CpuRef"]) as session:
        for image in images((1, 3, 8, 8), (5, 3, 8, 8), (2, 3, 6, 6)):
            check(session, image)
        graphs = [session.specialization({"image": s["shapes"]["image"]}).optimized.graph  # type: ignore[union-attr]
                  for s in session.specializations()]
        initializers = session._model.initializers  # noqa: SLF001 - what the session read, once
        assert not any(a.flags.writeable for a in initializers.values())
        fc_weights = [g.constants[next(k for k in g.constants if k.startswith("fc_w"))] for g in graphs]
        assert all(w is initializers["fc_w"] for w in fc_weights)
        folded = [g.constants["conv/folded_weights"] for g in graphs]
        assert folded[0] is folded[1] is folded[2]
        assert all(not np.shares_memory(f, initializers["w"]) for f in folded)  # folded: a new array, once


def test_every_layer_is_re_sized_on_cpuref_and_results_stay_right() -> None:
    with plugnn.InferenceSession(MODEL, backends=["CpuRef"]) as session:
        for image in images((1, 3, 8, 8), (3, 3, 8, 8), (3, 3, 10, 10)):
            check(session, image)
        made = session.specializations()
        assert made[0]["reshaped_layers"] == 0
        assert made[1]["reshaped_layers"] == made[1]["layers"] == 6
        spec = session.specialization({"image": (3, 3, 8, 8)})
        assert spec is not None and spec.loaded.reshaped_layers == [n.name for n in spec.optimized.layers]
        # At another image size the global pooling's window (its descriptor) changes: a new workload.
        spec = session.specialization({"image": (3, 3, 10, 10)})
        assert spec is not None and "gap" not in spec.loaded.reshaped_layers and made[2]["reshaped_layers"] == 5


def test_runs_of_several_threads_with_evictions_in_flight() -> None:
    """Four threads, three shapes, a cache of one: specializations are evicted while other
    threads run them (unloaded when those runs end); every result is still right."""
    shapes = [(1, 3, 8, 8), (2, 3, 8, 8), (3, 3, 8, 8)]
    feeds = images(*shapes)
    expected = [REFERENCE.run(None, {"image": f}) for f in feeds]
    errors: list[Any] = []
    with plugnn.InferenceSession(MODEL, backends=["CpuRef"], max_specializations=1) as session:
        def work(offset: int) -> None:
            try:
                for i in range(12):
                    k = (i + offset) % 3
                    got = session.run(None, {"image": feeds[k]})
                    for a, b in zip(got, expected[k]):
                        assert np.abs(a - b).max() <= 1e-4 * max(np.abs(b).max(), 1.0)
            except BaseException as exc:  # noqa: BLE001 - reported by the main thread
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert len(session.specializations()) == 1
        assert len(session.runtime.loaded_networks) == 1


def test_a_static_model_is_specialized_at_construction() -> None:
    static = models.cnn(image=8)
    for value_info in static.graph.input:
        value_info.type.tensor_type.shape.dim[0].dim_value = 2
    for value_info in static.graph.output:
        value_info.type.tensor_type.shape.dim[0].dim_value = 2
    with plugnn.InferenceSession(static, backends=["CpuRef"]) as session:
        assert session.specializations_made == 1
        assert session.get_inputs()[0].shape == [2, 3, 8, 8]
        with pytest.raises(plugnn.InputError, match="input 'image' dim 0 is 1, the model fixes it to 2"):
            session.run(None, {"image": np.zeros((1, 3, 8, 8), np.float32)})


def test_a_session_owns_its_runtime_or_borrows_one() -> None:
    session = plugnn.InferenceSession(MODEL, backends=["CpuRef"])
    assert session.owns_runtime
    runtime = session.runtime
    session.close()
    assert runtime.closed
    with plugnn.Runtime() as borrowed:
        session = plugnn.InferenceSession(MODEL, runtime=borrowed, backends=["CpuRef"])
        assert not session.owns_runtime and session.runtime is borrowed
        check(session, images((2, 3, 8, 8))[0])
        assert len(borrowed.loaded_networks) == 1
        session.close()
        assert not borrowed.closed and borrowed.loaded_networks == []
        with pytest.raises(plugnn.SessionError, match="backend_options apply to a runtime the session creates"):
            plugnn.InferenceSession(MODEL, runtime=borrowed, backend_options={"CpuRef": {}})


def test_a_session_cannot_borrow_a_closed_runtime() -> None:
    runtime = plugnn.Runtime()
    runtime.close()
    with pytest.raises(plugnn.errors.RuntimeClosedError, match="cannot create a session on .*: the runtime is closed"):
        plugnn.InferenceSession(MODEL, runtime=runtime, backends=["CpuRef"])


def test_backend_options_reach_the_runtime_the_session_creates() -> None:
    with plugnn.InferenceSession(MODEL, backend_options={"CpuAcc": {"num_threads": "1"}}) as session:
        assert session.runtime.backend("CpuAcc").get_option("num_threads") == "1"
        assert session.get_providers()[:2] == ["CpuAcc", "CpuRef"]
        check(session, images((2, 3, 8, 8))[0])
