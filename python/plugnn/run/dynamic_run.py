"""A model that needs plugnn's dynamic path (control flow, shapes decided by the data: a detection
head's NonZero and NMS feeding further nodes), run by `plugnn run` as a plugnn.dynamic.DynamicModel:
`input_infos` and `run` as time_runs and make_inputs use a loaded network, and the placement of
every segment it loaded, in execution order, in the report's form."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from plugnn.dynamic import DynamicModel
from plugnn.run.errors import RunError
from plugnn.run.placement import placement
from plugnn.tensor import DataType, TensorInfo


class DynamicRun:
    """The model at `path` (its proto read) on the dynamic path, its inputs at `shapes`."""

    def __init__(self, proto: Any, path: str, runtime: Any, backends: Sequence[str] | None,
                 shapes: Mapping[str, tuple[int, ...]]) -> None:
        from plugnn.onnx.context import np_dtype

        self.model = DynamicModel(proto, path, runtime, backends)
        declared = {v.name: v for v in proto.graph.input}
        self.input_infos: dict[str, TensorInfo] = {}
        for name in self.model.input_names:
            tensor_type = declared[name].type.tensor_type
            if not declared[name].type.HasField("tensor_type"):
                raise RunError(f"input {name!r} is a sequence or an optional: plugnn run feeds tensors only "
                               f"(plugnn.InferenceSession takes lists and None)")
            dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor_type.shape.dim]
            shape = shapes.get(name) or tuple(dims)
            if any(d is None for d in shape):
                raise RunError(f"input {name!r} has dynamic dimensions: fix them with --input-shape or --dim")
            self.input_infos[name] = TensorInfo(tuple(int(d) for d in shape),
                                                DataType.from_any(np_dtype(tensor_type.elem_type)))
        self.last_profile: list[dict[str, Any]] = []

    def run(self, inputs: Mapping[str, np.ndarray], profile: bool = False) -> dict[str, np.ndarray]:
        records: list[Any] | None = [] if profile else None
        values = self.model.run(dict(inputs), profile=records)
        if records is not None:
            self.last_profile = [record for _, run in records for record in run]
        outputs = {}
        for name, value in zip(self.model.output_names, values):
            if not isinstance(value, np.ndarray):
                raise RunError(f"output {name!r} is a {'sequence' if isinstance(value, list) else 'empty optional'}: "
                               f"plugnn run reports tensor outputs only (plugnn.InferenceSession returns it)")
            outputs[name] = value
        return outputs

    def segments(self) -> list[Any]:
        """The segments loaded so far, in the order the program runs them (sub-programs after)."""
        found: list[Any] = []
        pending = [self.model.program]
        while pending:
            program = pending.pop(0)
            found += [instance for _, instance in program.instances() if instance.optimized is not None]
            pending += list(program.subprograms.values())
        return found

    def placement(self) -> dict[str, Any]:
        """Every loaded segment's placement (run.placement) merged: groups numbered on, fallbacks
        with the same cause joined."""
        merged: dict[str, Any] = {"groups": [], "fallbacks": [], "fused": [], "removed": [], "layers": []}
        fallbacks: dict[tuple[str, str, str], dict[str, Any]] = {}
        removed: dict[str, dict[str, Any]] = {}
        offset = 0
        for instance in self.segments():
            part = placement(instance.optimized, instance.imported.network)
            for group in part["groups"]:
                merged["groups"].append({**group, "first": group["first"] + offset, "last": group["last"] + offset})
            offset += sum(g["count"] for g in part["groups"])
            for entry in part["fallbacks"]:
                key = (entry["refused_by"], entry["ran_on"], entry["reason"])
                _join(fallbacks.setdefault(key, {**entry, "layers": [], "types": {}}), entry)
            for entry in part["removed"]:
                _join(removed.setdefault(entry["why"], {**entry, "layers": [], "types": {}}), entry)
            merged["fused"] += part["fused"]
            merged["layers"] += part["layers"]
        merged["fallbacks"], merged["removed"] = list(fallbacks.values()), list(removed.values())
        return merged

    def close(self) -> None:
        self.model.close()


def _join(into: dict[str, Any], entry: dict[str, Any]) -> None:
    into["layers"] += entry["layers"]
    for kind, count in entry["types"].items():
        into["types"][kind] = into["types"].get(kind, 0) + count
