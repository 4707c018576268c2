"""ROI_ALIGN in AVERAGE mode on CpuAcc (plugins/accel/src/ops/roi_align.c: the bins' samples summed
per axis into weights, then float32 sums) on every kernel set at 1, 2, 3 and 7 threads, against
CpuRef (double): rtol 1e-5, atol 1e-6 of the largest |x| (float32 sums of up to a few hundred
weighted terms against double). The same bits at every thread count. Shapes as Faster R-CNN's
MultiScaleRoIAlign has them (256 channels, 7 x 7 bins, sampling ratio 2) and adaptive grids;
elements no sample reaches may be inf or NaN without reaching the output. The conformance suite
(tests/conformance/test_roi_align.py) covers the formulas' corners on every backend."""

from __future__ import annotations

import numpy as np
import pytest

import plugnn
from plugnn.descriptors import LayerKind, RoiAlignDescriptor
from plugnn.layers import LayerSpec
from plugnn.tensor import DataType, TensorInfo

from conformance.conftest import run_layer

from .common import HAVE_CPUACC

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")

RNG = np.random.default_rng(31337)


def layer(x: np.ndarray, rois: np.ndarray, indices: np.ndarray, desc: RoiAlignDescriptor) -> LayerSpec:
    out = (len(rois), x.shape[1], desc.output_height, desc.output_width)
    infos = tuple(TensorInfo(a.shape, DataType.from_any(a.dtype)) for a in (x, rois, indices))
    return LayerSpec(LayerKind.ROI_ALIGN, "roi_align", desc, infos, (TensorInfo(out, infos[0].dtype),))


def run(rt: plugnn.Runtime, backend_id: str, spec: LayerSpec, arrays: list[np.ndarray]) -> np.ndarray:
    """The layer's one output on the runtime's backend (the conformance suite's run_layer, which
    must not skip: the backend has to claim the layer)."""
    support = rt.backend(backend_id).is_layer_supported(spec)
    assert support.supported, f"{backend_id}: {support.reason}"
    return run_layer(rt.backend(backend_id), spec, arrays)[0]


def regions(count: int, side: float) -> np.ndarray:
    x1, y1 = RNG.uniform(-0.1 * side, side, (2, count))
    w, h = RNG.uniform(0.5, 0.6 * side, (2, count))
    return np.stack([x1, y1, x1 + w, y1 + h], 1).astype(np.float32)


@pytest.mark.parametrize("ratio", [2, 0, 1])
@pytest.mark.parametrize("half_pixel", [True, False])
@pytest.mark.parametrize("shape, scale", [((2, 256, 40, 40), 0.125), ((1, 3, 7, 300), 1.0), ((1, 40, 1, 1), 0.5)],
                         ids=str)
def test_against_cpuref(runtimes, ratio: int, half_pixel: bool, shape: tuple[int, ...],  # type: ignore[no-untyped-def]
                        scale: float) -> None:
    x = RNG.standard_normal(shape).astype(np.float32)
    rois = regions(37, max(shape[2], shape[3]) / scale)
    indices = RNG.integers(0, shape[0], 37).astype(np.int64)
    desc = RoiAlignDescriptor("average", 7, 5, ratio, scale, half_pixel)
    spec = layer(x, rois, indices, desc)
    with plugnn.Runtime() as rt:
        expected = run(rt, "CpuRef", spec, [x, rois, indices])
    first: dict[str, np.ndarray] = {}
    for (isa, threads), rt in runtimes.items():
        got = run(rt, "CpuAcc", spec, [x, rois, indices])
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6 * float(np.abs(x).max()),
                                   err_msg=f"isa={isa} num_threads={threads}")
        if isa in first:
            np.testing.assert_array_equal(got, first[isa], err_msg=f"isa={isa}: num_threads={threads} differs")
        first.setdefault(isa, got)


def test_elements_no_sample_reaches_stay_out(runtimes) -> None:  # type: ignore[no-untyped-def]
    """A region on the left half of the plane, inf and NaN on the right half: the output is finite."""
    x = RNG.standard_normal((1, 4, 16, 16)).astype(np.float32)
    x[..., 10:] = np.inf
    x[..., 12:] = np.nan
    rois = np.array([[0.0, 0.0, 8.0, 15.0], [1.0, 2.0, 8.5, 9.0]], np.float32)  # samples reach column 9 at most
    indices = np.zeros(2, np.int32)
    spec = layer(x, rois, indices, RoiAlignDescriptor("average", 3, 4, 2, 1.0, True))
    with plugnn.Runtime() as rt:
        expected = run(rt, "CpuRef", spec, [x, rois, indices])
    assert np.isfinite(expected).all()
    for rt in runtimes.values():
        got = run(rt, "CpuAcc", spec, [x, rois, indices])
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_max_mode_and_other_types_stay_cpuref() -> None:
    x, rois, indices = np.zeros((1, 2, 4, 4), np.float32), np.zeros((1, 4), np.float32), np.zeros(1, np.int64)
    with plugnn.Runtime() as rt:
        backend = rt.backend("CpuAcc")
        support = backend.is_layer_supported(layer(x, rois, indices, RoiAlignDescriptor("max", 2, 2, 2, 1.0, True)))
        assert not support.supported and "AVERAGE mode only" in support.reason
        half = layer(x.astype(np.float16), rois.astype(np.float16), indices,
                     RoiAlignDescriptor("average", 2, 2, 2, 1.0, True))
        support = backend.is_layer_supported(half)
        assert not support.supported and "float32 only; input 0 is float16" in support.reason
