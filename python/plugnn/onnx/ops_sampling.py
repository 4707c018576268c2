"""Operators that sample their input at computed positions: GridSample (opsets 16, 20, 22),
RoiAlign (10, 16, 22) and DeformConv (19, 22), one layer each (GRID_SAMPLE, ROI_ALIGN,
DEFORMABLE_CONVOLUTION).

Each is its own layer kind because no composition of existing layers computes it exactly: the
positions come from run-time data (the grid, the regions, the offsets), and gathering the taps
then weighting them would need the positions' floors and fractions as tensors, which the
elementwise kinds compute only in the tensors' own float type (not in double as the header's
formulas do), with every padding rule as a further chain of selects.
"""

from __future__ import annotations

from typing import Any

from plugnn.descriptors import DeformableConvolutionDescriptor, GridPadding, PoolingKind, ResizeMode, \
    RoiAlignDescriptor
from plugnn.onnx.context import NodeContext
from plugnn.onnx.registry import op
from plugnn.tensor import DataType


def since(ctx: NodeContext, version: int) -> None:
    """The operator exists from opset `version`; an older model cannot use it."""
    if ctx.opset < version:
        raise ctx.error(f"{ctx.op_type} exists from opset {version}; the model's opset is {ctx.opset}")


def flag(ctx: NodeContext, name: str, default: int = 0) -> bool:
    value = int(ctx.attr(name, default))
    if value not in (0, 1):
        raise ctx.unsupported_value(name, value, "0, 1")
    return bool(value)


# ---- GridSample -----------------------------------------------------------------------------------

_GRID_MODES = {16: {"bilinear": ResizeMode.LINEAR, "nearest": ResizeMode.NEAREST, "bicubic": ResizeMode.CUBIC},
               20: {"linear": ResizeMode.LINEAR, "nearest": ResizeMode.NEAREST, "cubic": ResizeMode.CUBIC}}
_GRID_PADDINGS = {"zeros": GridPadding.ZEROS, "border": GridPadding.BORDER, "reflection": GridPadding.REFLECTION}


@op("GridSample", ("align_corners", "mode", "padding_mode"))
def grid_sample(ctx: NodeContext) -> list[Any]:
    since(ctx, 16)
    modes = _GRID_MODES[20 if ctx.opset >= 20 else 16]
    mode_name = str(ctx.attr("mode", "linear" if ctx.opset >= 20 else "bilinear"))
    if mode_name not in modes:
        raise ctx.unsupported_value("mode", mode_name, ", ".join(modes) + f" (opset {ctx.opset})")
    padding = str(ctx.attr("padding_mode", "zeros"))
    if padding not in _GRID_PADDINGS:
        raise ctx.unsupported_value("padding_mode", padding, ", ".join(_GRID_PADDINGS))
    x = ctx.tensor(0, "X")
    grid = ctx.tensor(1, "grid")
    if ctx.opset < 20 and len(x.shape) != 4:
        raise ctx.error(f"GridSample before opset 20 takes a 4-D X [N, C, H, W], got shape {list(x.shape)}")
    if len(x.shape) < 3:
        raise ctx.error(f"X must be [N, C, spatial...] with at least one spatial axis, got shape {list(x.shape)}")
    return [ctx.network.add_grid_sample(x, grid, modes[mode_name], _GRID_PADDINGS[padding],
                                        flag(ctx, "align_corners"), name=ctx.name())]


# ---- RoiAlign -------------------------------------------------------------------------------------


@op("RoiAlign", ("coordinate_transformation_mode", "mode", "output_height", "output_width", "sampling_ratio",
                 "spatial_scale"))
def roi_align(ctx: NodeContext) -> list[Any]:
    since(ctx, 10)
    mode = str(ctx.attr("mode", "avg"))
    if mode not in ("avg", "max"):
        raise ctx.unsupported_value("mode", mode, "avg, max")
    if ctx.has("coordinate_transformation_mode") and ctx.opset < 16:
        raise ctx.error(f"attribute 'coordinate_transformation_mode' is RoiAlign's from opset 16 (the model's "
                        f"opset is {ctx.opset})")
    transform = str(ctx.attr("coordinate_transformation_mode", "half_pixel" if ctx.opset >= 16
                             else "output_half_pixel"))
    if transform not in ("half_pixel", "output_half_pixel"):
        raise ctx.unsupported_value("coordinate_transformation_mode", transform, "half_pixel, output_half_pixel")
    values = {}
    for name, default, low in (("output_height", 1, 1), ("output_width", 1, 1), ("sampling_ratio", 0, 0)):
        values[name] = int(ctx.attr(name, default))
        if values[name] < low:
            raise ctx.unsupported_value(name, values[name], f"an integer >= {low}")
    scale = float(ctx.attr("spatial_scale", 1.0))
    x = ctx.tensor(0, "X")
    if len(x.shape) != 4:
        raise ctx.error(f"X must be 4-D [N, C, H, W], got shape {list(x.shape)}")
    rois = ctx.tensor(1, "rois")
    batch = ctx.tensor(2, "batch_indices")
    if batch.dtype not in (DataType.INT64, DataType.INT32):
        raise ctx.error(f"input 2 (batch_indices) is {batch.dtype.numpy_name}; ONNX takes int64")
    try:
        desc = RoiAlignDescriptor(PoolingKind.AVERAGE if mode == "avg" else PoolingKind.MAX,
                                  values["output_height"], values["output_width"], values["sampling_ratio"],
                                  scale, transform == "half_pixel")
    except ValueError as exc:
        raise ctx.error(str(exc)) from None
    return [ctx.network.add_roi_align(x, rois, batch, desc, name=ctx.name())]


# ---- DeformConv -----------------------------------------------------------------------------------


@op("DeformConv", ("dilations", "group", "kernel_shape", "offset_group", "pads", "strides"))
def deform_conv(ctx: NodeContext) -> list[Any]:
    since(ctx, 19)
    x = ctx.tensor(0, "X")
    if len(x.shape) not in (3, 4, 5):
        raise ctx.error(f"X has rank {len(x.shape)}; plugnn imports 1-D, 2-D and 3-D DeformConv (rank 3, 4 or 5 "
                        f"input [N, C, spatial...])")
    k = len(x.shape) - 2
    w_shape = ctx.shape(1)
    if len(w_shape) != k + 2:
        raise ctx.error(f"weights W have shape {list(w_shape)}; expected rank {k + 2} for a {k}-D DeformConv")
    declared = ctx.ints("kernel_shape")
    if declared is not None and declared != list(w_shape[2:]):
        raise ctx.unsupported_value("kernel_shape", declared, f"the weights' spatial shape {list(w_shape[2:])}")
    strides = ctx.ints("strides", [1] * k)
    dilations = ctx.ints("dilations", [1] * k)
    pads = ctx.ints("pads", [0] * (2 * k))
    for name, values, count, low in (("strides", strides, k, 1), ("dilations", dilations, k, 1),
                                     ("pads", pads, 2 * k, 0)):
        if len(values) != count or min(values, default=low) < low:
            raise ctx.unsupported_value(name, values, f"{count} integers >= {low}")
    group, offset_group = int(ctx.attr("group", 1)), int(ctx.attr("offset_group", 1))
    for name, value in (("group", group), ("offset_group", offset_group)):
        if value < 1:
            raise ctx.unsupported_value(name, value, "an integer >= 1")
    if ctx.num_inputs > 5:
        raise ctx.error(f"DeformConv takes at most 5 inputs (X, W, offset, B, mask), got {ctx.num_inputs}")
    desc = DeformableConvolutionDescriptor(tuple(strides), tuple(pads[:k]), tuple(pads[k:]), tuple(dilations),
                                           group, offset_group)
    bias = ctx.tensor(3, "B") if ctx.has_input(3) else None
    mask = ctx.tensor(4, "mask") if ctx.has_input(4) else None
    return [ctx.network.add_deformable_convolution(x, ctx.tensor(1, "W"), ctx.tensor(2, "offset"), bias, mask,
                                                   descriptor=desc, name=ctx.name())]
