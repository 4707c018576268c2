"""Per-layer profiles of CpuAcc's blocked chains (ABI 1.2 pn_execute_args.profile and
pn_workload.read_profile): a profiled run (LoadedNetwork.run(profile=True)) reports, inside
the chain's record, every original layer of the chain once under its own name, with
non-negative times that add up to at most the chain's; a run that is not profiled leaves
nothing to read. No timing asserts beyond these invariants."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import plugnn
from plugnn import BackendError, Network
from plugnn.descriptors import LayerKind

from .common import BEST_ISA, HAVE_CPUACC, assert_close_scaled
from .common import chain_runtime as runtime
from .test_chains import inputs_of, rand, residual_net

pytestmark = [pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built"),
              pytest.mark.skipif(BEST_ISA != "avx512", reason="blocked chains run on AVX-512 only; "
                                                               f"this CPU's best kernels are {BEST_ISA}")]


def inception_net(c: int = 32, hw: int = 8) -> Network:
    """conv -> four branches (three 1x1 convolutions, a 3x3 max pool + 1x1) -> concat -> conv,
    with a batch normalization + relu: on 2 threads the branches run as one loop (a group)."""
    net = Network("inception")
    x = net.add_input("x", (1, c, hw, hw))

    def conv(t: Any, cin: int, cout: int, k: int, name: str) -> Any:
        w = rand(cout, cin, k, k) / np.float32(np.sqrt(k * k * cin))
        return net.add_convolution2d(t, w, rand(cout), padding=k // 2, name=name)

    h = net.add_activation(conv(x, c, c, 3, "stem"), "relu", name="stem_relu")
    b1 = net.add_activation(conv(h, c, 16, 1, "b1"), "relu", name="b1_relu")
    b2 = net.add_activation(conv(h, c, 16, 1, "b2"), "relu", name="b2_relu")
    b3 = net.add_activation(conv(h, c, 16, 1, "b3"), "relu", name="b3_relu")
    pool = net.add_pooling2d(h, "max", 3, stride=1, padding=1, name="pool")
    b4 = conv(pool, c, 16, 1, "b4")
    cat = net.add_concat([b1, b2, b3, b4], axis=1, name="cat")
    y = conv(cat, 64, c, 3, "head")
    y = net.add_batch_normalization(y, rand(c) ** 2 + 0.5, rand(c), rand(c), rand(c) ** 2 + 0.5, name="bn")
    net.add_output(net.add_activation(y, "relu", name="bn_relu"), "y")
    return net


def profiled(net: Network, threads: int) -> tuple[Any, list[dict[str, Any]], dict[str, np.ndarray]]:
    """(the optimized network, the profile of a profiled run after a plain one, its outputs)."""
    rt = runtime(num_threads=threads)
    optimized = plugnn.optimize(net, rt, ["CpuAcc"])
    inputs = inputs_of(net)
    with rt.load_network(optimized) as loaded:
        plain = {k: v.copy() for k, v in loaded.run(inputs).items()}
        got = {k: v.copy() for k, v in loaded.run(inputs, profile=True).items()}
        profile = loaded.last_profile
    for name in plain:
        assert_close_scaled(got[name], plain[name].astype(np.float64), 0.0)  # the same bits, profiled or not
    rt.close()
    return optimized, profile, got


def check_chain_records(optimized: Any, profile: list[dict[str, Any]]) -> int:
    """Every chain's record has `nodes`: each an original layer of the chain (one it replaced),
    each once, times >= 0 adding up to at most the chain's. Returns the number of chains."""
    chains = {n.name: n for n in optimized.layers if n.kind is LayerKind.PRECOMPILED and ".." in n.name}
    assert chains
    for record in profile:
        node = chains.get(record["layer"])
        if node is None:
            continue
        names = [n["layer"] for n in record["nodes"]]
        assert len(names) == len(set(names)), names
        assert set(names) <= set(node.replaces), (names, node.replaces)
        assert all(n["seconds"] >= 0.0 for n in record["nodes"])
        assert sum(n["seconds"] for n in record["nodes"]) <= record["seconds"]
    return len(chains)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_residual_chain_reports_every_layer_once(threads: int) -> None:
    optimized, profile, _ = profiled(residual_net(), threads)
    (record,) = profile
    assert record["layer"] == "c1..c3" and record["backend"] == "CpuAcc"
    assert [n["layer"] for n in record["nodes"]] == ["c1", "r1", "c2", "add", "r2", "c3"]
    check_chain_records(optimized, profile)
    # the convolutions carry the time; the relus and the add ran inside their kernels
    assert {n["layer"] for n in record["nodes"] if n["seconds"] == 0.0} >= {"r1", "add", "r2"}


@pytest.mark.parametrize("threads", [1, 2])
def test_branches_pooling_concat_and_batch_norm_are_reported(threads: int) -> None:
    optimized, profile, _ = profiled(inception_net(), threads)
    check_chain_records(optimized, profile)
    (chain,) = [n for n in optimized.layers if n.kind is LayerKind.PRECOMPILED]
    (record,) = [r for r in profile if r["layer"] == chain.name]
    # every layer of the chain, but the batch normalization plugnn's optimizer folded into the
    # convolution before CpuAcc saw it (its time is in "head"'s)
    assert [n["layer"] for n in record["nodes"]] == [name for name in chain.replaces if name != "bn"]


def test_read_profile_needs_a_profiled_run() -> None:
    rt = runtime(num_threads=1)
    net = residual_net()
    optimized = plugnn.optimize(net, rt, ["CpuAcc"])
    with rt.load_network(optimized) as loaded:
        (workload,) = loaded._workloads
        with pytest.raises(BackendError, match="not profiled"):
            workload.read_profile()
        inputs = inputs_of(net)
        loaded.run(inputs, profile=True)
        names = [name for name, _ in workload.read_profile()]
        assert names == ["c1", "r1", "c2", "add", "r2", "c3"]
        loaded.run(inputs)  # not profiled: the last profile is gone
        with pytest.raises(BackendError, match="not profiled"):
            workload.read_profile()
    rt.close()


def test_layers_that_are_not_fused_have_no_nodes() -> None:
    rt = runtime(chains=False, num_threads=1)
    net = residual_net()
    with rt.load_network(plugnn.optimize(net, rt, ["CpuAcc"])) as loaded:
        loaded.run(inputs_of(net), profile=True)
        assert loaded.last_profile and all("nodes" not in r for r in loaded.last_profile)
    rt.close()
