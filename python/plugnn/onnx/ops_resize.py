"""Resize (opsets 10, 11, 13, 18, 19) and Upsample (7, 9): one RESIZE layer each (two for the
nearest mode of opset 10 / Upsample when some axes grow and others shrink).

Scales or sizes (and roi, for tf_crop_and_resize) must be known at import time: constants, or
computed from constants and static shapes (a Shape -> Gather -> Mul -> Concat chain folds). The
layer's scales are the ones ONNX's equations use: the given scales, or output / input for sizes
(after keep_aspect_ratio_policy). Output sizes are floor(input * scale) for scales and the sizes
themselves otherwise. An axis resized to 0 elements computes nothing, so its layer scale is 1.

Opset 10's Resize and Upsample predate the coordinate transformation attribute: they map
x_out to x_out / scale (asymmetric); nearest picks floor(x) on axes that grow and ceil(x) on
axes that shrink, as onnxruntime does for them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from plugnn.descriptors import CoordinateTransform, NearestMode, ResizeDescriptor, ResizeMode
from plugnn.onnx.context import NodeContext
from plugnn.onnx.registry import op

_MODES = {"nearest": ResizeMode.NEAREST, "linear": ResizeMode.LINEAR, "cubic": ResizeMode.CUBIC}
_COORDINATES = {
    "half_pixel": CoordinateTransform.HALF_PIXEL,
    "half_pixel_symmetric": CoordinateTransform.HALF_PIXEL_SYMMETRIC,
    "pytorch_half_pixel": CoordinateTransform.PYTORCH_HALF_PIXEL,
    "align_corners": CoordinateTransform.ALIGN_CORNERS,
    "asymmetric": CoordinateTransform.ASYMMETRIC,
    "tf_crop_and_resize": CoordinateTransform.TF_CROP_AND_RESIZE,
}
_NEAREST = {
    "round_prefer_floor": NearestMode.ROUND_PREFER_FLOOR,
    "round_prefer_ceil": NearestMode.ROUND_PREFER_CEIL,
    "floor": NearestMode.FLOOR,
    "ceil": NearestMode.CEIL,
}
_POLICIES = ("stretch", "not_larger", "not_smaller")

# attribute -> the opset that introduced it on Resize
_SINCE = {"coordinate_transformation_mode": 11, "cubic_coeff_a": 11, "exclude_outside": 11, "extrapolation_value": 11,
          "nearest_mode": 11, "antialias": 18, "axes": 18, "keep_aspect_ratio_policy": 18}


def _choice(ctx: NodeContext, name: str, default: str, table: Any) -> Any:
    value = str(ctx.attr(name, default))
    if value not in table:
        raise ctx.unsupported_value(name, value, ", ".join(table))
    return table[value] if isinstance(table, dict) else value


def _flag(ctx: NodeContext, name: str) -> bool:
    value = int(ctx.attr(name, 0))
    if value not in (0, 1):
        raise ctx.unsupported_value(name, value, "0, 1")
    return bool(value)


def _axes(ctx: NodeContext, rank: int) -> list[int]:
    axes = ctx.ints("axes")
    if axes is None:
        return list(range(rank))
    resolved = [a + rank if a < 0 else a for a in axes]
    if any(not 0 <= a < rank for a in resolved) or len(set(resolved)) != len(resolved):
        raise ctx.unsupported_value("axes", axes, f"distinct axes in [-{rank}, {rank - 1}]")
    return resolved


def _optional_const(ctx: NodeContext, i: int, what: str) -> np.ndarray | None:
    """Input i when given and not empty (known at import time), else None."""
    if not ctx.has_input(i):
        return None
    value = np.asarray(ctx.const(i, what))
    return value if value.size else None


def _sizes_plan(ctx: NodeContext, shape: tuple[int, ...], axes: list[int], sizes: np.ndarray
                ) -> tuple[list[int], list[float]]:
    if not np.issubdtype(sizes.dtype, np.integer) or sizes.ndim != 1 or sizes.size != len(axes) or \
            (sizes < 0).any():
        raise ctx.error(f"input 3 (sizes) = {sizes.tolist()}: expected {len(axes)} integers >= 0 (one per resized "
                        f"axis)")
    policy = _choice(ctx, "keep_aspect_ratio_policy", "stretch", _POLICIES)
    out, scales = list(shape), [1.0] * len(shape)
    ratios = [int(s) / shape[a] if shape[a] else 1.0 for a, s in zip(axes, sizes)]
    if policy != "stretch":
        common = min(ratios) if policy == "not_larger" else max(ratios)
        ratios = [common] * len(axes)
        sizes = np.array([int(common * shape[a] + 0.5) for a in axes])
    for a, size, ratio in zip(axes, sizes, ratios):
        out[a], scales[a] = int(size), ratio
    return out, scales


def _scales_plan(ctx: NodeContext, shape: tuple[int, ...], axes: list[int], given: np.ndarray, index: int
                 ) -> tuple[list[int], list[float]]:
    if given.ndim != 1 or given.size != len(axes) or not np.issubdtype(given.dtype, np.floating) or \
            not (np.isfinite(given) & (given > 0)).all():
        raise ctx.error(f"input {index} (scales) = {given.tolist()}: expected {len(axes)} finite numbers > 0 (one "
                        f"per resized axis)")
    out, scales = list(shape), [1.0] * len(shape)
    for a, s in zip(axes, given):
        scales[a] = float(s)
        out[a] = int(float(s) * shape[a])
    return out, scales


def _layer(ctx: NodeContext, x: Any, out: list[int], scales: list[float], name: str, **fields: Any) -> Any:
    # an axis resized to 0 elements computes nothing: any scale > 0 describes it
    scales = [s if o > 0 and s > 0 else 1.0 for s, o in zip(scales, out)]
    return ctx.network.add_resize(x, out, ResizeDescriptor(scales=tuple(scales), **fields), name=name)


@op("Resize", ("antialias", "axes", "coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside",
               "extrapolation_value", "keep_aspect_ratio_policy", "mode", "nearest_mode"))
def resize(ctx: NodeContext) -> list[Any]:
    for name, since in _SINCE.items():
        if ctx.has(name) and ctx.opset < since:
            raise ctx.error(f"attribute {name!r} exists from opset {since}; the model's opset is {ctx.opset}")
    x = ctx.tensor(0, "X")
    shape = tuple(x.shape)
    if ctx.opset < 11:
        scales = _optional_const(ctx, 1, "scales")
        if scales is None:
            raise ctx.error("input 1 (scales) is required")
        out, used = _scales_plan(ctx, shape, list(range(len(shape))), scales, 1)
        return [_legacy(ctx, x, out, used, _choice(ctx, "mode", "nearest", ("nearest", "linear")))]
    mode = _choice(ctx, "mode", "nearest", _MODES)
    coordinates = _choice(ctx, "coordinate_transformation_mode", "half_pixel", _COORDINATES)
    if coordinates is CoordinateTransform.HALF_PIXEL_SYMMETRIC and ctx.opset < 19:
        raise ctx.error(f"coordinate_transformation_mode 'half_pixel_symmetric' exists from opset 19; the model's "
                        f"opset is {ctx.opset}")
    axes = _axes(ctx, len(shape))
    scales, sizes = _optional_const(ctx, 2, "scales"), _optional_const(ctx, 3, "sizes")
    if (scales is None) == (sizes is None):
        raise ctx.error("exactly one of input 2 (scales) and input 3 (sizes) must be given and not empty")
    out, used = _sizes_plan(ctx, shape, axes, sizes) if sizes is not None else \
        _scales_plan(ctx, shape, axes, scales, 2)
    roi_start, roi_end = [0.0] * len(shape), [1.0] * len(shape)
    if coordinates is CoordinateTransform.TF_CROP_AND_RESIZE:
        roi = _optional_const(ctx, 1, "roi")
        if roi is None or roi.size != 2 * len(axes) or not np.isfinite(roi).all():
            raise ctx.error(f"coordinate_transformation_mode 'tf_crop_and_resize' needs input 1 (roi): "
                            f"{2 * len(axes)} finite numbers (starts, then ends), got "
                            f"{None if roi is None else roi.tolist()}")
        for i, a in enumerate(axes):
            roi_start[a], roi_end[a] = float(roi[i]), float(roi[len(axes) + i])
    # antialias only filters LINEAR and CUBIC downscaling (ONNX's definition); NEAREST ignores it
    antialias = _flag(ctx, "antialias") and mode is not ResizeMode.NEAREST
    return [_layer(ctx, x, out, used, ctx.name(), mode=mode, coordinates=coordinates,
                   nearest_mode=_choice(ctx, "nearest_mode", "round_prefer_floor", _NEAREST),
                   cubic_coeff_a=float(ctx.attr("cubic_coeff_a", -0.75)),
                   exclude_outside=_flag(ctx, "exclude_outside"),
                   extrapolation_value=float(ctx.attr("extrapolation_value", 0.0)), antialias=antialias,
                   roi_start=tuple(roi_start), roi_end=tuple(roi_end))]


def _legacy(ctx: NodeContext, x: Any, out: list[int], scales: list[float], mode: str) -> Any:
    """Opset 10 Resize and Upsample: asymmetric coordinates; nearest floors on growing axes and
    rounds up on shrinking ones (a second layer when both occur)."""
    common = {"coordinates": CoordinateTransform.ASYMMETRIC}
    if mode == "linear":
        return _layer(ctx, x, out, scales, ctx.name(), mode=ResizeMode.LINEAR, **common)
    shrinking = [s < 1.0 for s in scales]
    if not any(shrinking) or all(s <= 1.0 for s in scales):
        nearest = NearestMode.CEIL if any(shrinking) else NearestMode.FLOOR
        return _layer(ctx, x, out, scales, ctx.name(), mode=ResizeMode.NEAREST, nearest_mode=nearest, **common)
    grown = [o if not shrink else d for o, d, shrink in zip(out, x.shape, shrinking)]
    first = _layer(ctx, x, grown, [s if not shrink else 1.0 for s, shrink in zip(scales, shrinking)],
                   ctx.aux("grow"), mode=ResizeMode.NEAREST, nearest_mode=NearestMode.FLOOR, **common)
    return _layer(ctx, first, out, [s if shrink else 1.0 for s, shrink in zip(scales, shrinking)], ctx.name(),
                  mode=ResizeMode.NEAREST, nearest_mode=NearestMode.CEIL, **common)


@op("Upsample", ("mode", "scales"))
def upsample(ctx: NodeContext) -> list[Any]:
    x = ctx.tensor(0, "X")
    shape = tuple(x.shape)
    if ctx.opset < 9:
        if not ctx.has("scales"):
            raise ctx.error("attribute 'scales' is required")
        scales, index = np.asarray(ctx.attr("scales"), np.float32), 1
    else:
        if ctx.has("scales"):
            raise ctx.error(f"attribute 'scales' became input 1 in opset 9; the model's opset is {ctx.opset}")
        scales, index = _optional_const(ctx, 1, "scales"), 1
        if scales is None:
            raise ctx.error("input 1 (scales) is required")
    if np.asarray(scales).size == len(shape) and (np.asarray(scales) < 1).any():
        raise ctx.error(f"scales {np.asarray(scales).tolist()}: Upsample's scales are >= 1 (use Resize to shrink)")
    out, used = _scales_plan(ctx, shape, list(range(len(shape))), np.asarray(scales), index)
    return [_legacy(ctx, x, out, used, _choice(ctx, "mode", "nearest", ("nearest", "linear")))]
