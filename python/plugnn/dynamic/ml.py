"""The ai.onnx.ml operators on strings and maps, as runtime steps of the dynamic path:

- ZipMap: scores [N, C] -> a sequence (Python list) of N maps (dicts) from class label (int or
  str) to float, as onnxruntime's InferenceSession returns it (keys in ascending order);
- LabelEncoder (ML opsets 1, 2 and 4), CategoryMapper: a lookup table from keys to values
  (strings, int64, floats; a missing key gives the default);
- OneHotEncoder on string categories;
- a classifier with string class labels (TreeEnsembleClassifier, LinearClassifier,
  SVMClassifier): the node runs, with class indices as its labels, as a sub-program on the
  backends (plugnn.onnx's converter), and the runtime picks each row's string.

Each reads its inputs from the environment and writes its outputs there; errors are RunError
(the data) or ModelError (the attributes) naming the node.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from plugnn.dynamic.strings import is_string_array
from plugnn.errors import ModelError

Step = Any  # plugnn.dynamic.control.Step (which imports this module)

ML = "ai.onnx.ml"


def _attribute_error(step: Step, message: str) -> ModelError:
    return ModelError(f"{step.program.source}: {step.label}: {message}")


def _strings(values: Any) -> list[str]:
    return [v.decode() if isinstance(v, bytes) else str(v) for v in values]


def _labels(step: Step, ints: str, strings: str) -> list[Any]:
    a, b = step.attr(ints), step.attr(strings)
    if (a is None) == (b is None):
        raise _attribute_error(step, f"exactly one of {ints!r} and {strings!r} must be given")
    return [int(v) for v in a] if a is not None else _strings(b)


# ---- ZipMap ------------------------------------------------------------------------------------


def _zip_map(step: Step) -> None:
    cache = step.program.__dict__.setdefault("ml_zip_labels", {})
    plan = cache.get(step.index)
    if plan is None:  # (labels in ascending order: onnxruntime's maps are ordered by key, their columns)
        labels = _labels(step, "classlabels_int64s", "classlabels_strings")
        order = sorted(range(len(labels)), key=lambda k: labels[k])
        plan = cache[step.index] = ([labels[k] for k in order], None if order == list(range(len(labels))) else order)
    keys, order = plan
    x = step.tensor(0, "X")
    if x.dtype.kind != "f":
        raise step.error(f"input 0 (X) is {x.dtype} {list(x.shape)}; ZipMap takes float scores")
    rows = x.reshape(1, -1) if x.ndim == 1 else x
    if rows.ndim != 2 or rows.shape[1] != len(keys):
        raise step.error(f"input 0 (X) has shape {list(x.shape)}; ZipMap with {len(keys)} labels takes "
                         f"[N, {len(keys)}]")
    values = (rows if order is None else rows[:, order]).tolist()
    step.set(0, [dict(zip(keys, row)) for row in values])


# ---- lookup tables -----------------------------------------------------------------------------


def _table_values(step: Step, prefix: str) -> tuple[list[Any], np.dtype] | None:
    """The keys_ / values_ attribute (strings, int64s, floats or a tensor) and its element type."""
    for suffix, dtype in (("strings", np.dtype(object)), ("int64s", np.dtype(np.int64)),
                          ("floats", np.dtype(np.float32))):
        value = step.attr(f"{prefix}_{suffix}")
        if value is not None:
            return (_strings(value) if suffix == "strings" else list(value)), dtype
    tensor = step.attr(f"{prefix}_tensor")
    if tensor is not None:
        from onnx import numpy_helper

        array = numpy_helper.to_array(tensor).reshape(-1)
        if array.dtype.kind in "OSU":
            return _strings(array.tolist()), np.dtype(object)
        return array.tolist(), array.dtype
    return None


def _default(step: Step, dtype: np.dtype) -> Any:
    tensor = step.attr("default_tensor")
    if tensor is not None:
        from onnx import numpy_helper

        value = numpy_helper.to_array(tensor).reshape(-1)
        if value.size != 1:
            raise _attribute_error(step, "attribute 'default_tensor' must hold one value")
        item = value[0]
        return item.decode() if isinstance(item, bytes) else (str(item) if dtype == np.dtype(object) else item)
    if dtype == np.dtype(object):
        value = step.attr("default_string", "_Unused")
        return value.decode() if isinstance(value, bytes) else str(value)
    if dtype.kind == "i":
        return int(step.attr("default_int64", -1))
    return float(step.attr("default_float", -0.0))


def _key(value: Any) -> Any:
    """A lookup key: NaN keys equal each other (ML opset 4)."""
    if isinstance(value, float) and value != value:
        return "nan"
    return value


def _lookup(step: Step, x: np.ndarray, keys: list[Any], values: list[Any], out_dtype: np.dtype,
            default: Any) -> None:
    if len(keys) != len(values):
        raise _attribute_error(step, f"{len(keys)} keys and {len(values)} values; a table has one value per key")
    table = {_key(k): v for k, v in zip(keys, values)}
    out = np.empty(x.shape, out_dtype)
    flat_in, flat_out = x.reshape(-1), out.reshape(-1)
    for i, element in enumerate(flat_in.tolist()):
        flat_out[i] = table.get(_key(element), default)
    step.set(0, out)


def _input_matching(step: Step, key_dtype: np.dtype) -> np.ndarray:
    x = step.tensor(0, "X")
    if key_dtype == np.dtype(object):
        if not is_string_array(x) and x.dtype.kind != "U":
            raise step.error(f"input 0 (X) is {x.dtype} {list(x.shape)}; the keys are strings")
        return x.astype(object)
    if is_string_array(x) or x.dtype.kind not in "iuf":
        raise step.error(f"input 0 (X) is {x.dtype} {list(x.shape)}; the keys are {key_dtype}")
    if key_dtype.kind == "i":
        if x.dtype.kind == "f":
            raise step.error(f"input 0 (X) is {x.dtype}; the keys are int64")
        return x.astype(np.int64)
    return x.astype(key_dtype)


def _label_encoder(step: Step) -> None:
    classes = step.attr("classes_strings")
    if classes is not None:  # ML opset 1: strings <-> their index
        names = _strings(classes)
        x = step.tensor(0, "X")
        if is_string_array(x) or x.dtype.kind == "U":
            _lookup(step, x.astype(object), names, list(range(len(names))), np.dtype(np.int64),
                    int(step.attr("default_int64", -1)))
        else:
            default = step.attr("default_string", "_Unused")
            _lookup(step, _input_matching(step, np.dtype(np.int64)), list(range(len(names))), names,
                    np.dtype(object), default.decode() if isinstance(default, bytes) else str(default))
        return
    keys, values = _table_values(step, "keys"), _table_values(step, "values")
    if keys is None or values is None:
        raise _attribute_error(step, "LabelEncoder needs keys_* and values_* attributes (or classes_strings)")
    (key_list, key_dtype), (value_list, value_dtype) = keys, values
    x = _input_matching(step, key_dtype)
    _lookup(step, x, [float(k) if key_dtype.kind == "f" else k for k in key_list], value_list, value_dtype,
            _default(step, value_dtype))


def _category_mapper(step: Step) -> None:
    ints, strings = step.attr("cats_int64s"), step.attr("cats_strings")
    if ints is None or strings is None or len(ints) != len(strings):
        raise _attribute_error(step, "CategoryMapper needs 'cats_int64s' and 'cats_strings' of one length")
    x = step.tensor(0, "X")
    numbers, names = [int(v) for v in ints], _strings(strings)
    if is_string_array(x) or x.dtype.kind == "U":
        _lookup(step, x.astype(object), names, numbers, np.dtype(np.int64), int(step.attr("default_int64", -1)))
    elif x.dtype.kind in "iu":
        default = step.attr("default_string", "_Unused")
        _lookup(step, x.astype(np.int64), numbers, names, np.dtype(object),
                default.decode() if isinstance(default, bytes) else str(default))
    else:
        raise step.error(f"input 0 (X) is {x.dtype}; CategoryMapper takes strings or int64")


def _one_hot_encoder(step: Step) -> None:
    strings = step.attr("cats_strings")
    if strings is None:
        raise _attribute_error(step, "a OneHotEncoder on the runtime takes 'cats_strings'")
    cats = {c: i for i, c in enumerate(_strings(strings))}
    x = step.tensor(0, "X")
    if not (is_string_array(x) or x.dtype.kind == "U"):
        raise step.error(f"input 0 (X) is {x.dtype}; the categories are strings")
    zeros = int(step.attr("zeros", 1))
    out = np.zeros(x.shape + (len(cats),), np.float32)
    flat = out.reshape(-1, len(cats))
    for i, element in enumerate(x.reshape(-1).tolist()):
        at = cats.get(element)
        if at is None:
            if not zeros:
                raise step.error(f"element {element!r} is not one of the categories (attribute 'zeros' is 0)")
            continue
        flat[i, at] = 1.0
    step.set(0, out)


# ---- classifiers with string labels ----------------------------------------------------------------


def _string_classifier(step: Step) -> None:
    """The node with class indices for labels, run as a sub-program (on the backends); then each
    row's index becomes its string."""
    node = step.node
    names = _strings(step.attr("classlabels_strings") or [])
    if not names or not node.output or not node.output[0]:
        raise _attribute_error(step, f"{node.op_type} on the runtime takes 'classlabels_strings'")
    key = (step.index, "index_labels")
    sub = step.program.subprograms.get(key)
    if sub is None:
        from onnx import helper

        ints = "classlabels_int64s" if node.op_type == "TreeEnsembleClassifier" else "classlabels_ints"
        copy = helper.make_node(node.op_type, list(node.input), [f"{node.output[0]}/index"] + list(node.output[1:]),
                                name=node.name, domain=node.domain)
        copy.attribute.extend(a for a in node.attribute if a.name != "classlabels_strings")
        copy.attribute.append(helper.make_attribute(ints, list(range(len(names)))))
        outputs = [n for n in copy.output if n]
        graph = helper.make_graph([copy], f"{node.op_type}_indices", [], [])
        sub = step.program.child(key, graph, [copy], step.program.opset, [], outputs, {},
                                 f"{step.label} (class indices)")
    results = step.run_sub(sub, {}, "classifier")
    index = np.asarray(results[0])
    labels = np.empty(len(names), object)
    labels[:] = names
    step.set(0, labels[index])
    for k, value in enumerate(results[1:], start=1):
        step.set(k, value)


def _classifier(step: Step) -> None:
    if step.attr("classlabels_strings") is not None:
        _string_classifier(step)
        return
    raise step.error(f"{step.node.op_type} runs in the runtime only with string class labels")


HANDLERS: dict[str, Callable[[Step], None]] = {
    "ZipMap": _zip_map,
    "LabelEncoder": _label_encoder,
    "CategoryMapper": _category_mapper,
    "OneHotEncoder": _one_hot_encoder,
    "TreeEnsembleClassifier": _classifier,
    "LinearClassifier": _classifier,
    "SVMClassifier": _classifier,
}
