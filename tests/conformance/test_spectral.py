"""SPECTRAL (ONNX DFT and STFT) against NumPy's FFT in float64.

DFT: forward and inverse, full and one-sided (rfft, irfft), real and complex input, every
position of the axis, lengths shorter and longer than the input (cut and zero-padded), odd and
even, length 1, empty batches, every float type. STFT: with and without a window, one-sided or
not, real and complex signals, a frame step beyond the frame length, no frame at all. Then every
malformed layer refused.
"""

from __future__ import annotations

import numpy as np
import pytest

from plugnn.descriptors import LayerKind, SpectralDescriptor
from plugnn.layers import LayerSpec
from plugnn.tensor import DataType, TensorInfo

from .conftest import assert_close, assert_refused, run_layer

# Sums of n terms in double: the float32 rounding of the inputs dominates.
RTOL, ATOL = 1e-5, 1e-5


def _complex(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return x[..., 0] + (1j * x[..., 1] if x.shape[-1] == 2 else 0)


def dft_reference(x: np.ndarray, axis: int, n: int, inverse: bool, onesided: bool) -> np.ndarray:
    signal = _complex(x)
    axis = axis % x.ndim
    if inverse and onesided:
        return np.fft.irfft(signal, n=n, axis=axis)[..., np.newaxis]
    y = (np.fft.ifft if inverse else np.fft.fft)(signal, n=n, axis=axis)
    if onesided:
        y = np.take(y, np.arange(n // 2 + 1), axis=axis)
    return np.stack((y.real, y.imag), axis=-1)


def stft_reference(signal: np.ndarray, window: np.ndarray | None, n: int, step: int, onesided: bool) -> np.ndarray:
    s = _complex(signal)
    w = np.ones(n) if window is None else window.astype(np.float64)
    frames = (s.shape[1] - n) // step + 1
    bins = n // 2 + 1 if onesided else n
    out = np.zeros((s.shape[0], max(frames, 0), bins, 2))
    for f in range(max(frames, 0)):
        spectrum = np.fft.fft(s[:, f * step:f * step + n] * w, axis=1)[:, :bins]
        out[:, f, :, 0], out[:, f, :, 1] = spectrum.real, spectrum.imag
    return out


def _dft_output(shape: tuple[int, ...], axis: int, n: int, inverse: bool, onesided: bool) -> tuple[int, ...]:
    out = list(shape)
    out[axis % len(shape)] = n // 2 + 1 if onesided and not inverse else n
    out[-1] = 1 if onesided and inverse else 2
    return tuple(out)


def _spec(desc, inputs, out, dtype=DataType.FLOAT32) -> LayerSpec:
    return LayerSpec(LayerKind.SPECTRAL, "spectral", desc, tuple(TensorInfo(tuple(s), dtype) for s in inputs),
                     (TensorInfo(tuple(out), dtype),))


@pytest.mark.parametrize("inverse,onesided", [(False, False), (False, True), (True, False), (True, True)],
                         ids=["fft", "rfft", "ifft", "irfft"])
@pytest.mark.parametrize("channels", [1, 2], ids=["real", "complex"])
@pytest.mark.parametrize("shape,axis", [((3, 8, 2), 1), ((2, 5, 4, 1), -3), ((7, 1), 0), ((2, 3, 6, 1), 2)],
                         ids=["axis1", "axis-3", "axis0", "axis2"])
@pytest.mark.parametrize("n_change", [0, -2, 3], ids=["n=L", "cut", "padded"])
def test_dft(backend, inverse, onesided, channels, shape, axis, n_change) -> None:
    shape = shape[:-1] + (channels,)
    length = shape[axis % len(shape)]
    n = max(1, (2 * (length - 1) if inverse and onesided else length) + n_change)
    rng = np.random.default_rng(abs(hash((inverse, onesided, channels, shape, n))) % 2 ** 32)
    x = rng.standard_normal(shape).astype(np.float32)
    desc = SpectralDescriptor("dft", n, axis, inverse, onesided)
    spec = _spec(desc, [shape], _dft_output(shape, axis, n, inverse, onesided))
    (y,) = run_layer(backend, spec, [x])
    assert_close(y, dft_reference(x, axis, n, inverse, onesided), RTOL, ATOL, spec)


@pytest.mark.parametrize("n", [1, 2, 7, 16, 31])
def test_dft_lengths_and_round_trip(backend, n) -> None:
    rng = np.random.default_rng(n)
    x = rng.standard_normal((2, n, 2)).astype(np.float32)
    forward = _spec(SpectralDescriptor("dft", n, 1), [x.shape], (2, n, 2))
    (y,) = run_layer(backend, forward, [x])
    assert_close(y, dft_reference(x, 1, n, False, False), RTOL, ATOL * n, forward)
    inverse = _spec(SpectralDescriptor("dft", n, 1, True), [y.shape], (2, n, 2))
    (back,) = run_layer(backend, inverse, [y])
    assert_close(back, x, 1e-5, 1e-5 * n, inverse)


def test_irfft_ignores_the_imaginary_parts_numpy_ignores(backend) -> None:
    """The imaginary parts of x_0 and of x_{n/2} (n even) do not count."""
    x = np.array([[[1.0, 5.0], [2.0, -1.0], [0.5, 0.25], [3.0, 7.0]]], np.float32)  # 4 bins: n = 6
    spec = _spec(SpectralDescriptor("dft", 6, 1, True, True), [x.shape], (1, 6, 1))
    (y,) = run_layer(backend, spec, [x])
    assert_close(y, dft_reference(x, 1, 6, True, True), RTOL, ATOL, spec)


@pytest.mark.parametrize("dtype", [DataType.FLOAT16, DataType.BFLOAT16, DataType.FLOAT64], ids=lambda t: t.numpy_name)
@pytest.mark.parametrize("op", ["dft", "stft"])
def test_float_types(backend, dtype, op) -> None:
    rng = np.random.default_rng(8)
    if op == "dft":
        x = rng.standard_normal((2, 9, 2)).astype(dtype.numpy_dtype)
        desc = SpectralDescriptor("dft", 9, 1)
        inputs, out, expected = [x], (2, 9, 2), dft_reference(x, 1, 9, False, False)
    else:
        x = rng.standard_normal((1, 20, 1)).astype(dtype.numpy_dtype)
        window = rng.uniform(0, 1, 6).astype(dtype.numpy_dtype)
        desc = SpectralDescriptor("stft", 6, 0, False, True, 4, True)
        inputs, out, expected = [x, window], (1, 4, 4, 2), stft_reference(x, window, 6, 4, True)
    spec = _spec(desc, [a.shape for a in inputs], out, dtype)
    (y,) = run_layer(backend, spec, inputs)
    tol = {DataType.FLOAT16: 3e-3, DataType.BFLOAT16: 2e-2, DataType.FLOAT64: 1e-12}[dtype]
    scale = float(np.abs(expected).max())
    assert_close(y.astype(np.float64), expected, tol, tol * scale, spec)


@pytest.mark.parametrize("window", [True, False], ids=["window", "rectangular"])
@pytest.mark.parametrize("onesided", [True, False])
@pytest.mark.parametrize("channels", [1, 2], ids=["real", "complex"])
@pytest.mark.parametrize("length,n,step", [(32, 8, 4), (20, 5, 7), (16, 16, 1), (9, 4, 10), (6, 8, 3)],
                         ids=["overlapping", "gapped", "one frame", "step past the end", "no frame"])
def test_stft(backend, window, onesided, channels, length, n, step) -> None:
    rng = np.random.default_rng(abs(hash((window, onesided, channels, length, n, step))) % 2 ** 32)
    signal = rng.standard_normal((2, length, channels)).astype(np.float32)
    weights = rng.uniform(0, 1, n).astype(np.float32) if window else None
    desc = SpectralDescriptor("stft", n, 0, False, onesided, step, window)
    expected = stft_reference(signal, weights, n, step, onesided)
    inputs = [signal] + ([weights] if window else [])
    spec = _spec(desc, [a.shape for a in inputs], expected.shape)
    (y,) = run_layer(backend, spec, inputs)
    assert_close(y, expected, RTOL, ATOL, spec)


def test_empty_batches(backend) -> None:
    x = np.zeros((0, 4, 2), np.float32)
    (y,) = run_layer(backend, _spec(SpectralDescriptor("dft", 4, 1), [x.shape], (0, 4, 2)), [x])
    assert y.shape == (0, 4, 2)
    x = np.zeros((0, 10, 1), np.float32)
    (y,) = run_layer(backend, _spec(SpectralDescriptor("stft", 4, 0, False, True, 2), [x.shape], (0, 4, 3, 2)), [x])
    assert y.shape == (0, 4, 3, 2)


DFT = SpectralDescriptor("dft", 4, 1)
STFT = SpectralDescriptor("stft", 4, 0, False, True, 2, True)


@pytest.mark.parametrize("desc,inputs,out,reason", [
    (SpectralDescriptor("dft", 4, 2), [(2, 4, 2)], (2, 4, 2), "axis"),
    (SpectralDescriptor("dft", 4, -1), [(2, 4, 2)], (2, 4, 2), "axis"),
    (DFT, [(2, 4, 3)], (2, 4, 2), "last dim"),
    (DFT, [(4,)], (4,), "rank"),
    (DFT, [(2, 4, 2)], (2, 5, 2), "output"),
    (SpectralDescriptor("dft", 4, 1, True, True), [(2, 3, 2)], (2, 4, 2), "output"),
    (DFT, [(2, 4, 2), (4,)], (2, 4, 2), "input"),
    (STFT, [(1, 10, 1)], (1, 4, 3, 2), "input"),
    (STFT, [(1, 10, 1), (5,)], (1, 4, 3, 2), "window"),
    (STFT, [(10, 1), (4,)], (1, 4, 3, 2), "rank"),
    (STFT, [(1, 10, 1), (4,)], (1, 4, 4, 2), "output"),
    (SpectralDescriptor("stft", 8, 0, False, True, 2), [(1, 5, 1)], (1, 0, 5, 2), "frames"),
], ids=["axis is the last dim", "axis -1", "complex dim 3", "rank 1", "dft output", "irfft output",
        "dft window", "stft without its window", "window length", "signal rank", "stft output", "negative frames"])
def test_malformed_refused(backend, desc, inputs, out, reason) -> None:
    assert_refused(backend, _spec(desc, inputs, out), reason)


@pytest.mark.parametrize("field,value,reason", [("op", 0, "op"), ("op", 3, "op"), ("length", 0, "length"),
                                                ("inverse", 2, "inverse"), ("onesided", 3, "onesided"),
                                                ("frame_step", 2, "frame_step")])
def test_malformed_dft_descriptor_refused(backend, field, value, reason) -> None:
    desc = SpectralDescriptor("dft", 4, 1)
    object.__setattr__(desc, field, value)
    assert_refused(backend, _spec(desc, [(2, 4, 2)], (2, 4, 2)), reason)


@pytest.mark.parametrize("field,value,reason", [("frame_step", 0, "frame_step"), ("inverse", 1, "inverse"),
                                                ("axis", 1, "axis")])
def test_malformed_stft_descriptor_refused(backend, field, value, reason) -> None:
    desc = SpectralDescriptor("stft", 4, 0, False, True, 2)
    object.__setattr__(desc, field, value)
    assert_refused(backend, _spec(desc, [(1, 10, 1)], (1, 4, 3, 2)), reason)


def test_integer_types_refused(backend) -> None:
    assert_refused(backend, _spec(DFT, [(2, 4, 2)], (2, 4, 2), DataType.INT32), "float")
