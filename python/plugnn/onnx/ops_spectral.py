"""Fourier transforms: DFT (opsets 17 and 20) and STFT (17), one SPECTRAL layer each, and
MelWeightMatrix (17), folded at import (its inputs are scalars that fix its output's shape).

A new layer kind because no composition is exact: a DFT as a MatMul with a constant matrix of
twiddle factors would round every factor to the tensor's float type first (float16 twiddles
are off by 1e-3) and sum in that type, where the header computes each term's angle exactly and
sums in double. dft_length, frame_step and frame_length fix the output's shape, so they must be
known at import; DFT-20's axis input too (it names the transformed dim).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from plugnn.descriptors import SpectralDescriptor, SpectralOp
from plugnn.onnx.context import NodeContext, np_dtype, type_name
from plugnn.onnx.ops_sampling import flag, since
from plugnn.onnx.registry import op
from plugnn.onnx.static_inputs import static_ints


def _scalar(ctx: NodeContext, i: int, what: str) -> int:
    values = static_ints(ctx, i, what, "the output shape depends on it")
    if len(values) != 1:
        raise ctx.error(f"input {i} ({what}) must be a scalar, got {len(values)} values")
    return values[0]


# ---- DFT -------------------------------------------------------------------------------------------


def _dft_arguments(ctx: NodeContext, shape: tuple[int, ...]) -> tuple[int, int, bool, bool]:
    """axis (resolved), dft_length, inverse, onesided."""
    since(ctx, 17)
    rank = len(shape)
    if ctx.opset >= 20:
        if ctx.has("axis"):
            raise ctx.error(f"attribute 'axis' is DFT's before opset 20; from opset 20 it is input 2 (the model's "
                            f"opset is {ctx.opset})")
        axis = _scalar(ctx, 2, "axis") if ctx.has_input(2) else -2
    else:
        if ctx.num_inputs > 2:
            raise ctx.error(f"DFT before opset 20 takes 2 inputs (input, dft_length), got {ctx.num_inputs}")
        axis = int(ctx.attr("axis", 1))
    if rank < 2 or shape[-1] not in (1, 2):
        raise ctx.error(f"input 0 must end in a dim of 1 (real) or 2 (complex), got shape {list(shape)}")
    if not (-rank <= axis <= -2 or 0 <= axis <= rank - 2):
        raise ctx.error(f"axis {axis} is out of range for rank {rank} (valid: [-{rank}, -2] and [0, {rank - 2}]; "
                        f"the last dim holds the complex parts)")
    axis %= rank
    inverse, onesided = flag(ctx, "inverse"), flag(ctx, "onesided")
    if ctx.has_input(1):
        length = _scalar(ctx, 1, "dft_length")
    else:
        length = 2 * (shape[axis] - 1) if inverse and onesided else shape[axis]
    if length < 1:
        raise ctx.error(f"dft_length is {length}; it must be >= 1")
    return axis, length, inverse, onesided


def _fold_dft(ctx: NodeContext) -> list[Any] | None:
    x = np.asarray(ctx.value(0))
    if x.dtype not in (np.float16, np.float32, np.float64):
        return None
    axis, n, inverse, onesided = _dft_arguments(ctx, x.shape)
    signal = x[..., 0].astype(np.float64) + (1j * x[..., 1].astype(np.float64) if x.shape[-1] == 2 else 0)
    if inverse and onesided:
        y = np.fft.irfft(signal, n=n, axis=axis)[..., np.newaxis]
    else:
        y = (np.fft.ifft if inverse else np.fft.fft)(signal, n=n, axis=axis)
        if onesided:
            y = np.take(y, np.arange(n // 2 + 1), axis=axis)
        y = np.stack((y.real, y.imag), axis=-1)
    return [y.astype(x.dtype)]


@op("DFT", ("axis", "inverse", "onesided"), fold=_fold_dft)
def dft(ctx: NodeContext) -> list[Any]:
    x = ctx.tensor(0, "input")
    axis, length, inverse, onesided = _dft_arguments(ctx, tuple(x.shape))
    desc = SpectralDescriptor(SpectralOp.DFT, length, axis, inverse, onesided)
    return [ctx.network.add_spectral(x, desc, name=ctx.name())]


# ---- STFT ------------------------------------------------------------------------------------------


@op("STFT", ("onesided",))
def stft(ctx: NodeContext) -> list[Any]:
    since(ctx, 17)
    signal = ctx.tensor(0, "signal")
    if len(signal.shape) != 3 or signal.shape[-1] not in (1, 2):
        raise ctx.error(f"signal must be [batch, length, 1 or 2], got shape {list(signal.shape)}")
    step = _scalar(ctx, 1, "frame_step")
    if step < 1:
        raise ctx.error(f"frame_step is {step}; it must be >= 1")
    window = ctx.tensor(2, "window") if ctx.has_input(2) else None
    if window is not None and len(window.shape) != 1:
        raise ctx.error(f"window must be 1-D, got shape {list(window.shape)}")
    if ctx.has_input(3):
        length = _scalar(ctx, 3, "frame_length")
        if window is not None and window.shape[0] != length:
            raise ctx.error(f"the window has {window.shape[0]} values, frame_length is {length}; they must agree")
    else:
        length = window.shape[0] if window is not None else signal.shape[1]
    if length < 1:
        raise ctx.error(f"the frame length is {length}; it must be >= 1")
    if (signal.shape[1] - length) // step + 1 < 0:
        raise ctx.error(f"a signal of {signal.shape[1]} samples has floor(({signal.shape[1]} - {length}) / {step}) + 1 "
                        f"< 0 frames of {length}")
    desc = SpectralDescriptor(SpectralOp.STFT, length, 0, False, flag(ctx, "onesided", 1), step)
    return [ctx.network.add_spectral(signal, desc, window, name=ctx.name())]


# ---- MelWeightMatrix ---------------------------------------------------------------------------------


def mel_weight_matrix(bins: int, dft_length: int, sample_rate: int, lower_hz: float, upper_hz: float
                      ) -> np.ndarray:
    """ONNX MelWeightMatrix in float64: [dft_length // 2 + 1, bins] triangular filters whose
    edges are bins + 2 points equally spaced in mel (2595 log10(1 + hz / 700)) from lower_hz on,
    in steps of (mel(upper_hz) - mel(lower_hz)) / (bins + 2), mapped to spectrogram bins as
    floor((dft_length + 1) * hz / sample_rate) (computed as ONNX's reference does, log1p and
    expm1, so the floors agree). ValueError when an edge falls outside the spectrogram."""
    spectrogram_bins = dft_length // 2 + 1
    low_mel = 2595.0 * np.log1p(lower_hz / 700.0) / np.log(10.0)
    high_mel = 2595.0 * np.log1p(upper_hz / 700.0) / np.log(10.0)
    mels = np.arange(bins + 2) * ((high_mel - low_mel) / (bins + 2)) + low_mel
    hertz = 700.0 * np.expm1(mels / 2595.0 * np.log(10.0))
    edges = (((dft_length + 1) * hertz) // sample_rate).astype(np.int64)
    if edges.min() < 0 or edges[:-1].max() >= spectrogram_bins or edges[-1] > spectrogram_bins:
        raise ValueError(f"the filter edges {edges.tolist()} leave the {spectrogram_bins} spectrogram bins")
    out = np.zeros((spectrogram_bins, bins))
    for i in range(bins):
        left, center, right = edges[i], edges[i + 1], edges[i + 2]
        if center == left:
            out[center, i] = 1.0
        else:
            for j in range(left, center + 1):
                out[j, i] = (j - left) / (center - left)
        for j in range(center, right):
            out[j, i] = (right - j) / (right - center)
    return out


def _mel(ctx: NodeContext) -> list[Any]:
    since(ctx, 17)
    why = "MelWeightMatrix's inputs fix its output (plugnn computes it at import)"
    ints = [_scalar(ctx, i, what) for i, what in ((0, "num_mel_bins"), (1, "dft_length"), (2, "sample_rate"))]
    bins, dft_length, sample_rate = ints
    floats = []
    for i, what in ((3, "lower_edge_hertz"), (4, "upper_edge_hertz")):
        value = np.asarray(ctx.const(i, what))
        if value.size != 1 or value.dtype.kind != "f":
            raise ctx.error(f"input {i} ({what}) must be a float scalar, got {value.dtype} of shape "
                            f"{list(value.shape)}; {why}")
        floats.append(float(value.reshape(-1)[0]))
    lower, upper = floats
    if bins < 1 or dft_length < 1 or sample_rate < 1:
        raise ctx.error(f"num_mel_bins, dft_length and sample_rate must be >= 1, got {bins}, {dft_length} and "
                        f"{sample_rate}")
    if not 0 <= lower <= upper:
        raise ctx.error(f"the edges must satisfy 0 <= lower_edge_hertz ({lower}) <= upper_edge_hertz ({upper})")
    dtype = np_dtype(int(ctx.attr("output_datatype", 1)))
    if dtype.kind not in "iuf" and dtype.name != "bfloat16":
        raise ctx.unsupported_value("output_datatype", type_name(int(ctx.attr("output_datatype", 1))),
                                    "the numeric element types")
    try:
        matrix = mel_weight_matrix(bins, dft_length, sample_rate, lower, upper)
    except ValueError as exc:
        raise ctx.error(f"{exc} (sample_rate {sample_rate}, edges {lower} to {upper} Hz)") from None
    return [matrix.astype(dtype)]


op("MelWeightMatrix", ("output_datatype",), fold=_mel)(_mel)
