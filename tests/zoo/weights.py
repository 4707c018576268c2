"""The zoo's weight format: stripping a model's weights (export side) and filling them back from a
seed (test side), plus valid inputs for a manifest entry. NumPy and onnx only: no torch.

A stripped tensor is an initializer of a float type with more than STRIP_MIN_ELEMENTS elements that
keeps its name, data type and dims but no data; its doc_string records the statistics of the
values torch initialized it with:

    plugnn-zoo: mean=<float> std=<float>

`materialize` fills each such tensor with normal(mean, std) draws (float32 tensors: standard normal
float32 draws times std plus mean; std 0 gives the constant mean exactly) from a `numpy.random.Generator` seeded by
(seed, a hash of the tensor's name), so a tensor's values depend on the seed and its name only,
not on the order of the initializers. Everything else (integer and bool tensors, float tensors of
at most STRIP_MIN_ELEMENTS elements, and float tensors whose values are all integers, such as
masks and anchor grids, unless all equal) is stored exactly.

Import as a helper: `from zoo import weights` in tests (tests/ is on sys.path), or put
tests/zoo on sys.path (scripts/zoo/*.py do).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ZOO_DIR = Path(__file__).resolve().parent
MANIFEST = ZOO_DIR / "manifest.json"
MARK = "plugnn-zoo:"
STRIP_MIN_ELEMENTS = 65  # tensors of 64 elements or fewer are stored exactly
_STATS = re.compile(r"plugnn-zoo: mean=(\S+) std=(\S+)")
_FLOAT_TYPES = (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16)


# ---- the manifest -------------------------------------------------------------------------------


def load_manifest(path: str | os.PathLike[str] = MANIFEST) -> dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def model_path(entry: Mapping[str, Any], zoo_dir: str | os.PathLike[str] = ZOO_DIR) -> Path:
    return Path(zoo_dir) / entry["file"]


# ---- stripping and filling ----------------------------------------------------------------------


def _numel(tensor: TensorProto) -> int:
    return int(np.prod(tensor.dims, dtype=np.int64)) if len(tensor.dims) else 1


def is_stripped(tensor: TensorProto) -> bool:
    return tensor.doc_string.startswith(MARK)


def stats_of(tensor: TensorProto) -> tuple[float, float]:
    """(mean, std) recorded in a stripped tensor's doc_string."""
    match = _STATS.match(tensor.doc_string)
    if match is None:
        raise ValueError(f"tensor {tensor.name!r}: doc_string {tensor.doc_string!r} is not '{MARK} mean=<m> std=<s>'")
    return float(match.group(1)), float(match.group(2))


def should_strip(values: np.ndarray) -> bool:
    """Big float tensors lose their data, except those holding only integers (masks, grids, index
    tables: their exact values matter) unless all their values are equal (regenerated exactly)."""
    if values.dtype.kind != "f" or values.size < STRIP_MIN_ELEMENTS:
        return False
    if not np.all(np.isfinite(values)):
        return False
    flat = values.reshape(-1)
    if np.all(flat == flat[0]):
        return True
    return not np.all(values == np.round(values))


def strip_tensor(tensor: TensorProto) -> None:
    """Replaces `tensor`'s data by the statistics of its values (in place)."""
    values = numpy_helper.to_array(tensor).astype(np.float64)
    mean, std = float(values.mean()), float(values.std())
    flat = values.reshape(-1)
    if np.all(flat == flat[0]):
        std = 0.0
    for field in ("raw_data", "float_data", "double_data", "int32_data"):
        tensor.ClearField(field)
    tensor.doc_string = f"{MARK} mean={mean!r} std={std!r}"


def _graphs(graph: onnx.GraphProto) -> list[onnx.GraphProto]:
    found = [graph]
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                found.extend(_graphs(attr.g))
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for g in attr.graphs:
                    found.extend(_graphs(g))
    return found


def strip(model: onnx.ModelProto) -> dict[str, int]:
    """Strips `model` in place. Constant nodes holding a strippable tensor become initializers first.
    Returns counts: stripped tensors and their elements, kept float tensors above the threshold."""
    counts = {"stripped_tensors": 0, "stripped_elements": 0, "kept_large_float_tensors": 0, "constants_moved": 0}
    for graph in _graphs(model.graph):
        kept_nodes = []
        for node in graph.node:
            value = next((a for a in node.attribute if a.name == "value" and a.type == onnx.AttributeProto.TENSOR), None)
            if node.op_type == "Constant" and node.domain in ("", "ai.onnx") and value is not None \
                    and should_strip(numpy_helper.to_array(value.t)):
                tensor = TensorProto()
                tensor.CopyFrom(value.t)
                tensor.name = node.output[0]
                graph.initializer.append(tensor)
                counts["constants_moved"] += 1
            else:
                kept_nodes.append(node)
        if counts["constants_moved"]:
            del graph.node[:]
            graph.node.extend(kept_nodes)
        for tensor in graph.initializer:
            if tensor.data_type not in _FLOAT_TYPES:
                continue
            values = numpy_helper.to_array(tensor)
            if should_strip(values):
                strip_tensor(tensor)
                counts["stripped_tensors"] += 1
                counts["stripped_elements"] += values.size
            elif values.size >= STRIP_MIN_ELEMENTS:
                counts["kept_large_float_tensors"] += 1
    return counts


def _tensor_seed(seed: int, name: str) -> np.random.SeedSequence:
    key = int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "little")
    return np.random.SeedSequence([int(seed), key])


def fill_values(tensor: TensorProto, seed: int) -> np.ndarray:
    """The values `materialize` gives a stripped tensor."""
    mean, std = stats_of(tensor)
    dtype = helper.tensor_dtype_to_np_dtype(tensor.data_type)
    shape = tuple(tensor.dims)
    if std == 0.0:
        return np.full(shape, mean, dtype=dtype)
    rng = np.random.default_rng(_tensor_seed(seed, tensor.name))
    if dtype == np.float32:  # normal(mean, std) drawn in float32: half the time and memory of float64
        values = rng.standard_normal(shape, dtype=np.float32)
        values *= np.float32(std)
        values += np.float32(mean)
        return values
    return rng.normal(mean, std, size=shape).astype(dtype)


def stripped_tensors(model: onnx.ModelProto) -> list[TensorProto]:
    return [t for g in _graphs(model.graph) for t in g.initializer if is_stripped(t)]


def materialize(path_or_proto: str | os.PathLike[str] | bytes | onnx.ModelProto, seed: int) -> onnx.ModelProto:
    """A copy of the stripped model with every stripped tensor filled from `seed` (the input is not modified)."""
    if isinstance(path_or_proto, onnx.ModelProto):
        model = onnx.ModelProto()
        model.CopyFrom(path_or_proto)
    elif isinstance(path_or_proto, (bytes, bytearray)):
        model = onnx.load_from_string(bytes(path_or_proto))
    else:
        model = onnx.load(os.fspath(path_or_proto))
    for tensor in stripped_tensors(model):
        values = fill_values(tensor, seed)
        tensor.raw_data = values.astype(values.dtype.newbyteorder("<"), copy=False).tobytes()
    return model


# ---- inputs -------------------------------------------------------------------------------------


def bindings(entry: Mapping[str, Any], shape_kind: str, batch: int) -> dict[str, int]:
    """The symbol -> size map for `shape_kind` ("ci" or "full") with `batch`."""
    if shape_kind not in entry["shapes"]:
        raise KeyError(f"{entry['name']}: no shape kind {shape_kind!r}; has {sorted(entry['shapes'])}")
    sizes = dict(entry["shapes"][shape_kind])
    sizes["batch"] = int(batch)
    return sizes


def concrete(dims: list[Any], sizes: Mapping[str, int]) -> list[int]:
    return [int(sizes[d]) if isinstance(d, str) else int(d) for d in dims]


def input_shapes(entry: Mapping[str, Any], shape_kind: str, batch: int) -> dict[str, tuple[int, ...]]:
    """{input name: shape}, as `plugnn.onnx.load(..., input_shapes=)` takes it."""
    sizes = bindings(entry, shape_kind, batch)
    return {i["name"]: tuple(concrete(i["dims"], sizes)) for i in entry["inputs"]}


def _sample(recipe: Mapping[str, Any], shape: tuple[int, ...], dtype: np.dtype, rng: np.random.Generator) -> np.ndarray:
    kind = recipe["kind"]
    if kind == "normal":
        return rng.normal(recipe.get("mean", 0.0), recipe.get("std", 1.0), size=shape).astype(dtype)
    if kind == "uniform":
        return rng.uniform(recipe["low"], recipe["high"], size=shape).astype(dtype)
    if kind == "integers":
        return rng.integers(recipe["low"], recipe["high"], size=shape).astype(dtype)
    if kind == "ones":
        return np.ones(shape, dtype)
    if kind == "zeros":
        return np.zeros(shape, dtype)
    raise ValueError(f"unknown input recipe {recipe!r}")


def make_inputs(entry: Mapping[str, Any], shape_kind: str, batch: int, seed: int) -> dict[str, np.ndarray]:
    """Valid inputs for the manifest entry at `shape_kind` ("ci" or "full") and `batch`.

    Each batch item is drawn from its own generator (seed, input index, item index), so the first
    items at batch 4 equal the item at batch 1: a model's batch-4 output starts with its batch-1 output.
    """
    sizes = bindings(entry, shape_kind, batch)
    out = {}
    for index, spec in enumerate(entry["inputs"]):
        dims = spec["dims"]
        shape = concrete(dims, sizes)
        dtype = np.dtype(spec["dtype"])
        axis = dims.index("batch")
        item_shape = tuple(shape[:axis] + shape[axis + 1:])
        items = [_sample(spec["values"], item_shape, dtype, np.random.default_rng([int(seed), index, item]))
                 for item in range(batch)]
        out[spec["name"]] = np.stack(items, axis=axis)
    return out


def relative_difference(ours: np.ndarray, reference: np.ndarray) -> float:
    """max |ours - reference| / max |reference| (the zoo's agreement measure; 0 when both are all zeros)."""
    difference = float(np.max(np.abs(ours.astype(np.float64) - reference.astype(np.float64)), initial=0.0))
    scale = float(np.max(np.abs(reference.astype(np.float64)), initial=0.0))
    if scale == 0.0:
        return 0.0 if difference == 0.0 else float("inf")
    return difference / scale


def operators(model: onnx.ModelProto) -> list[str]:
    """The sorted operator types the model's graphs use (domain-qualified outside the default domain)."""
    ops = set()
    for graph in _graphs(model.graph):
        for node in graph.node:
            ops.add(node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}")
    return sorted(ops)
