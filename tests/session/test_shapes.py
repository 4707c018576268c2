"""Run-time shapes: one network for every shape (symbolic dims), an instance per binding with
the workloads re-sized, another network only for shapes that break a guard (bounded, LRU),
logged, sharing the model's constants; results are compared with onnxruntime."""

from __future__ import annotations

import logging
import threading
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest

from onnx import TensorProto, helper, numpy_helper

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


def test_one_network_runs_every_shape_and_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="plugnn"), \
            plugnn.InferenceSession(MODEL, backends=["CpuRef"]) as session:
        assert session.networks_built == 0  # symbolic dims: nothing is imported yet
        for image in images((1, 3, 8, 8), (4, 3, 8, 8), (1, 3, 8, 8), (4, 3, 8, 8), (2, 3, 12, 12), (4, 3, 8, 8)):
            check(session, image)
        # (4, 8) is new: the first instance, run once, is re-sized into it, and as only N changed
        # and every workload takes it at execute, that is recorded as a steady re-size; (1, 8)
        # and (4, 8) come back: the same instance re-sized steadily; (2, 12) changes the
        # pooling's window: the instance (run once) is re-sized in full; (4, 8) comes back from
        # there, which no steady re-size reaches: an instance of its own.
        assert session.networks_built == 1
        lines = [r.getMessage() for r in caplog.records if "built for" in r.getMessage()]
        assert len(lines) == 1
        assert lines[0].startswith("session 'tiny_cnn': built for every shape with symbols {'N': 1, 'size': 8} (0 guards)")
        assert "ms (import " in lines[0]
        built, = session.networks()
        assert built["built_at"] == {"image": (1, 3, 8, 8)} and built["symbols"] == {"N": 1, "size": 8}
        assert built["guards"] == [] and built["specialized"] == {}
        assert [i["binding"] for i in built["instances"]] == [{"N": 2, "size": 12}, {"N": 4, "size": 8}]  # least
        # recently used first
        assert all(i["arena_bytes"] > 0 for i in built["instances"])
        assert built["instances_made"] == 2 and built["instances_resized"] == 4 and built["steady_resizes"] == 2
        assert built["milliseconds"] > 0 and set(built["stages_ms"]) == {"import", "optimize", "load"}


def test_instances_are_bounded_least_recently_used_first() -> None:
    """Image sizes change the global pooling's window (its descriptor): no steady re-size, so a
    shape run twice keeps an instance of its own."""
    with plugnn.InferenceSession(MODEL, backends=["CpuRef"]) as session:
        shapes = [(1, 3, s, s) for s in range(6, 17)]
        for image in images(*shapes):
            check(session, image)
            check(session, image)  # run twice: kept (a shape run once is re-sized into the next new one)
        built, = session.networks()
        assert [i["binding"]["size"] for i in built["instances"]] == list(range(9, 17))  # the last 8
        assert len(session.runtime.loaded_networks) == 8  # no instance beyond them is loaded
        check(session, images((1, 3, 5, 5))[0])
        # Past eight, the least recently used instance is re-sized in place into the new one.
        built, = session.networks()
        assert session.networks_built == 1 and built["instances_made"] == 8 and built["instances_resized"] == 4
        assert [i["binding"]["size"] for i in built["instances"]] == list(range(10, 17)) + [5]


def test_a_stream_of_new_shapes_keeps_one_instance_re_sized_at_each() -> None:
    with plugnn.InferenceSession(MODEL, backends=["CpuRef"]) as session:
        for image in images(*[(n, 3, 8, 8) for n in range(1, 12)]):
            check(session, image)
        built, = session.networks()
        assert built["instances_made"] == 1 and built["instances_resized"] == 10
        assert [i["binding"]["N"] for i in built["instances"]] == [11]
        assert len(session.runtime.loaded_networks) == 1


def sliced_model() -> Any:
    """x [N, L] -> Slice(x, [0], [6], axes [1]) -> y [N, min(L, 6)]: a decision on L's size."""
    graph = helper.make_graph(
        [helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["y"], name="slice")], "sliced",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "L"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", None])],
        [numpy_helper.from_array(np.array([v], np.int64), n) for n, v in (("starts", 0), ("ends", 6), ("axes", 1))])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_shapes_that_break_a_guard_get_a_network_of_their_own_bounded_by_max_specializations() -> None:
    model = sliced_model()
    reference = ort.InferenceSession(model.SerializeToString())
    with plugnn.InferenceSession(model, backends=["CpuRef"], max_specializations=2) as session:
        rng = np.random.default_rng(3)

        def run(n: int, length: int) -> None:
            x = rng.standard_normal((n, length)).astype(np.float32)
            np.testing.assert_array_equal(session.run(None, {"x": x})[0], reference.run(None, {"x": x})[0])

        run(2, 9)  # built where L > 6: the output keeps 6
        run(3, 12)
        assert session.networks_built == 1
        guards = session.networks()[0]["guards"]
        assert "not (L - 6 < 0)" in guards and "not (L - 6 == 0)" in guards  # L > 6: the slice cuts L
        run(2, 4)  # L < 6 breaks it: a network of its own, where the output keeps L
        assert session.networks_built == 2
        run(1, 3)
        run(5, 7)
        assert session.networks_built == 2
        run(1, 6)  # L == 6 (the slice is the whole input) holds for neither: a third; the L < 6 one, least
        # recently used, is evicted
        assert session.networks_built == 3 and len(session.networks()) == 2
        assert [n["built_at"]["x"] for n in session.networks()] == [(2, 9), (1, 6)]


def test_networks_share_the_models_constants() -> None:
    """Initializers are read once and referenced (not copied) by every network a session
    builds; the batch-norm weights the optimizer folds into the convolution are made by each
    optimization and replaced by the first one's equal array; every instance of one network holds
    the network's own arrays."""
    model = models.cnn()
    with plugnn.InferenceSession(model, backends=["CpuRef"]) as session:
        for image in images((1, 3, 8, 8), (1, 3, 6, 6), (2, 3, 10, 10)):
            check(session, image)
            check(session, image)  # run twice: each keeps an instance of its own (other image sizes)
        graphs = [session.loaded_for({"image": s}).optimized.graph  # type: ignore[union-attr]
                  for s in ((1, 3, 8, 8), (1, 3, 6, 6), (2, 3, 10, 10))]
        initializers = session._model.initializers  # noqa: SLF001 - what the session read, once
        assert not any(a.flags.writeable for a in initializers.values())
        fc_weights = [g.constants[next(k for k in g.constants if k.startswith("fc_w"))] for g in graphs]
        assert all(w is initializers["fc_w"] for w in fc_weights)
        folded = [g.constants["conv/folded_weights"] for g in graphs]
        assert folded[0] is folded[1] is folded[2]
        assert all(not np.shares_memory(f, initializers["w"]) for f in folded)  # folded: a new array, once


def test_every_layer_is_re_sized_or_kept_on_cpuref_and_results_stay_right() -> None:
    with plugnn.InferenceSession(MODEL, backends=["CpuRef"]) as session:
        for image in images((1, 3, 8, 8), (1, 3, 10, 10), (1, 3, 12, 12)):
            check(session, image)
            check(session, image)  # run twice: each keeps an instance of its own, made from the last
        instances = session.networks()[0]["instances"]
        # At another image size the global pooling's window (its descriptor) changes: a new
        # workload; every other layer's is re-sized from the last instance's.
        assert [i["reshaped_layers"] for i in instances] == [0, 5, 5]
        loaded = session.loaded_for({"image": (1, 3, 12, 12)})
        assert loaded is not None and "gap" not in loaded.reshaped_layers and len(loaded.reshaped_layers) == 5
        # Another batch only: every workload takes it at execute, the last instance is re-sized in
        # place and keeps them all.
        check(session, images((3, 3, 12, 12))[0])
        assert session.loaded_for({"image": (3, 3, 12, 12)}) is loaded
        assert loaded.rebound_layers == [n.name for n in loaded.optimized.layers] and loaded.reshaped_layers == []


def test_runs_of_several_threads_with_instances_evicted_in_flight() -> None:
    """Four threads, twelve shapes, eight instances kept: instances are evicted while other
    threads run them (unloaded when those runs end); every result is still right."""
    shapes = [(n, 3, 8, 8) for n in range(1, 13)]
    feeds = images(*shapes)
    expected = [REFERENCE.run(None, {"image": f}) for f in feeds]
    errors: list[Any] = []
    with plugnn.InferenceSession(MODEL, backends=["CpuRef"], max_specializations=1) as session:
        def work(offset: int) -> None:
            try:
                for i in range(24):
                    k = (i * 5 + offset) % len(shapes)
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
        assert session.networks_built == 1
        assert len(session.runtime.loaded_networks) <= 8


def test_a_static_model_is_built_at_construction() -> None:
    static = models.cnn(image=8)
    for value_info in static.graph.input:
        value_info.type.tensor_type.shape.dim[0].dim_value = 2
    for value_info in static.graph.output:
        value_info.type.tensor_type.shape.dim[0].dim_value = 2
    with plugnn.InferenceSession(static, backends=["CpuRef"]) as session:
        assert session.networks_built == 1 and session.networks()[0]["symbols"] == {}
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


def test_backend_options_reach_the_runtime_the_session_creates() -> None:
    with plugnn.InferenceSession(MODEL, backend_options={"CpuAcc": {"num_threads": "1"}}) as session:
        assert session.runtime.backend("CpuAcc").get_option("num_threads") == "1"
        assert session.get_providers()[:2] == ["CpuAcc", "CpuRef"]
        check(session, images((2, 3, 8, 8))[0])
