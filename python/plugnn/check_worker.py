"""The child process of `plugnn check-backend`: loads the plugin under check (and CpuRef)
into itself and runs the checks that need it loaded, one step at a time.

    python -m plugnn.check_worker PLUGIN [--start N] [--layers KIND,...] [--option KEY=VALUE]...

Before each step it writes {"begin": N, "step": ...}, after it {"end": N, "check": ...,
"results": [[status, message], ...]} (status "pass", "fail" or "note"), one JSON object a line,
on the file descriptor that was stdout at start (the plugin's own prints go to stderr). A
step that kills or blocks this process is the parent's finding (plugnn.check), which starts
a new worker at the next step. {"stop": reason} ends the run early: what follows cannot run.
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from plugnn import sweep
from plugnn._abi import NULL, Message, covers, ffi, field_end, function
from plugnn.backend import NUM_THREADS, Backend
from plugnn.descriptors import ActivationDescriptor, LayerKind
from plugnn.errors import BackendError, BackendLoadError
from plugnn.layers import LayerSpec
from plugnn.loader import BACKEND_API_VERSION, BUNDLED_DIR, REQUIRED_FUNCTIONS, create_backend, load_shared_object
from plugnn.native import NativeBackend, SharedObject
from plugnn.tensor import TensorInfo

Result = tuple[str, str]  # (status, message)
CYCLES = 500  # create/destroy cycles per round of the growth check
ROUNDS = 3
GROWTH_PER_CYCLE = 16  # bytes: more than this per cycle in every round is a leak (a malloc chunk is >= 32
                       # bytes; the interpreter's own noise is a few kilobytes at once, in one round)
KNOWN_FLAGS = 0x3  # PN_BACKEND_HOST_MEMORY, PN_BACKEND_MOVES_IN_PLACE


class Stop(Exception):
    """The rest of the checks cannot run; the message says why."""


def _relu_layer() -> LayerSpec:
    info = TensorInfo((4, 4))
    return LayerSpec(LayerKind.ACTIVATION, "check_relu", ActivationDescriptor("relu"), (info,), (info,))


def _heap_in_use() -> int | None:
    """Bytes malloc has handed out: the sanitizer allocator's count when one is loaded (it
    replaces malloc), else glibc's mallinfo2; None where there is neither."""
    try:
        allocated = ctypes.CDLL(None).__sanitizer_get_current_allocated_bytes
    except (AttributeError, OSError):
        allocated = None
    if allocated is not None:
        allocated.restype = ctypes.c_size_t
        return int(allocated())

    class Mallinfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
            "keepcost")]

    try:
        mallinfo2 = ctypes.CDLL(None).mallinfo2
    except (AttributeError, OSError):
        return None
    mallinfo2.restype = Mallinfo2
    info = mallinfo2()
    return int(info.uordblks + info.hblkhd)


class Worker:
    def __init__(self, path: str, layers: list[LayerKind] | None, options: dict[str, str]) -> None:
        self.path = path
        self.kinds = layers if layers is not None else list(sweep.GENERATORS)
        self.options = options
        self._shared: SharedObject | None = None
        self._backend: NativeBackend | None = None
        self._oracle: Backend | None = None
        self._oracle_object: SharedObject | None = None
        self._cases: dict[LayerKind, list[sweep.Case]] = {}

    def cases(self, kind: LayerKind) -> list[sweep.Case]:
        if kind not in self._cases:
            self._cases[kind] = sweep.cases(kind)
        return self._cases[kind]

    # -- what the steps share ---------------------------------------------------------------

    @property
    def shared(self) -> SharedObject:
        if self._shared is None:
            try:
                self._shared = load_shared_object(self.path)
            except BackendLoadError as exc:
                raise Stop(exc.reason) from None
        return self._shared

    @property
    def backend(self) -> NativeBackend:
        if self._backend is None:
            try:
                self._backend = create_backend(self.shared)
            except BackendLoadError as exc:
                raise Stop(exc.reason) from None
        return self._backend

    @property
    def oracle(self) -> Backend:
        if self._oracle is None:
            ref = os.path.join(BUNDLED_DIR, "Plugnn_CpuRef_backend.so")
            self._oracle_object = load_shared_object(ref)
            self._oracle = create_backend(self._oracle_object)
        return self._oracle

    # -- the steps, in order -------------------------------------------------------------------

    def steps(self) -> list[tuple[str, str, Callable[[], list[Result]]]]:
        steps: list[tuple[str, str, Callable[[], list[Result]]]] = [
            ("entry points", "the entry points", self.entry_points),
            ("backend object", "BackendFactory and the backend object", self.backend_object),
            ("lifecycle", "two instances", self.two_instances),
            ("lifecycle", "create/destroy repeated", self.repeated),
            ("lifecycle", "options", self.options_round_trip),
            ("lifecycle", "context callbacks", self.context_callbacks),
            ("lifecycle", "memory manager", self.memory_manager),
        ]
        for kind in self.kinds:
            name = sweep.kind_name(kind)
            steps.append(("layers", f"{name} {self.cases(kind)[0].name} with a wrong output shape",
                          functools.partial(self.malformed, kind)))
            for index, case in enumerate(self.cases(kind)):
                steps.append(("layers", f"{name} {case.name}", functools.partial(self.layer, kind, index)))
        return steps

    def entry_points(self) -> list[Result]:
        shared = self.shared
        major, minor = shared.version
        return [("pass", f"GetBackendId {shared.backend_id!r}, GetVersion {major}.{minor} "
                         f"(this runtime: {BACKEND_API_VERSION[0]}.{BACKEND_API_VERSION[1]})")]

    def backend_object(self) -> list[Result]:
        c = self.shared.call_factory()
        if c == NULL:
            raise Stop("BackendFactory returned NULL")
        size, flags = int(c.struct_size), int(c.flags) if covers(c, "pn_backend", "flags") else 0
        full = ffi.sizeof("pn_backend")
        results: list[Result] = []
        missing = [name for name in REQUIRED_FUNCTIONS if function(c, "pn_backend", name) is None]
        if covers(c, "pn_backend", "destroy") and c.destroy != NULL:
            c.destroy(c)
        if missing:
            need = max(field_end("pn_backend", name) for name in REQUIRED_FUNCTIONS)
            raise Stop(f"pn_backend lacks the required function{'s' if len(missing) > 1 else ''} "
                       f"{', '.join(missing)} (struct_size {size}, needs at least {need})")
        if size > full:
            results.append(("fail", f"pn_backend.struct_size is {size}, larger than the {full} bytes of "
                                    f"pn_backend in API {BACKEND_API_VERSION[0]}.{BACKEND_API_VERSION[1]} "
                                    "(write sizeof(pn_backend), not the size of your own struct)"))
        if flags & ~KNOWN_FLAGS:
            results.append(("fail", f"pn_backend.flags has unknown bits 0x{flags & ~KNOWN_FLAGS:x}"))
        if not results:
            host = "host memory" if flags & 1 else "device memory (a memory manager with allocate and copies)"
            results.append(("pass", f"struct_size {size} of {full}, the required functions present, {host}"))
        backend = self.backend
        if not backend.host_memory and backend.create_memory_manager() is None:
            results.append(("fail", "not a host-memory backend, yet it has no memory manager to allocate with"))
        return results

    def _instance(self) -> Any:
        c = self.shared.call_factory()
        if c == NULL:
            raise Stop("BackendFactory returned NULL")
        return c

    def two_instances(self) -> list[Result]:
        relu = _relu_layer()
        # Each instance with its own handle on the library, as two runtimes have.
        first, second = self.backend, create_backend(load_shared_object(self.path))
        answers = [first.is_layer_supported(relu), second.is_layer_supported(relu)]
        if answers[0] != answers[1]:
            return [("fail", f"two instances answer is_layer_supported differently: {answers[0]} and {answers[1]}")]
        results: list[Result] = []
        listed = first.options() if first.has("list_options") else None
        if first.has("set_option") and first.has("get_option") and (listed is None or first.takes_option(NUM_THREADS)):
            try:
                before = second.get_option(NUM_THREADS)
                first.set_option(NUM_THREADS, "2" if before != "2" else "1")
                if second.get_option(NUM_THREADS) != before:
                    results.append(("fail", f"set_option({NUM_THREADS!r}) on one instance changed another's value"))
                first.set_option(NUM_THREADS, before)
            except BackendError:
                if listed is not None:
                    results.append(("fail", f"the listed option {NUM_THREADS!r} could not be read and set back"))
        ran = ""
        if answers[0].supported:
            x = np.linspace(-1, 1, 16, dtype=np.float32).reshape(4, 4)
            factory = second.create_workload_factory()
            workload = factory.create_workload(relu)
            factory.close()
            second.close()  # the other instance is gone: this one must still work
            y = np.full_like(x, np.nan)
            workload_second = first.create_workload_factory()
            work = workload_second.create_workload(relu)
            workload_second.close()
            work.execute([x], [y])
            work.close()
            workload.close()
            if not np.array_equal(y, np.maximum(x, 0)):
                results.append(("fail", "after another instance was destroyed, a RELU ran wrong"))
            ran = " (a RELU runs after the other is destroyed)"
        else:
            second.close()
        return results or [("pass", "two independent instances" + ran)]

    def repeated(self) -> list[Result]:
        from plugnn._marshal import to_c_layer

        relu = _relu_layer()
        keep: list[Any] = []
        c_relu = to_c_layer(relu, keep) if self.backend.is_layer_supported(relu).supported else None
        message = Message()

        def cycle() -> None:
            c = self._instance()
            made: list[Any] = []
            for name, ctype in (("create_context", "pn_backend_context*"),
                                ("create_memory_manager", "pn_memory_manager*")):
                fn = function(c, "pn_backend", name)
                if fn is not None:
                    out = ffi.new(f"{ctype}*")
                    if fn(c, out, message.out) == 0 and out[0] != NULL:
                        made.append(out[0])
            factory_out = ffi.new("pn_workload_factory**")
            if c.create_workload_factory(c, NULL, factory_out, message.out) == 0 and factory_out[0] != NULL:
                factory = factory_out[0]
                made.append(factory)
                if c_relu is not None:
                    workload_out = ffi.new("pn_workload**")
                    status = factory.create_workload(factory, c_relu, workload_out, message.out)
                    if status == 0 and workload_out[0] != NULL:
                        made.append(workload_out[0])
            for obj in reversed(made):
                obj.destroy(obj)
            c.destroy(c)

        what = " and a RELU workload" if c_relu is not None else ""
        for _ in range(20):
            cycle()
        start = _heap_in_use()
        if start is None:
            for _ in range(CYCLES):
                cycle()
            return [("note", f"{CYCLES} create/destroy cycles ran; memory growth not measured "
                             "(no mallinfo2 in this C library)")]
        rounds = []
        for _ in range(ROUNDS):
            before = _heap_in_use() or 0
            for _ in range(CYCLES):
                cycle()
            rounds.append(((_heap_in_use() or 0) - before) / CYCLES)
        if all(r > GROWTH_PER_CYCLE for r in rounds):
            return [("fail", f"memory grows by about {min(rounds):.0f} bytes per create/destroy cycle of the "
                             f"backend, its context, memory manager, workload factory{what} (in {ROUNDS} rounds of "
                             f"{CYCLES}): something is not freed")]
        return [("pass", f"{ROUNDS} x {CYCLES} create/destroy cycles without growth ({min(rounds):+.0f} bytes/cycle)")]

    def options_round_trip(self) -> list[Result]:
        backend = self.backend
        results: list[Result] = []
        listed = self.listed_options(results)
        if not backend.has("set_option"):
            if listed:
                results.append(("fail", f"list_options lists {len(listed)} options but there is no set_option"))
            return results or [("pass", "no options")]
        unknown = "plugnn_check_no_such_option"
        for call in ("set_option", "get_option"):
            if not backend.has(call):
                continue
            try:
                backend.set_option(unknown, "1") if call == "set_option" else backend.get_option(unknown)
                results.append(("fail", f"{call}({unknown!r}) succeeded; an unknown key must be PN_ERR_NOT_FOUND"))
            except BackendError as exc:
                if exc.status != "PN_ERR_NOT_FOUND":
                    results.append(("fail", f"{call}({unknown!r}) failed with {exc.status}, not PN_ERR_NOT_FOUND"))
        if not backend.has("get_option"):
            if listed:
                results.append(("fail", f"list_options lists {len(listed)} options but there is no get_option"))
            return results or [("pass", "unknown keys are PN_ERR_NOT_FOUND (no get_option: nothing to read back)")]
        checked = self.listed_defaults(listed or (), results)
        pairs = dict(self.options)
        if listed is None and NUM_THREADS not in pairs:  # no list: try the reserved key, as before 1.2
            try:
                pairs[NUM_THREADS] = backend.get_option(NUM_THREADS)
            except BackendError:
                pass
        for key, value in pairs.items():
            try:
                backend.set_option(key, value)
                back = backend.get_option(key)
            except BackendError as exc:
                results.append(("fail", f"option {key}={value!r}: {exc}"))
                continue
            if back != value:
                results.append(("fail", f"set_option({key!r}, {value!r}) then get_option gives {back!r}"))
            checked.append(key)
        keys = f"; {', '.join(checked)} round-trip" if checked else ""
        return results or [("pass", "options: unknown keys are PN_ERR_NOT_FOUND" + keys)]

    def listed_options(self, results: list[Result]) -> tuple[Any, ...] | None:
        """list_options' descriptions (None: the plugin has no list_options), after checking them:
        names unique and non-empty, a help line each, the reserved keys with their type."""
        if not self.backend.has("list_options"):
            return None
        try:
            listed = self.backend.options()
        except BackendError as exc:
            results.append(("fail", f"list_options: {exc}"))
            return ()
        names = [o.name for o in listed]
        if len(set(names)) != len(names) or "" in names:
            results.append(("fail", f"list_options names {names}: each must be unique and not empty"))
        for option in listed:
            if not option.help:
                results.append(("fail", f"option {option.name!r} has no help"))
            if option.name == NUM_THREADS and option.type != "int":
                results.append(("fail", f"the reserved option {NUM_THREADS!r} is listed as {option.type}, not int"))
        return listed

    def listed_defaults(self, listed: Sequence[Any], results: list[Result]) -> list[str]:
        """On a new instance of the backend: every listed option reads as its default; each one
        that can be set takes its default back; a read-only one refuses set_option with
        PN_ERR_INVALID_ARGUMENT. The keys that passed."""
        if not listed:
            return []
        fresh = create_backend(load_shared_object(self.path))
        passed = []
        try:
            for option in listed:
                try:
                    value = fresh.get_option(option.name)
                    if value != option.default:
                        results.append(("fail", f"option {option.name!r} reads {value!r} on a new backend, "
                                                f"its listed default is {option.default!r}"))
                        continue
                    if option.read_only:
                        try:
                            fresh.set_option(option.name, option.default)
                            results.append(("fail", f"set_option of the read-only option {option.name!r} succeeded"))
                        except BackendError as exc:
                            if exc.status != "PN_ERR_INVALID_ARGUMENT":
                                results.append(("fail", f"set_option of the read-only option {option.name!r} "
                                                        f"failed with {exc.status}, not PN_ERR_INVALID_ARGUMENT"))
                                continue
                    else:
                        fresh.set_option(option.name, option.default)
                        back = fresh.get_option(option.name)
                        if back != option.default:
                            results.append(("fail", f"option {option.name!r} set to its default "
                                                    f"{option.default!r} reads {back!r}"))
                            continue
                except BackendError as exc:
                    results.append(("fail", f"listed option {option.name!r}: {exc}"))
                    continue
                passed.append(option.name)
        finally:
            fresh.close()
        return passed

    def context_callbacks(self) -> list[Result]:
        context = self.backend.create_context()
        if context is None:
            return [("pass", "no backend context")]
        try:
            for network_id in (1, 2):
                context.before_load_network(network_id)
                context.after_load_network(network_id)
            for network_id in (2, 1):
                context.before_unload_network(network_id)
                context.after_unload_network(network_id)
        except BackendError as exc:
            return [("fail", str(exc))]
        finally:
            context.close()
        return [("pass", "context callbacks")]

    def memory_manager(self) -> list[Result]:
        manager = self.backend.create_memory_manager()
        if manager is None:
            return [("pass", "no memory manager")]
        try:
            manager.acquire()
            detail = "memory manager: acquire, release"
            if not self.backend.host_memory:
                info = TensorInfo((3, 5))
                x = np.arange(15, dtype=np.float32).reshape(3, 5)
                y = np.zeros_like(x)
                buffer = manager.allocate(info)
                manager.copy_from_host(buffer, x)
                manager.copy_to_host(y, buffer)
                manager.free(buffer)
                if not np.array_equal(x, y):
                    return [("fail", "copy_from_host then copy_to_host does not give the data back")]
                detail += ", allocate, copies both ways and free"
            manager.release()
        except BackendError as exc:
            return [("fail", str(exc))]
        finally:
            manager.close()
        return [("pass", detail)]

    # -- layers ----------------------------------------------------------------------------------------

    def malformed(self, kind: LayerKind) -> list[Result]:
        case = sweep.malformed(self.cases(kind)[0])
        try:
            answer = self.backend.is_layer_supported(case.spec)
        except BackendError as exc:
            return [("fail", f"is_layer_supported failed: {exc}")]
        if answer.supported:
            return [("fail", "accepted (every backend must refuse it; pn_validate_layer says why)")]
        factory = self.backend.create_workload_factory()
        try:
            factory.create_workload(case.spec).close()
            return [("fail", "refused, but create_workload made a workload for it")]
        except BackendError:
            return [("pass", f"{sweep.kind_name(kind)}: a malformed layer is refused")]
        finally:
            factory.close()

    def layer(self, kind: LayerKind, index: int) -> list[Result]:
        case = self.cases(kind)[index]
        spec = case.spec
        try:
            answer = self.backend.is_layer_supported(spec)
        except BackendError as exc:
            return [("fail", f"is_layer_supported failed: {exc}")]
        if not answer.supported:
            if not answer.reason.strip():
                return [("fail", "refused without a reason")]
            return [("refused", answer.reason)]
        if not self.backend.host_memory:
            return [("untested", "claimed, not run (the sweep hands host memory only)")]
        if not self.oracle.is_layer_supported(spec).supported:
            return [("untested", "claimed, but CpuRef does not run it: not compared")]
        try:
            actual = _run(self.backend, spec, case.inputs)
        except BackendError as exc:
            return [("fail", f"claimed, but {exc}")]
        expected = _run(self.oracle, spec, case.inputs)
        problems = []
        for i, (a, e) in enumerate(zip(actual, expected)):
            rtol, atol = sweep.tolerance(spec.outputs[i].dtype)
            difference = sweep.compare(a, e, rtol * case.rtol_scale, atol)
            if difference:
                which = f"output {i}: " if len(actual) > 1 else ""
                problems.append(("fail", f"{which}{difference}"))
        return problems or [("pass", "matches CpuRef")]


def _run(backend: Backend, spec: LayerSpec, inputs: tuple[np.ndarray, ...]) -> list[np.ndarray]:
    arrays = [np.array(x, dtype=info.dtype.numpy_dtype, order="C") for x, info in zip(inputs, spec.inputs)]
    outputs = [np.full(info.shape, np.nan, dtype=info.dtype.numpy_dtype) if info.dtype.is_float
               else np.zeros(info.shape, dtype=info.dtype.numpy_dtype) for info in spec.outputs]
    factory = backend.create_workload_factory()
    try:
        workload = factory.create_workload(spec)
    finally:
        factory.close()
    try:
        reported = workload.execute(arrays, outputs)
    finally:
        workload.close()
    if reported is not None:  # a data-dependent layer: the part it reports it wrote
        outputs = [out.reshape(-1)[:int(np.prod(shape, dtype=np.int64))].reshape(tuple(shape))
                   for out, shape in zip(outputs, reported)]
    return outputs


def _emit(stream: Any, message: dict[str, Any]) -> None:
    stream.write(json.dumps(message) + "\n")
    stream.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m plugnn.check_worker")
    parser.add_argument("plugin")
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--layers", default=None)
    parser.add_argument("--option", action="append", default=[])
    parser.add_argument("--list", action="store_true", help="print the steps and exit")
    args = parser.parse_args(argv)
    report = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # the plugin's prints go to stderr, not into the report
    kinds = sweep.parse_kinds(args.layers.split(",")) if args.layers else None
    options = dict(option.split("=", 1) for option in args.option)
    worker = Worker(args.plugin, kinds, options)
    steps = worker.steps()
    if args.list:
        for check, name, _ in steps:
            _emit(report, {"check": check, "step": name})
        return 0
    for index in range(args.start, len(steps)):
        check, name, run = steps[index]
        _emit(report, {"begin": index, "check": check, "step": name, "total": len(steps)})
        try:
            results = run()
        except Stop as exc:
            _emit(report, {"end": index, "check": check, "step": name, "results": [["fail", str(exc)]]})
            _emit(report, {"stop": str(exc)})
            break
        except Exception as exc:  # a failing call is a finding about this step, not the end
            results = [("fail", f"{type(exc).__name__}: {exc}")]
        _emit(report, {"end": index, "check": check, "step": name, "results": [list(r) for r in results]})
    _emit(report, {"finished": True})
    report.close()
    # Leave without destroying or unloading anything: destroy and dlclose were the probe's
    # and the lifecycle steps' to judge, and a crash there must not hide these results.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())

