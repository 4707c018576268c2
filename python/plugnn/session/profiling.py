"""A session's profile in onnxruntime's format: the Chrome-trace JSON `end_profiling()` writes.

With SessionOptions.enable_profiling a session records, as onnxruntime does, a "Session"
event for loading the model and one for initializing the session, and per run a "model_run"
event with one "Node" event per layer of the loaded network: name "<layer>_kernel_time", args
`op_name` (the layer's kind), `provider` (the backend that ran it), `node_index`, and for a
layer that fused several, `fused_nodes` (the layers it replaced). Times come
from plugnn's profiler (LoadedNetwork.run(profile=True), which calls the layers one by one);
`ts` and `dur` are microseconds from the start of profiling. A layer is what plugnn runs; a
fused layer whose backend times its parts (pn_workload.read_profile: CpuAcc's blocked chains)
is followed by one "Node" event per original node inside it, named "<node>_kernel_time" with
args `provider` (the backend), `node_index` (the fused layer's) and `fused_into` (the fused
layer's name), laid end to end from the fused layer's start in the order the backend ran
them, so they lie inside its event. On the dynamic path
(control flow, sequences) the layers are those of every segment the run ran (the runtime's
steps between segments have no event).

The file, `<profile_file_prefix>_<YYYY-MM-DD_HH-MM-SS>.json` in the working directory, is a
JSON array, one event a line (chrome://tracing, Perfetto, and onnxruntime's own tools read it).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from plugnn import fork_safety


class SessionProfiler:
    """The events of one session from `start()` to `end()`."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.enabled = False
        self.start_time_ns = 0  # time.time_ns() at start (get_profiling_start_time_ns)
        self._origin = 0  # time.perf_counter_ns() at start
        self._events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        fork_safety.fresh_locks_in_child(self, "_lock")
        self._pid = os.getpid()

    def start(self, origin_ns: int | None = None) -> None:
        """Start recording; `origin_ns` (time.perf_counter_ns()) is time 0, default now."""
        now = time.perf_counter_ns()
        origin = now if origin_ns is None else origin_ns
        self.enabled = True
        self.start_time_ns = time.time_ns() - (now - origin)
        self._origin = origin
        self._events = []

    def _event(self, category: str, name: str, start_ns: int, duration_ns: int, args: Mapping[str, Any]) -> dict[str, Any]:
        return {"cat": category, "pid": self._pid, "tid": threading.get_native_id(),
                "dur": max(0, duration_ns // 1000), "ts": max(0, (start_ns - self._origin) // 1000), "ph": "X",
                "name": name, "args": dict(args)}

    def session_event(self, name: str, start_ns: int, end_ns: int) -> None:
        """A "Session" event (model_loading_uri, session_initialization, model_run)."""
        if self.enabled:
            with self._lock:
                self._events.append(self._event("Session", name, start_ns, end_ns - start_ns, {}))

    def run_event(self, start_ns: int, end_ns: int, layers: Iterable[Mapping[str, Any]],
                  kinds: Mapping[str, tuple[str, tuple[str, ...]]],
                  node_types: Mapping[str, str] | None = None) -> None:
        """One run: its layers (LoadedNetwork.last_profile: layer, backend, seconds, start_ns,
        and a fused layer's `nodes`) as "Node" events, then the "model_run" event. `node_types`:
        the model's node name -> op type, the op_name of the nodes inside a fused layer (the
        fused layer's own kind for a name the model does not have)."""
        if not self.enabled:
            return
        events = []
        for index, layer in enumerate(layers):
            name = layer["layer"]
            kind, fused = kinds.get(name, ("", ()))
            args: dict[str, Any] = {"op_name": kind, "provider": layer["backend"], "node_index": str(index)}
            if len(fused) > 1:
                args["fused_nodes"] = list(fused)
            begin = int(layer.get("start_ns", start_ns))
            events.append(self._event("Node", f"{name}_kernel_time", begin, int(layer["seconds"] * 1e9), args))
            for node in layer.get("nodes") or ():
                duration = int(node["seconds"] * 1e9)
                node_kind = (node_types or {}).get(node["layer"]) or kind
                events.append(self._event("Node", f"{node['layer']}_kernel_time", begin, duration,
                                          {"op_name": node_kind, "provider": layer["backend"],
                                           "node_index": str(index), "fused_into": name}))
                begin += duration
        events.append(self._event("Session", "model_run", start_ns, end_ns - start_ns, {}))
        with self._lock:
            self._events.extend(events)

    def end(self) -> str:
        """Write the events and stop profiling: the file's name ("" when profiling was off)."""
        if not self.enabled:
            return ""
        self.enabled = False
        with self._lock:
            events, self._events = self._events, []
        stamp = datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
        path = f"{self.prefix}_{stamp}.json"
        count = 1
        while os.path.exists(path):  # two sessions ending in the same second
            path = f"{self.prefix}_{stamp}_{count}.json"
            count += 1
        with open(path, "w", encoding="utf-8") as out:
            out.write("[\n")
            out.write(",\n".join(json.dumps(e) for e in events))
            out.write("\n]\n")
        return path
