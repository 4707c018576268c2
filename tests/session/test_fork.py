"""Sessions across fork(): a child forked while other threads of the parent run a session keeps
using that session (plugnn.fork_safety gives it new locks; CpuAcc's thread pool restarts its
workers in the child, plugins/accel/src/thread_pool.c), and multiprocessing's fork and
forkserver start methods run sessions. Results must be bit-identical to the parent's.

Every child is waited for with a deadline far above what the work needs (a hang fails the
test instead of hanging the suite; nothing is timed)."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from typing import Any

import numpy as np
import pytest

import plugnn

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="fork(): POSIX only")

FORKS = 20
HANG_DEADLINE_S = 120.0  # per child; the work takes milliseconds
BACKENDS = {"CpuAcc": {"CpuAcc": {"num_threads": "2"}}, "CpuRef": None}


def conv_model() -> bytes:
    """Conv 3x3 (4 -> 16 channels, 24x24) + Relu + MatMul: CpuAcc splits each over its pool."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(34)
    w = numpy_helper.from_array(rng.standard_normal((16, 4, 3, 3)).astype(np.float32), "w")
    m = numpy_helper.from_array(rng.standard_normal((24, 24)).astype(np.float32), "m")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("MatMul", ["r", "m"], ["y"], name="matmul")]
    graph = helper.make_graph(nodes, "forked", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 24, 24])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 24, 24])], [w, m])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def feeds(seed: int) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(seed).standard_normal((1, 4, 24, 24)).astype(np.float32)}


def wait_or_kill(pid: int, deadline_s: float) -> int | None:
    """The child's exit status, or None when it was still running at the deadline (killed)."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.005)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


def child_runs(session: Any, expected: dict[int, np.ndarray], threads: int, pool_workers: int) -> int:
    """In the child: run the parent's session on `threads` threads; 0 when every result is
    bit-identical to the parent's, 3 when one differs, 4 on an exception, 6 when the process
    has fewer than `pool_workers` threads besides its own after the runs (CpuAcc's pool did not
    start its workers again)."""
    failures: list[str] = []

    def work(seed: int) -> None:
        try:
            for _ in range(2):
                got = session.run(None, feeds(seed))[0]
                if got.tobytes() != expected[seed].tobytes():
                    failures.append("differs")
        except BaseException as exc:  # noqa: BLE001 - reported through the exit status
            failures.append(repr(exc))

    workers = [threading.Thread(target=work, args=(seed,)) for seed in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if any(f != "differs" for f in failures):
        return 4
    if failures:
        return 3
    tasks = len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else 1 + pool_workers
    return 6 if tasks - 1 < pool_workers else 0


def dynamic_model() -> bytes:
    """Conv, then NonZero of its positive part (a data-dependent shape: plugnn.dynamic's program,
    with its engine lock, runs it in segments), then Cast."""
    from onnx import TensorProto, helper

    proto = __import__("onnx").load_from_string(conv_model())
    proto.graph.node.extend([helper.make_node("Greater", ["y", "zero"], ["pos"], name="positive"),
                             helper.make_node("NonZero", ["pos"], ["where"], name="nonzero"),
                             helper.make_node("Cast", ["where"], ["z"], to=TensorProto.FLOAT, name="cast")])
    proto.graph.initializer.append(__import__("onnx").numpy_helper.from_array(np.zeros((), np.float32), "zero"))
    del proto.graph.output[:]
    proto.graph.output.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, None))
    return proto.SerializeToString()


@pytest.mark.parametrize("backend, model", [("CpuAcc", "static"), ("CpuRef", "static"), ("CpuAcc", "dynamic")])
def test_fork_while_two_threads_run_the_session(backend: str, model: str) -> None:
    raw = conv_model() if model == "static" else dynamic_model()
    session = plugnn.InferenceSession(raw, backends=[backend, "CpuRef"] if model == "dynamic" else [backend],
                                      backend_options=BACKENDS[backend])
    assert (session._dynamic is not None) == (model == "dynamic")
    expected = {seed: session.run(None, feeds(seed))[0] for seed in range(2)}
    stop = threading.Event()
    errors: list[BaseException] = []

    def keep_running(seed: int) -> None:
        try:
            while not stop.is_set():
                got = session.run(None, feeds(seed))[0]
                assert got.tobytes() == expected[seed].tobytes()
        except BaseException as exc:  # noqa: BLE001 - checked below
            errors.append(exc)

    runners = [threading.Thread(target=keep_running, args=(seed,)) for seed in range(2)]
    for r in runners:
        r.start()
    statuses: list[int | None] = []
    try:
        for _ in range(FORKS):
            time.sleep(0.002)  # let the runners be inside run()
            pid = os.fork()
            if pid == 0:  # the child: only this thread exists
                code = 5
                try:
                    code = child_runs(session, expected, threads=2, pool_workers=1 if backend == "CpuAcc" else 0)
                finally:
                    os._exit(code)
            statuses.append(wait_or_kill(pid, HANG_DEADLINE_S))
    finally:
        stop.set()
        for r in runners:
            r.join()
    assert not errors, errors
    hangs = statuses.count(None)
    assert hangs == 0 and statuses == [0] * FORKS, f"{hangs} hangs; exit statuses {statuses}"
    # The parent goes on running after the forks.
    assert session.run(None, feeds(0))[0].tobytes() == expected[0].tobytes()


# multiprocessing: the functions below run in the child (module level, so forkserver can import them).

_PARENT: dict[str, Any] = {}


def _run_inherited(seed: int) -> bytes:
    return _PARENT["session"].run(None, feeds(seed))[0].tobytes()


def _run_own(model: bytes, backend: str, seed: int) -> bytes:
    session = plugnn.InferenceSession(model, backends=[backend], backend_options=BACKENDS[backend])
    return session.run(None, feeds(seed))[0].tobytes()


def _pool_map(method: str, fn: Any, args: list[tuple[Any, ...]]) -> list[bytes]:
    context = multiprocessing.get_context(method)
    with context.Pool(2) as pool:
        pending = pool.starmap_async(fn, args)
        return pending.get(timeout=HANG_DEADLINE_S * 2)  # a hang: multiprocessing.TimeoutError


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_multiprocessing_fork_pool_uses_the_parents_session(backend: str) -> None:
    session = plugnn.InferenceSession(conv_model(), backends=[backend], backend_options=BACKENDS[backend])
    expected = [session.run(None, feeds(seed))[0].tobytes() for seed in range(FORKS)]
    stop = threading.Event()

    def keep_running() -> None:  # a run in flight in the parent while the pool forks
        while not stop.is_set():
            session.run(None, feeds(0))

    runner = threading.Thread(target=keep_running)
    runner.start()
    _PARENT["session"] = session
    try:
        got = _pool_map("fork", _run_inherited, [(seed,) for seed in range(FORKS)])
    finally:
        stop.set()
        runner.join()
        _PARENT.clear()
    assert got == expected


@pytest.mark.skipif(sys.platform != "linux", reason="forkserver: Linux")
def test_multiprocessing_forkserver_pool_makes_sessions() -> None:
    model = conv_model()
    backend = "CpuAcc"
    session = plugnn.InferenceSession(model, backends=[backend], backend_options=BACKENDS[backend])
    expected = [session.run(None, feeds(seed))[0].tobytes() for seed in range(FORKS)]
    got = _pool_map("forkserver", _run_own, [(model, backend, seed) for seed in range(FORKS)])
    assert got == expected
