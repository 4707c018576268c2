"""Instances re-sized in place (LoadedNetwork.resize): a binding never seen before takes the last
instance if it ran only once (a stream of new shapes keeps one instance), else, past the eight
instances a network keeps, the least recently used one no run holds. Only the layers whose
shapes differ between the two bindings get new workloads; the arena stays while the changed
tensors fit it and grows by doubling when they do not; a failure leaves every other instance
running. Results are compared with onnxruntime."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import plugnn
from plugnn import BackendError, BackendRegistry, Runtime
from plugnn.backend import Backend, MemoryManager, Workload, WorkloadFactory
from plugnn.descriptors import LayerKind
from plugnn.layers import LayerSpec, SupportResult
from plugnn.loaded_symbolic import DEFAULT_INSTANCES
from plugnn.memory_plan import ALIGNMENT

RNG = np.random.default_rng(5)
SCALE = RNG.standard_normal(4).astype(np.float32)


def two_branches() -> Any:
    """a [N, 4] -> Relu -> Mul(scale) -> Softmax -> ya; b [M, 4] -> Sigmoid -> Add(scale) -> yb:
    a binding that changes M only changes the second branch's layers."""
    nodes = [
        helper.make_node("Relu", ["a"], ["ra"], name="relu"),
        helper.make_node("Mul", ["ra", "scale"], ["ma"], name="mul"),
        helper.make_node("Softmax", ["ma"], ["ya"], name="softmax", axis=-1),
        helper.make_node("Sigmoid", ["b"], ["sb"], name="sigmoid"),
        helper.make_node("Add", ["sb", "scale"], ["yb"], name="add"),
    ]
    graph = helper.make_graph(
        nodes, "two_branches",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["N", 4]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, ["M", 4])],
        [helper.make_tensor_value_info("ya", TensorProto.FLOAT, ["N", 4]),
         helper.make_tensor_value_info("yb", TensorProto.FLOAT, ["M", 4])],
        [numpy_helper.from_array(SCALE, "scale")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


MODEL = two_branches()
REFERENCE = ort.InferenceSession(MODEL.SerializeToString())


def feed(n: int, m: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed + 100 * n + m)
    return {"a": rng.standard_normal((n, 4)).astype(np.float32), "b": rng.standard_normal((m, 4)).astype(np.float32)}


def check(session: plugnn.InferenceSession, n: int, m: int) -> None:
    inputs = feed(n, m)
    for ours, theirs in zip(session.run(None, inputs), REFERENCE.run(None, inputs), strict=True):
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)


def fill(session: plugnn.InferenceSession, n: int = 2) -> None:
    """As many instances as the network keeps: M = 1..8 at N = n, each run twice (a binding run
    once is re-sized into the next new one)."""
    for m in range(1, DEFAULT_INSTANCES + 1):
        check(session, n, m)
        check(session, n, m)


@pytest.mark.parametrize("backend", ["CpuRef", "CpuAcc"])
def test_past_the_instances_kept_the_oldest_is_re_sized_and_only_changed_layers_are_touched(
        picky_runtime: Runtime, backend: str) -> None:
    """The sigmoid on a Python backend (its workload does not take shapes at execute): no steady
    re-size, so each shape run twice keeps an instance of its own."""
    with plugnn.InferenceSession(MODEL, runtime=picky_runtime, backends=["PickySigmoid", backend]) as session:
        fill(session)
        oldest = session.loaded_for({"a": (2, 4), "b": (1, 4)})
        assert oldest is not None
        check(session, 2, 20)  # M changes: the sigmoid is re-sized, the add re-bound, the first branch stays
        built, = session.networks()
        assert built["instances_made"] == DEFAULT_INSTANCES and built["instances_resized"] == 1
        assert session.loaded_for({"a": (2, 4), "b": (1, 4)}) is None  # gone: it became the new one
        assert session.loaded_for({"a": (2, 4), "b": (20, 4)}) is oldest
        assert sorted(oldest.kept_layers) == ["mul", "relu", "softmax"]
        assert oldest.reshaped_layers == ["sigmoid"] and oldest.rebound_layers == ["add"]  # add takes M at execute
        assert len(built["instances"]) == DEFAULT_INSTANCES
        for n, m in ((3, 20), (2, 20), (7, 1), (2, 5), (1, 1), (2, 20)):  # every kind of change, back and forth
            check(session, n, m)
        assert session.networks_built == 1


@pytest.mark.parametrize("backend", ["CpuRef", "CpuAcc"])
def test_workloads_that_take_shapes_at_execute_are_kept_and_bound_at_the_new_shapes(backend: str) -> None:
    """ABI 1.3: CpuRef's and CpuAcc's workloads take their tensors' shapes at execute, so a resize
    makes no workload: the changed layers keep theirs (the very objects), their tensors are bound
    at the new shapes, within the arena as planned and when it is planned again."""
    with plugnn.InferenceSession(MODEL, backends=[backend]) as session:
        check(session, 2, 1)
        one_instance(session)
        loaded = session.loaded_for({"a": (2, 4), "b": (1, 4)})
        assert loaded is not None
        workloads = list(loaded._workloads)  # noqa: SLF001 - the workload objects, to see they stay
        plans = {id(loaded.memory_plan)}
        for m in (2, 3, 40, 7, 81, 1, 300):  # within the room and past it (planned again)
            check(session, 2, m)
            assert session.loaded_for({"a": (2, 4), "b": (m, 4)}) is loaded
            assert sorted(loaded.rebound_layers) == ["add", "sigmoid"]
            assert loaded.reshaped_layers == [] and loaded.refused_layers == []
            assert [a is b for a, b in zip(loaded._workloads, workloads)] == [True] * len(workloads)  # noqa: SLF001
            plans.add(id(loaded.memory_plan))
        check(session, 5, 300)  # the other branch: its layers are bound again too
        assert sorted(loaded.rebound_layers) == ["mul", "relu", "softmax"]
        assert len(plans) > 1 and session.networks_built == 1


def one_instance(session: plugnn.InferenceSession) -> Any:
    """The session's network for every shape, keeping one instance (so each new binding re-sizes it)."""
    network = session._cache.builds()[0].network  # noqa: SLF001 - the symbolic network the session built
    network.capacity = 1
    return network


def test_the_arena_stays_while_changed_tensors_fit_and_doubles_when_they_do_not() -> None:
    with plugnn.InferenceSession(MODEL, backends=["CpuRef"]) as session:
        check(session, 2, 1)
        one_instance(session)
        loaded = session.loaded_for({"a": (2, 4), "b": (1, 4)})
        assert loaded is not None
        key = next(n for n in loaded.optimized.layers if n.name == "sigmoid").outputs[0]
        check(session, 2, 40)  # grows past the plan made at M = 1: planned again, with room for twice it
        assert session.loaded_for({"a": (2, 4), "b": (40, 4)}) is loaded
        assert loaded._block_bytes[key] == 2 * 40 * 4 * 4  # noqa: SLF001 - the room kept for the grown tensor (64-aligned)
        plan, arena = loaded.memory_plan, loaded._arena  # noqa: SLF001
        for m in (30, 79, 80, 3):  # within the room: the same plan, the same arena
            check(session, 2, m)
            assert session.loaded_for({"a": (2, 4), "b": (m, 4)}) is loaded
            assert loaded.memory_plan is plan and loaded._arena is arena  # noqa: SLF001
        check(session, 2, 81)
        assert loaded.memory_plan is not plan and loaded._block_bytes[key] == -(-2 * 81 * 16 // ALIGNMENT) * ALIGNMENT  # noqa: SLF001
        check(session, 5, 81)  # the other branch changes: its tensors grow, the second branch's stay
        assert session.networks_built == 1 and session.networks()[0]["instances_resized"] == 7


def test_a_decoder_like_growth_keeps_one_instance_planned_again_a_logarithmic_number_of_times() -> None:
    plans = []
    with plugnn.InferenceSession(MODEL, backends=["CpuAcc"]) as session:
        for m in range(1, 161):
            check(session, 1, m)
            loaded = session.loaded_for({"a": (1, 4), "b": (m, 4)})
            assert loaded is not None
            if not plans or plans[-1] is not loaded.memory_plan:
                plans.append(loaded.memory_plan)
        built, = session.networks()
        assert built["instances_made"] == 1 and built["instances_resized"] == 159
    # planned again when M passes twice what the arena was planned for: M = 2, 3, 5, 9, ..., 129
    assert len(plans) <= 10


def test_threads_at_many_shapes_never_share_an_instance_being_re_sized() -> None:
    shapes = [(n, m) for n in (1, 3) for m in range(1, 15)]
    expected = {s: REFERENCE.run(None, feed(*s)) for s in shapes}
    errors: list[BaseException] = []
    with plugnn.InferenceSession(MODEL, backends=["CpuAcc"]) as session:
        def work(offset: int) -> None:
            try:
                for i in range(60):
                    s = shapes[(i * 7 + offset) % len(shapes)]
                    for ours, theirs in zip(session.run(None, feed(*s)), expected[s]):
                        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)
            except BaseException as exc:  # noqa: BLE001 - reported by the main thread
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        built, = session.networks()
        assert built["instances_resized"] > 0 and len(built["instances"]) <= DEFAULT_INSTANCES


# -- failures ------------------------------------------------------------------------------------


class PickySigmoidWorkload(Workload):
    def __init__(self, layer: LayerSpec) -> None:
        self.rows = layer.inputs[0].shape[0]

    def reshape(self, layer: LayerSpec) -> Workload | None:
        return PickySigmoid.create(layer)

    def execute(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any = None) -> None:
        outputs[0][...] = 1.0 / (1.0 + np.exp(-inputs[0].astype(np.float64)))


class PickyFactory(WorkloadFactory):
    def create_workload(self, layer: LayerSpec) -> Workload:
        return PickySigmoid.create(layer)


class PickySigmoid(Backend):
    """Runs Sigmoid, but not on 13 rows (create and reshape both refuse)."""

    @staticmethod
    def create(layer: LayerSpec) -> Workload:
        if layer.inputs[0].shape[0] == 13:
            raise BackendError("PickySigmoid", f"create_workload(layer {layer.name!r})", "13 rows are refused")
        return PickySigmoidWorkload(layer)

    def is_layer_supported(self, layer: LayerSpec) -> SupportResult:
        if layer.kind is not LayerKind.ACTIVATION or layer.descriptor.kind.name != "SIGMOID":  # type: ignore[union-attr]
            return SupportResult(False, "PickySigmoid runs Sigmoid only")
        return SupportResult(True)

    def create_workload_factory(self, memory_manager: MemoryManager | None = None) -> WorkloadFactory:
        return PickyFactory()


@pytest.fixture
def picky_runtime(no_static_backends: None) -> Iterator[Runtime]:
    BackendRegistry.register("PickySigmoid", PickySigmoid)
    with Runtime() as runtime:
        yield runtime


def test_a_resize_a_backend_refuses_costs_only_that_instance(picky_runtime: Runtime) -> None:
    with plugnn.InferenceSession(MODEL, runtime=picky_runtime, backends=["PickySigmoid", "CpuRef"]) as session:
        fill(session)
        assert session.networks_built == 1
        victim = session.loaded_for({"a": (2, 4), "b": (1, 4)})
        assert victim is not None
        # The instance re-sized to 13 rows is refused; so is the network then built at those shapes:
        # the run fails naming the backend and the layer.
        with pytest.raises(BackendError, match=r"backend 'PickySigmoid': create_workload\(layer 'sigmoid'\) failed: "
                                               r"13 rows are refused"):
            session.run(None, feed(2, 13))
        assert not victim.loaded  # the victim was unloaded with the failure
        for m in range(2, DEFAULT_INSTANCES + 1):  # the other instances are untouched
            assert session.loaded_for({"a": (2, 4), "b": (m, 4)}) is not None
            check(session, 2, m)
        check(session, 2, 30)  # the table has room again: a new instance
        check(session, 2, 31)  # full: the oldest is re-sized
        symbolic = next(b for b in session.networks() if b["symbols"])
        assert symbolic["instances_resized"] == 1 and len(symbolic["instances"]) == DEFAULT_INSTANCES


def test_a_failed_resize_leaves_the_network_at_its_old_shapes(picky_runtime: Runtime) -> None:
    with plugnn.InferenceSession(MODEL, runtime=picky_runtime, backends=["PickySigmoid", "CpuRef"]) as session:
        check(session, 2, 3)
        build = session._cache.builds()[0]  # noqa: SLF001 - the symbolic network, to call resize directly
        network = build.network
        instance = network.instances()[0]
        values = network.program.evaluate({"N": 2, "M": 13})
        concrete, _, remake = network._concrete(values)  # noqa: SLF001
        changed = network.program.changed_layers(instance.values, values)
        loaded = instance.loaded
        before = (loaded.optimized, loaded.memory_plan, list(loaded._workloads))  # noqa: SLF001
        with pytest.raises(BackendError, match="13 rows are refused"):
            loaded.resize(concrete, changed, remake)
        assert (loaded.optimized, loaded.memory_plan, list(loaded._workloads)) == before  # noqa: SLF001
        inputs = feed(2, 3)
        for ours, theirs in zip(loaded.run(inputs).values(), REFERENCE.run(None, inputs)):
            np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)


def test_a_resize_whose_arena_is_over_the_limit_is_refused_and_the_session_goes_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with plugnn.InferenceSession(MODEL, backends=["CpuRef"]) as session:
        check(session, 2, 1)
        network = one_instance(session)
        loaded = session.loaded_for({"a": (2, 4), "b": (1, 4)})
        monkeypatch.setenv("PLUGNN_MAX_TENSOR_BYTES", "4096")
        with pytest.raises(plugnn.PlugnnError, match="PLUGNN_MAX_TENSOR_BYTES"):
            session.run(None, feed(2, 1000))  # 16,000 bytes of sigmoid output, twice that planned
        assert loaded is not None and not loaded.loaded  # the instance it was re-sized from went with it
        monkeypatch.delenv("PLUGNN_MAX_TENSOR_BYTES")
        check(session, 2, 1000)
        check(session, 2, 1)
        assert network.loaded


def concat_model() -> Any:
    """a [N, 4] -> Relu -> Concat(., c [2, 4], axis 0) -> Sigmoid -> y [N + 2, 4], and a Slice of
    the relu's rows 1.. -> Tanh -> z: in the arena the relu writes into the concatenation (a view
    whose bytes move with N) and the slice reads in place."""
    nodes = [helper.make_node("Relu", ["a"], ["r"], name="relu"),
             helper.make_node("Concat", ["r", "c"], ["cat"], name="concat", axis=0),
             helper.make_node("Sigmoid", ["cat"], ["y"], name="sigmoid"),
             helper.make_node("Slice", ["cat", "starts", "ends", "axes"], ["part"], name="slice"),
             helper.make_node("Tanh", ["part"], ["z"], name="tanh")]
    inits = [numpy_helper.from_array(RNG.standard_normal((2, 4)).astype(np.float32), "c"),
             numpy_helper.from_array(np.array([1], np.int64), "starts"),
             numpy_helper.from_array(np.array([2 ** 62], np.int64), "ends"),
             numpy_helper.from_array(np.array([0], np.int64), "axes")]
    graph = helper.make_graph(nodes, "concat_views", [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["N", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("z", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("backend", ["CpuRef", "CpuAcc"])
def test_movement_views_that_move_with_the_shapes_are_placed_again(backend: str) -> None:
    model = concat_model()
    reference = ort.InferenceSession(model.SerializeToString())
    rng = np.random.default_rng(8)
    with plugnn.InferenceSession(model, backends=[backend]) as session:
        for n in [1, 2, 3, 4, 5, 6, 7, 8, 12, 9, 30, 2, 64, 63, 1]:
            a = rng.standard_normal((n, 4)).astype(np.float32)
            for ours, theirs in zip(session.run(None, {"a": a}), reference.run(None, {"a": a}), strict=True):
                np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)
        built, = session.networks()
        # new shapes re-size the one instance; 2 comes back: an instance of its own, then re-sized
        # into 64 and 63; when 1 comes back, the last 15 runs held 12 shapes (more than the table
        # keeps: a cycle it cannot hold), so it re-sizes the last instance too
        assert built["instances_made"] == 2 and built["instances_resized"] == 13 and session.networks_built == 1


def test_shapes_that_come_back_in_a_cycle_longer_than_the_table_re_size_one_instance() -> None:
    """A second generation of decode steps (the same 20 lengths again) would give each length an
    instance of its own that the next ones evict before it is used: while the recent runs hold more
    shapes than the table keeps, a new binding re-sizes the last instance instead. A few shapes
    that alternate re-size the one instance too, each time, as a steady re-size (new dims written
    into the bound tensors: plugnn.steady_resize) costs about what a lookup does."""
    with plugnn.InferenceSession(MODEL, backends=["CpuRef"]) as session:
        for _ in range(3):
            for m in range(1, 21):
                check(session, 2, m)
        built, = session.networks()
        assert built["instances_made"] == 1 and built["instances_resized"] == 59
    with plugnn.InferenceSession(MODEL, backends=["CpuRef"]) as session:
        for _ in range(6):
            for m in (3, 5, 9):
                check(session, 2, m)
        built, = session.networks()
        assert built["instances_made"] == 1 and built["instances_resized"] == 17
        assert len(built["instances"]) == 1
