"""The model: an ONNX file loaded as a Network (its dynamic input shapes fixed), or the built-in demo."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from plugnn.errors import PlugnnError
from plugnn.run.errors import RunError, one_line, require

log = logging.getLogger("plugnn")

if TYPE_CHECKING:
    import numpy as np

    from plugnn import Network


@dataclass
class Model:
    network: Network | None  # None: the model needs the dynamic path (`proto` runs there)
    description: str
    path: str | None  # None: the demo
    notes: list[str] = field(default_factory=list)  # what the command chose for the user (symbols set to 1)
    proto: Any = None  # the model read, when it runs on the dynamic path
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)  # its inputs' shapes there


def load_model(path: str | None, input_files: dict[str, tuple[np.ndarray, str]],
               input_shapes: dict[str, tuple[int, ...]], symbol_sizes: dict[str, int] | None = None) -> Model:
    """The demo (path None) or the ONNX model at `path`; a dynamic input takes the shape given
    with --input-shape, else the shape of the file fed to it, else its declared dims with each
    symbol as --dim sets it (1 when it does not: the model's notes say so)."""
    symbol_sizes = symbol_sizes or {}
    if path is None:
        from plugnn import demo

        if input_shapes or symbol_sizes:
            option = "--input-shape" if input_shapes else "--dim"
            raise RunError(f"{option} applies to ONNX models; the built-in demo has a fixed input "
                           f"{demo.INPUT_NAME!r} (1, 3, {demo.IMAGE}, {demo.IMAGE})")
        return Model(demo.network(), demo.DESCRIPTION, None)
    if not os.path.exists(path):
        raise RunError(f"no such model file: {path}")
    if not os.path.isfile(path):
        raise RunError(f"the model must be a file, {path} is not")
    require("onnx", "running an ONNX model")
    import plugnn.onnx

    graph_inputs = _onnx_graph_inputs(path)
    dynamic = {name: dims for name, dims in graph_inputs.items()
               if not dims or any(not isinstance(d, int) or d <= 0 for d in dims)}
    shapes = dict(input_shapes)
    for name, (array, _) in input_files.items():  # a dynamic input takes the shape of the file fed to it
        if name in dynamic and name not in shapes and len(dynamic[name]) in (0, array.ndim):
            shapes[name] = array.shape
    unknown = sorted(set(input_shapes) - set(graph_inputs)) if graph_inputs else []
    if unknown:
        raise RunError(f"--input-shape names {', '.join(map(repr, unknown))}, which the model does not take; "
                       f"its inputs: {', '.join(graph_inputs)}")
    symbols = {d for ds in graph_inputs.values() for d in ds if isinstance(d, str)}
    unknown = sorted(set(symbol_sizes) - symbols)
    if unknown:
        raise RunError(f"--dim names {', '.join(map(repr, unknown))}, which no input of the model has; its "
                       f"symbolic dimensions: {', '.join(sorted(symbols)) or 'none'}")
    notes: list[str] = []
    defaulted: list[str] = []
    for name, declared in dynamic.items():
        if name in shapes or not declared:
            continue  # given, or no declared shape to fill (the error below asks for --input-shape)
        shape = []
        for d in declared:
            if isinstance(d, int) and d > 0:
                shape.append(d)
            elif isinstance(d, str) and d in symbol_sizes:
                shape.append(symbol_sizes[d])
            else:
                shape.append(1)
                if (d if isinstance(d, str) else f"{name}[{len(shape) - 1}]") not in defaulted:
                    defaulted.append(d if isinstance(d, str) else f"{name}[{len(shape) - 1}]")
        shapes[name] = tuple(shape)
    if defaulted:
        notes.append(f"set to 1: {', '.join(defaulted)} (a symbolic dimension with no --dim; choose one with "
                     f"--dim SYMBOL=N or --input-shape NAME=D,D,...)")
    from plugnn.onnx.context import DynamicModelError

    try:
        network = plugnn.onnx.load(path, input_shapes=shapes or None)
    except DynamicModelError as exc:  # control flow or shapes the data decides: the dynamic path
        import onnx

        log.debug("%s needs the dynamic path: %s", path, exc)
        return Model(None, f"ONNX model {path}", path, notes, onnx.load(path), {n: tuple(s) for n, s in shapes.items()})
    except PlugnnError as exc:
        unfixed = [n for n in dynamic if n not in shapes]
        hint = ""
        if unfixed:
            hint = "; the model's inputs " + ", ".join(
                f"{n} {_dims_text(dynamic[n])}" for n in unfixed) + " have dynamic dimensions: fix them with " \
                "--input-shape NAME=D,D,... or --input NAME=FILE.npy"
        raise RunError(one_line(exc) + hint) from None
    return Model(network, f"ONNX model {path}", path, notes)


def _onnx_graph_inputs(path: str) -> dict[str, list[int | str | None]]:
    """Graph inputs (initializers excluded) -> dims (int, or the symbolic name / None)."""
    import onnx

    try:
        proto = onnx.load_model(path, load_external_data=False)
    except Exception:  # noqa: BLE001 - whatever is wrong, the importer reports it properly
        return {}
    initializers = {t.name for t in proto.graph.initializer}
    result = {}
    for value in proto.graph.input:
        if value.name in initializers:
            continue
        dims: list[int | str | None] = []
        for dim in value.type.tensor_type.shape.dim:
            dims.append(dim.dim_value if dim.HasField("dim_value") else (dim.dim_param or None))
        result[value.name] = dims
    return result


def _dims_text(dims: list[int | str | None]) -> str:
    return "(" + ", ".join(str(d) if d is not None else "?" for d in dims) + ")"
