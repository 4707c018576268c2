"""The model zoo (tests/zoo, docs/zoo.md) as benchmark rows: one row per model, at its full input
size (224x224 images, sequence 128, 16000 audio samples; batch 1), with the weights filled from
seed 0 and the inputs the manifest describes (token ids, masks, images).

Each row's model is the zoo graph with its graph inputs fixed to that size, so onnxruntime,
OpenVINO and plugnn all see the same static shapes. --quick runs a few small models at the
zoo's CI size (64x64 images, sequence 32), which keeps CI to seconds.
"""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from cases import Case

TESTS = Path(__file__).resolve().parents[2] / "tests"

# The rows --quick runs (at the CI size): a CNN, a recurrent net, an audio net and an MLP.
QUICK = ("resnet18", "rnn_tanh", "audio_m5", "mlp_layernorm")


@cache
def _weights() -> Any:
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))
    from zoo import weights

    return weights


def _shape_kind(quick: bool) -> str:
    return "ci" if quick else "full"


def static_model(entry: dict[str, Any], shape_kind: str) -> Any:
    """The zoo model filled from seed 0 with its graph inputs fixed to `shape_kind`'s sizes."""
    weights = _weights()
    model = weights.materialize(weights.model_path(entry), seed=0)
    shapes = weights.input_shapes(entry, shape_kind, 1)
    for graph_input in model.graph.input:
        if graph_input.name not in shapes:
            continue
        dims = graph_input.type.tensor_type.shape.dim
        for dim, size in zip(dims, shapes[graph_input.name]):
            dim.Clear()
            dim.dim_value = int(size)
    del model.graph.value_info[:]
    return model


def _case(entry: dict[str, Any]) -> Case:
    weights = _weights()

    def build(quick: bool) -> Any:
        return static_model(entry, _shape_kind(quick))

    def feeds(quick: bool) -> dict[str, np.ndarray]:
        return weights.make_inputs(entry, _shape_kind(quick), 1, seed=0)

    def describe(quick: bool) -> str:
        shapes = weights.input_shapes(entry, _shape_kind(quick), 1)
        text = ", ".join(f"{name} {'x'.join(map(str, shape))}" for name, shape in shapes.items())
        return f"zoo {entry['name']} ({entry['family']}, opset {entry['opset']}): {text}"

    return Case(f"zoo {entry['name']}", "zoo", "flops", build, describe, slow_on_cpuref=True, feeds=feeds,
                in_quick=entry["name"] in QUICK)


def zoo_cases() -> list[Case]:
    """A row per zoo model, in the manifest's order."""
    return [_case(entry) for entry in _weights().load_manifest()["models"]]
