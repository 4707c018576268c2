"""end_profiling()'s trace breaks a fused layer down: inside the "Node" event of a CpuAcc
blocked chain, one "Node" event per original node of the model the chain ran (ABI 1.2
pn_workload.read_profile), with the backend as provider, the model's op type, and `fused_into`
naming the chain. No timing asserts beyond the events' nesting."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import plugnn


def chain_model(seed: int = 3) -> onnx.ModelProto:
    """conv (32) -> relu -> conv (32) + x -> relu -> conv (32): one blocked chain on AVX-512."""
    rng = np.random.default_rng(seed)

    def weight(name: str) -> onnx.TensorProto:
        return helper.make_tensor(name, TensorProto.FLOAT, (32, 32, 3, 3),
                                  (rng.standard_normal((32, 32, 3, 3)) / 17).astype(np.float32).ravel())

    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["a"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["a"], ["b"], name="relu1"),
        helper.make_node("Conv", ["b", "w2"], ["c"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c", "x"], ["d"], name="add"),
        helper.make_node("Relu", ["d"], ["e"], name="relu2"),
        helper.make_node("Conv", ["e", "w3"], ["y"], name="conv3", pads=[1, 1, 1, 1]),
    ]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 8, 8])],
                              [weight("w1"), weight("w2"), weight("w3")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_trace_has_an_event_per_node_inside_the_chain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    options = plugnn.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = "nodes"
    image = np.random.default_rng(0).standard_normal((1, 32, 8, 8)).astype(np.float32)
    with plugnn.InferenceSession(chain_model().SerializeToString(), options,
                                 providers=["CPUExecutionProvider"]) as session:
        session.run(None, {"x": image})
        session.run(None, {"x": image})
        path = session.end_profiling()
    events = json.loads(Path(path).read_text())
    os.remove(path)
    nodes = [e for e in events if e["cat"] == "Node"]
    fused = [e for e in nodes if "fused_into" in e["args"]]
    chain_events = [e for e in nodes if e["name"] == "conv1..conv3_kernel_time"]
    if not chain_events:
        pytest.skip("no blocked chain here (CpuAcc without AVX-512)")
    assert len(chain_events) == 2  # one per run
    for chain in chain_events:
        # within the chain's event (microseconds, each rounded down: 1 us of slack at the end)
        inside = [e for e in fused if e["args"]["fused_into"] == "conv1..conv3" and chain["ts"] <= e["ts"]
                  and e["ts"] + e["dur"] <= chain["ts"] + chain["dur"] + 1]
        assert [e["name"] for e in inside] == [f"{n}_kernel_time" for n in
                                               ("conv1", "relu1", "conv2", "add", "relu2", "conv3")]
        assert [e["args"]["op_name"] for e in inside] == ["Conv", "Relu", "Conv", "Add", "Relu", "Conv"]
        assert {e["args"]["provider"] for e in inside} == {chain["args"]["provider"]} == {"CpuAcc"}
        assert all(e["dur"] >= 0 for e in inside)
    assert len(fused) == 12
