"""ai.onnx.ml operators that are plain arithmetic, imported as layers of the existing kinds:
Scaler, Normalizer, Binarizer, Imputer, LinearRegressor, LinearClassifier, SVMRegressor,
SVMClassifier (kernels as matrix products and elementwise layers), ArrayFeatureExtractor (a
gather), OneHotEncoder on integers, FeatureVectorizer (a concatenation).

The operators on strings and maps (LabelEncoder, CategoryMapper, ZipMap, OneHotEncoder on
strings, a classifier's string labels) are runtime steps of plugnn's dynamic path
(plugnn.dynamic.ml): their converters raise DynamicModelError, as the string operators do.
Semantics follow ONNX's ML operator documentation and, where it is open, onnxruntime.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from plugnn.descriptors import ActivationKind, BinaryOp, ReduceOp, UnaryOp
from plugnn.network import Tensor
from plugnn.onnx.context import DynamicModelError, NodeContext
from plugnn.onnx.registry import op
from plugnn.tensor import DataType

ML = "ai.onnx.ml"
_TRANSFORMS = ("NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO", "PROBIT")


def _float_rows(ctx: NodeContext, i: int = 0, what: str = "X", rows: bool = True) -> Tensor:
    """Input i as float32 (the ML operators' output type for numeric inputs), [N, C] when `rows`."""
    x = ctx.tensor(i, what)
    if x.dtype is DataType.BOOL or x.dtype.numpy_name == "object":
        raise ctx.error(f"input {i} ({what}) is {x.dtype.numpy_name}; the operator takes numbers")
    if x.dtype is not DataType.FLOAT32:
        x = ctx.network.add_cast(x, DataType.FLOAT32, name=ctx.name(f"{what}_float"))
    if rows:
        if len(x.shape) == 1:
            x = ctx.network.add_reshape(x, (1, x.shape[0]), name=ctx.name("rows"))
        elif len(x.shape) != 2:
            raise ctx.error(f"input {i} ({what}) has shape {list(x.shape)}; the operator takes [N, C] (or [C])")
    return x


def _floats(ctx: NodeContext, name: str, required: bool = False) -> np.ndarray | None:
    value = ctx.attr(name)
    if value is None:
        if required:
            raise ctx.error(f"attribute {name!r} is required")
        return None
    return np.asarray(value, np.float32).reshape(-1)


def _const(ctx: NodeContext, array: Any, role: str) -> Tensor:
    return ctx.array_tensor(np.asarray(array, np.float32), role)


def _binary(ctx: NodeContext, op_: BinaryOp, a: Any, b: Any, role: str) -> Tensor:
    return ctx.network.add_elementwise(op_, a, b, name=ctx.name(role))


def _per_column(ctx: NodeContext, values: np.ndarray, columns: int, name: str) -> np.ndarray:
    """A per-feature attribute: one value for all columns, or one per column."""
    if values.size == 1:
        return np.full(columns, values[0], np.float32)
    if values.size != columns:
        raise ctx.error(f"attribute {name!r} has {values.size} values; X has {columns} columns (give 1 or {columns})")
    return values


# ---- Scaler, Normalizer, Binarizer, Imputer -----------------------------------------------------


@op("Scaler", ("offset", "scale"), domain=ML)
def scaler(ctx: NodeContext) -> list[Any]:
    x = _float_rows(ctx, rows=False)
    columns = x.shape[-1] if x.shape else 1
    offset = _floats(ctx, "offset")
    scale = _floats(ctx, "scale")
    y = x
    if offset is not None:
        y = _binary(ctx, BinaryOp.SUB, y, _const(ctx, _per_column(ctx, offset, columns, "offset"), "offset"), "offset")
    if scale is not None:
        y = _binary(ctx, BinaryOp.MUL, y, _const(ctx, _per_column(ctx, scale, columns, "scale"), "scale"), "scale")
    if y is x:
        y = ctx.network.add_identity(x, name=ctx.name())
    return [y]


@op("Normalizer", ("norm",), domain=ML)
def normalizer(ctx: NodeContext) -> list[Any]:
    x = _float_rows(ctx)
    norm = str(ctx.attr("norm", "MAX"))
    net = ctx.network
    if norm == "MAX":  # onnxruntime divides by the largest value of the row (not magnitude)
        size = net.add_reduce(ReduceOp.MAX, x, [1], True, name=ctx.name("max"))
    elif norm == "L1":
        size = net.add_reduce(ReduceOp.L1, x, [1], True, name=ctx.name("l1"))
    elif norm == "L2":
        size = net.add_reduce(ReduceOp.L2, x, [1], True, name=ctx.name("l2"))
    else:
        raise ctx.unsupported_value("norm", norm, "MAX, L1, L2")
    return [_binary(ctx, BinaryOp.DIV, x, size, "divide")]


@op("Binarizer", ("threshold",), domain=ML)
def binarizer(ctx: NodeContext) -> list[Any]:
    x = ctx.tensor(0, "X")
    if not x.dtype.is_float:
        raise ctx.error(f"input 0 (X) is {x.dtype.numpy_name}; Binarizer takes float tensors")
    threshold = ctx.array_tensor(np.asarray(float(ctx.attr("threshold", 0.0)), x.dtype.numpy_dtype), "threshold")
    above = _binary(ctx, BinaryOp.GREATER, x, threshold, "above")
    return [ctx.network.add_cast(above, x.dtype, name=ctx.name())]


@op("Imputer", ("imputed_value_floats", "imputed_value_int64s", "replaced_value_float", "replaced_value_int64"),
    domain=ML)
def imputer(ctx: NodeContext) -> list[Any]:
    x = ctx.tensor(0, "X")
    floats = ctx.attr("imputed_value_floats")
    ints = ctx.attr("imputed_value_int64s")
    if (floats is None) == (ints is None):
        raise ctx.error("exactly one of 'imputed_value_floats' and 'imputed_value_int64s' must be given")
    columns = x.shape[-1] if x.shape else 1
    net = ctx.network
    if floats is not None:
        if not x.dtype.is_float:
            raise ctx.error(f"input 0 (X) is {x.dtype.numpy_name}; imputed_value_floats replaces in float tensors")
        values = _per_column(ctx, np.asarray(floats, np.float32).reshape(-1), columns, "imputed_value_floats")
        replaced = float(ctx.attr("replaced_value_float", 0.0))
        if np.isnan(replaced):
            hit = net.add_unary(UnaryOp.IS_NAN, x, name=ctx.name("is_nan"))
        else:
            hit = _binary(ctx, BinaryOp.EQUAL, x, ctx.array_tensor(np.asarray(replaced, x.dtype.numpy_dtype),
                                                                     "replaced"), "is_replaced")
        fill = ctx.array_tensor(values.astype(x.dtype.numpy_dtype), "imputed")
    else:
        if x.dtype is not DataType.INT64:
            raise ctx.error(f"input 0 (X) is {x.dtype.numpy_name}; imputed_value_int64s replaces in int64 tensors")
        values = np.asarray(ints, np.int64).reshape(-1)
        if values.size not in (1, columns):
            raise ctx.error(f"attribute 'imputed_value_int64s' has {values.size} values; X has {columns} columns")
        values = np.broadcast_to(values, (columns,)).copy()
        replaced_int = int(ctx.attr("replaced_value_int64", 0))
        hit = _binary(ctx, BinaryOp.EQUAL, x, ctx.array_tensor(np.asarray(replaced_int, np.int64), "replaced"),
                      "is_replaced")
        fill = ctx.array_tensor(values, "imputed")
    return [net.add_select(hit, fill, x, name=ctx.name())]


# ---- linear models -------------------------------------------------------------------------------


def _coefficients(ctx: NodeContext, targets: int, features: int) -> np.ndarray:
    coefficients = _floats(ctx, "coefficients", required=True)
    if coefficients.size != targets * features:
        raise ctx.error(f"attribute 'coefficients' has {coefficients.size} values; {targets} target(s) x "
                        f"{features} features need {targets * features}")
    return coefficients.reshape(targets, features)


def _post_transform(ctx: NodeContext, scores: Tensor, post: str) -> Tensor:
    """onnxruntime's post transforms over the last axis of [N, K] scores."""
    net = ctx.network
    if post == "NONE":
        return scores
    if post == "LOGISTIC":
        return net.add_activation(scores, ActivationKind.SIGMOID, name=ctx.name("logistic"))
    if post == "SOFTMAX":
        return net.add_softmax(scores, -1, name=ctx.name("softmax"))
    if post == "SOFTMAX_ZERO":
        # exp(s - max) over the non-zero scores; a zero score stays 0 (onnxruntime skips |s| <= 1e-7)
        tiny = _const(ctx, 1e-7, "tiny")
        magnitude = net.add_unary(UnaryOp.ABS, scores, name=ctx.name("magnitude"))
        zero = _binary(ctx, BinaryOp.LESS_EQUAL, magnitude, tiny, "is_zero")
        low = _const(ctx, -np.finfo(np.float32).max, "lowest")
        kept = net.add_select(zero, low, scores, name=ctx.name("kept"))
        top = net.add_reduce(ReduceOp.MAX, kept, [-1], True, name=ctx.name("max"))
        e = net.add_unary(UnaryOp.EXP, _binary(ctx, BinaryOp.SUB, scores, top, "shifted"), name=ctx.name("exp"))
        e = net.add_select(zero, _const(ctx, 0.0, "zero"), e, name=ctx.name("exp_kept"))
        total = net.add_reduce(ReduceOp.SUM, e, [-1], True, name=ctx.name("sum"))
        return _binary(ctx, BinaryOp.DIV, e, total, "softmax_zero")
    # PROBIT: sqrt(2) * erfinv(2 s - 1) has no layer: refused
    raise ctx.unsupported_value("post_transform", post, "NONE, LOGISTIC, SOFTMAX, SOFTMAX_ZERO")


@op("LinearRegressor", ("coefficients", "intercepts", "post_transform", "targets"), domain=ML)
def linear_regressor(ctx: NodeContext) -> list[Any]:
    x = _float_rows(ctx)
    targets = int(ctx.attr("targets", 1))
    coefficients = _coefficients(ctx, targets, x.shape[1])
    intercepts = _floats(ctx, "intercepts")
    bias = None if intercepts is None else _const(ctx, _per_column(ctx, intercepts, targets, "intercepts"),
                                                  "intercepts")
    y = ctx.network.add_fully_connected(x, _const(ctx, coefficients, "coefficients"), bias, transpose_b=True,
                                        name=ctx.name("scores"))
    post = str(ctx.attr("post_transform", "NONE"))
    if post not in ("NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO"):
        raise ctx.unsupported_value("post_transform", post, "NONE, LOGISTIC, SOFTMAX, SOFTMAX_ZERO")
    return [_post_transform(ctx, y, post)]


def labels_output(ctx: NodeContext, labels: np.ndarray, index: Tensor) -> Tensor:
    """The label of each row from its class index: a gather of the int64 labels. String labels
    are picked by the runtime (plugnn.dynamic.ml), which runs the node with index labels."""
    if labels.dtype == np.dtype(object):
        raise DynamicModelError(f"{ctx.importer.source}: {ctx.label}: its class labels are strings (run-time values "
                                f"of plugnn's dynamic path: plugnn.InferenceSession, plugnn.onnx.backend)")
    if np.array_equal(labels, np.arange(labels.size)):
        return ctx.network.add_identity(index, name=ctx.name("label"))
    return ctx.network.add_gather(ctx.array_tensor(labels, "labels"), index, 0, name=ctx.name("label"))


def class_labels(ctx: NodeContext, ints_name: str = "classlabels_ints") -> np.ndarray:
    ints, strings = ctx.attr(ints_name), ctx.attr("classlabels_strings")
    if (ints is None) == (strings is None):
        raise ctx.error(f"exactly one of {ints_name!r} and 'classlabels_strings' must be given")
    if ints is not None:
        return np.asarray([int(v) for v in ints], np.int64)
    array = np.empty(len(strings), object)
    array[:] = [str(s) for s in strings]
    return array


def _argmax_index(ctx: NodeContext, scores: Tensor) -> Tensor:
    index = ctx.network.add_reduce(ReduceOp.ARG_MAX, scores, [1], False, name=ctx.name("argmax"))
    if index.dtype is not DataType.INT64:
        index = ctx.network.add_cast(index, DataType.INT64, name=ctx.name("index"))
    return index


def _two_class_scores(ctx: NodeContext, s: Tensor, post: str, what: str) -> tuple[Tensor, Tensor]:
    """One score column s of a two-class model: (index = s > 0, Z = [1 - p, p] with p = post(s))."""
    net = ctx.network
    positive = _binary(ctx, BinaryOp.GREATER, s, _const(ctx, 0.0, "zero"), "positive")
    index = net.add_cast(net.add_reshape(positive, (-1,), name=ctx.name("flat")), DataType.INT64,
                         name=ctx.name("index"))
    if post not in ("NONE", "LOGISTIC"):
        raise ctx.error(f"post_transform {post} on a two-class {what} with one score is not supported by plugnn "
                        f"(NONE, LOGISTIC are)")
    p = _post_transform(ctx, s, post)
    q = _binary(ctx, BinaryOp.SUB, _const(ctx, 1.0, "one"), p, "complement")
    return index, net.add_concat([q, p], 1, name=ctx.name("scores"))


@op("LinearClassifier", ("classlabels_ints", "classlabels_strings", "coefficients", "intercepts", "multi_class",
                         "post_transform"), domain=ML, outputs_note="outputs Y (label) and Z (scores)")
def linear_classifier(ctx: NodeContext) -> list[Any]:
    x = _float_rows(ctx)
    labels = class_labels(ctx)
    intercepts = _floats(ctx, "intercepts")
    coefficients = _floats(ctx, "coefficients", required=True)
    features = x.shape[1]
    if coefficients.size % max(features, 1):
        raise ctx.error(f"attribute 'coefficients' has {coefficients.size} values, not a multiple of the "
                        f"{features} features")
    classes = coefficients.size // max(features, 1)
    bias = None
    if intercepts is not None:
        if intercepts.size != classes:
            raise ctx.error(f"attribute 'intercepts' has {intercepts.size} values; the coefficients give {classes} "
                            f"class(es)")
        bias = _const(ctx, intercepts, "intercepts")
    scores = ctx.network.add_fully_connected(x, _const(ctx, coefficients.reshape(classes, features), "coefficients"),
                                             bias, transpose_b=True, name=ctx.name("scores"))
    post = str(ctx.attr("post_transform", "NONE"))
    if post not in _TRANSFORMS:
        raise ctx.unsupported_value("post_transform", post, ", ".join(_TRANSFORMS))
    if classes == 1 and labels.size == 2:
        index, z = _two_class_scores(ctx, scores, post, "linear classifier")
        return [labels_output(ctx, labels, index), z]
    if classes == 1:
        raise ctx.error(f"one score column with {labels.size} class labels: onnxruntime labels such rows 0 / 1; "
                        f"plugnn does not reproduce that")
    if labels.size != classes:
        raise ctx.error(f"{labels.size} class labels for {classes} score columns")
    index = _argmax_index(ctx, scores)
    return [labels_output(ctx, labels, index), _post_transform(ctx, scores, post)]


# ---- support vector machines -------------------------------------------------------------------


def _kernel(ctx: NodeContext, x: Tensor, vectors: np.ndarray) -> Tensor:
    """K(x, sv) for every row of x and support vector: [N, V] (LINEAR, POLY, RBF, SIGMOID)."""
    net = ctx.network
    kind = str(ctx.attr("kernel_type", "LINEAR"))
    params = _floats(ctx, "kernel_params")
    gamma, coef0, degree = (float(params[0]), float(params[1]), float(params[2])) if params is not None \
        and params.size >= 3 else (0.0, 0.0, 3.0)
    dot = net.add_fully_connected(x, _const(ctx, vectors, "support_vectors"), None, transpose_b=True,
                                  name=ctx.name("dot"))
    if kind == "LINEAR":
        return dot
    if kind == "POLY":
        base = net.add_activation(dot, ActivationKind.LINEAR, gamma, coef0, name=ctx.name("poly_base"))
        return _binary(ctx, BinaryOp.POWER, base, _const(ctx, degree, "degree"), "poly")
    if kind == "SIGMOID":
        base = net.add_activation(dot, ActivationKind.LINEAR, gamma, coef0, name=ctx.name("sigmoid_base"))
        return net.add_activation(base, ActivationKind.TANH, name=ctx.name("tanh"))
    if kind == "RBF":
        # exp(-gamma * |x - sv|^2) = exp(-gamma * (|x|^2 - 2 x.sv + |sv|^2))
        squares = net.add_reduce(ReduceOp.SUM_SQUARE, x, [1], True, name=ctx.name("x_squares"))
        sv_squares = _const(ctx, np.sum(vectors.astype(np.float64) ** 2, axis=1).astype(np.float32)[None, :],
                            "sv_squares")
        distance = _binary(ctx, BinaryOp.ADD, _binary(ctx, BinaryOp.SUB, squares,
                                                      _binary(ctx, BinaryOp.MUL, dot, _const(ctx, 2.0, "two"),
                                                              "two_dot"), "partial"), sv_squares, "distance")
        distance = net.add_activation(distance, ActivationKind.RELU, name=ctx.name("clamped"))
        scaled = _binary(ctx, BinaryOp.MUL, distance, _const(ctx, -gamma, "minus_gamma"), "scaled")
        return net.add_unary(UnaryOp.EXP, scaled, name=ctx.name("rbf"))
    raise ctx.unsupported_value("kernel_type", kind, "LINEAR, POLY, RBF, SIGMOID")


def _vectors(ctx: NodeContext, features: int) -> np.ndarray:
    vectors = _floats(ctx, "support_vectors", required=True)
    if vectors.size % max(features, 1):
        raise ctx.error(f"attribute 'support_vectors' has {vectors.size} values, not a multiple of the {features} "
                        f"features")
    return vectors.reshape(-1, features)


@op("SVMRegressor", ("coefficients", "kernel_params", "kernel_type", "n_supports", "one_class", "post_transform",
                     "rho", "support_vectors"), domain=ML)
def svm_regressor(ctx: NodeContext) -> list[Any]:
    x = _float_rows(ctx)
    net = ctx.network
    coefficients = _floats(ctx, "coefficients", required=True)
    rho = _floats(ctx, "rho")
    rho_value = float(rho[0]) if rho is not None and rho.size else 0.0
    n_supports = int(ctx.attr("n_supports", 0))
    if n_supports > 0:
        vectors = _vectors(ctx, x.shape[1])
        if vectors.shape[0] != n_supports or coefficients.size != n_supports:
            raise ctx.error(f"{vectors.shape[0]} support vectors and {coefficients.size} coefficients for n_supports "
                            f"= {n_supports}")
        k = _kernel(ctx, x, vectors)
        y = net.add_fully_connected(k, _const(ctx, coefficients.reshape(-1, 1), "coefficients"),
                                    _const(ctx, [rho_value], "rho"), name=ctx.name("score"))
    else:  # linear SVM: coefficients over the features
        if coefficients.size != x.shape[1]:
            raise ctx.error(f"a linear SVM (n_supports 0) needs one coefficient per feature ({x.shape[1]}), got "
                            f"{coefficients.size}")
        y = net.add_fully_connected(x, _const(ctx, coefficients.reshape(-1, 1), "coefficients"),
                                    _const(ctx, [rho_value], "rho"), name=ctx.name("score"))
    if int(ctx.attr("one_class", 0)):
        positive = _binary(ctx, BinaryOp.GREATER, y, _const(ctx, 0.0, "zero"), "inlier")
        y = _binary(ctx, BinaryOp.SUB, _binary(ctx, BinaryOp.MUL, net.add_cast(positive, DataType.FLOAT32,
                                                                                name=ctx.name("inlier_float")),
                                               _const(ctx, 2.0, "two"), "twice"), _const(ctx, 1.0, "one"), "sign")
    post = str(ctx.attr("post_transform", "NONE"))
    if post != "NONE":
        raise ctx.unsupported_value("post_transform", post, "NONE")
    return [y]


@op("SVMClassifier", ("classlabels_ints", "classlabels_strings", "coefficients", "kernel_params", "kernel_type",
                      "post_transform", "prob_a", "prob_b", "rho", "support_vectors", "vectors_per_class"),
    domain=ML, outputs_note="outputs Y (label) and Z (scores)")
def svm_classifier(ctx: NodeContext) -> list[Any]:
    x = _float_rows(ctx)
    net = ctx.network
    labels = class_labels(ctx)
    classes = labels.size
    per_class = ctx.ints("vectors_per_class", []) or []
    coefficients = _floats(ctx, "coefficients", required=True)
    rho = _floats(ctx, "rho", required=True)
    if ctx.attr("prob_a") is not None:
        raise ctx.error("attributes 'prob_a' / 'prob_b' (Platt scaling, probability=True in scikit-learn) are not "
                        "supported by plugnn's SVMClassifier import; convert the model without probabilities")
    post = str(ctx.attr("post_transform", "NONE"))
    if post != "NONE":
        raise ctx.unsupported_value("post_transform", post, "NONE")
    if not per_class:  # a linear SVM: one coefficient row per class (or one for two classes)
        rows = coefficients.size // max(x.shape[1], 1)
        scores = net.add_fully_connected(x, _const(ctx, coefficients.reshape(rows, x.shape[1]), "coefficients"),
                                         _const(ctx, rho[:rows], "rho"), transpose_b=True, name=ctx.name("scores"))
        if rows == 1 and classes == 2:
            positive = _binary(ctx, BinaryOp.GREATER, scores, _const(ctx, 0.0, "zero"), "positive")
            index = net.add_cast(net.add_reshape(positive, (-1,), name=ctx.name("flat")), DataType.INT64,
                                 name=ctx.name("index"))
            negated = net.add_unary(UnaryOp.NEG, scores, name=ctx.name("negated"))
            return [labels_output(ctx, labels, index), net.add_concat([negated, scores], 1, name=ctx.name("z"))]
        return [labels_output(ctx, labels, _argmax_index(ctx, scores)), scores]
    if len(per_class) != classes:
        raise ctx.error(f"vectors_per_class has {len(per_class)} entries for {classes} classes")
    vectors = _vectors(ctx, x.shape[1])
    total = sum(per_class)
    if vectors.shape[0] != total or coefficients.size != (classes - 1) * total:
        raise ctx.error(f"{vectors.shape[0]} support vectors and {coefficients.size} coefficients do not fit "
                        f"vectors_per_class {per_class} ((classes - 1) x vectors coefficients)")
    pairs = classes * (classes - 1) // 2
    if rho.size != pairs:
        raise ctx.error(f"attribute 'rho' has {rho.size} values; {classes} classes have {pairs} pairs")
    k = _kernel(ctx, x, vectors)
    coef = coefficients.reshape(classes - 1, total)
    starts = np.concatenate([[0], np.cumsum(per_class)])
    # libsvm's one-vs-one decision of pair (i, j): sum over i's vectors of coef[j-1] * K + sum over
    # j's vectors of coef[i] * K + rho; one column per pair in a matrix W [V, pairs].
    weights = np.zeros((total, pairs), np.float32)
    column = 0
    pair_list = []
    for i in range(classes):
        for j in range(i + 1, classes):
            weights[starts[i]:starts[i + 1], column] = coef[j - 1, starts[i]:starts[i + 1]]
            weights[starts[j]:starts[j + 1], column] = coef[i, starts[j]:starts[j + 1]]
            pair_list.append((i, j))
            column += 1
    decisions = net.add_fully_connected(k, _const(ctx, weights, "pair_weights"), _const(ctx, rho, "rho"),
                                        name=ctx.name("decisions"))
    if classes == 2:
        # onnxruntime: label = class 0 when the decision d is > 0, Z = [-d, d]
        negative = _binary(ctx, BinaryOp.LESS_EQUAL, decisions, _const(ctx, 0.0, "zero"), "second")
        index = net.add_cast(net.add_reshape(negative, (-1,), name=ctx.name("flat")), DataType.INT64,
                             name=ctx.name("index"))
        negated = net.add_unary(UnaryOp.NEG, decisions, name=ctx.name("negated"))
        return [labels_output(ctx, labels, index), net.add_concat([negated, decisions], 1, name=ctx.name("z"))]
    # votes: class i wins pair (i, j) when the decision is > 0, else j
    wins = net.add_cast(_binary(ctx, BinaryOp.GREATER, decisions, _const(ctx, 0.0, "zero"), "wins"),
                        DataType.FLOAT32, name=ctx.name("wins_float"))
    for_i = np.zeros((pairs, classes), np.float32)
    for_j = np.zeros((pairs, classes), np.float32)
    for column, (i, j) in enumerate(pair_list):
        for_i[column, i] = 1.0
        for_j[column, j] = 1.0
    losses = _binary(ctx, BinaryOp.SUB, _const(ctx, 1.0, "one"), wins, "losses")
    votes = _binary(ctx, BinaryOp.ADD,
                    net.add_matmul(wins, _const(ctx, for_i, "votes_i"), name=ctx.name("votes_i")),
                    net.add_matmul(losses, _const(ctx, for_j, "votes_j"), name=ctx.name("votes_j")), "votes")
    return [labels_output(ctx, labels, _argmax_index(ctx, votes)), decisions]


# ---- feature plumbing ----------------------------------------------------------------------------


@op("ArrayFeatureExtractor", (), domain=ML)
def array_feature_extractor(ctx: NodeContext) -> list[Any]:
    x = ctx.tensor(0, "X")
    indices = ctx.const(1, "Y")
    if indices.dtype.kind not in "iu":
        raise ctx.error(f"input 1 (Y) is {indices.dtype}; the indices are int64")
    flat = np.asarray(indices, np.int64).reshape(-1)
    last = x.shape[-1] if x.shape else 0
    bad = flat[(flat < 0) | (flat >= last)]
    if bad.size:
        raise ctx.error(f"index {int(bad[0])} is out of range for the last axis of X ({last} elements)")
    return [ctx.network.add_gather(x, ctx.array_tensor(flat, "indices"), len(x.shape) - 1, name=ctx.name())]


@op("FeatureVectorizer", ("inputdimensions",), domain=ML)
def feature_vectorizer(ctx: NodeContext) -> list[Any]:
    dims = ctx.ints("inputdimensions", []) or []
    parts = []
    for i in range(ctx.num_inputs):
        x = _float_rows(ctx, i, f"X{i}", rows=False)
        if len(x.shape) == 1:
            x = ctx.network.add_reshape(x, (1, x.shape[0]), name=ctx.name(f"row{i}"))
        width = x.shape[-1]
        want = dims[i] if i < len(dims) else width
        if len(x.shape) != 2:
            raise ctx.error(f"input {i} has shape {list(x.shape)}; FeatureVectorizer takes [N, C] inputs")
        if want < width:
            x = ctx.network.add_slice(x, [0], [want], [1], name=ctx.name(f"cut{i}"))
        elif want > width:
            pad = ctx.array_tensor(np.zeros((x.shape[0], want - width), np.float32), f"pad{i}")
            x = ctx.network.add_concat([x, pad], 1, name=ctx.name(f"padded{i}"))
        parts.append(x)
    if len(parts) == 1:
        return [ctx.network.add_identity(parts[0], name=ctx.name())]
    return [ctx.network.add_concat(parts, 1, name=ctx.name())]


@op("OneHotEncoder", ("cats_int64s", "cats_strings", "zeros"), domain=ML)
def one_hot_encoder(ctx: NodeContext) -> list[Any]:
    ints, strings = ctx.attr("cats_int64s"), ctx.attr("cats_strings")
    if (ints is None) == (strings is None):
        raise ctx.error("exactly one of 'cats_int64s' and 'cats_strings' must be given")
    if strings is not None:
        raise DynamicModelError(f"{ctx.importer.source}: {ctx.label}: string categories are run-time values of "
                                f"plugnn's dynamic path")
    zeros = int(ctx.attr("zeros", 1))
    if zeros != 1:
        raise ctx.error("attribute 'zeros' = 0 (an unknown category fails the run) is not supported by plugnn's "
                        "OneHotEncoder import; supported: 1 (an unknown category gives a row of zeros)")
    x = ctx.tensor(0, "X")
    if x.dtype.is_float:  # onnxruntime compares a float value's int64 truncation with the categories
        x = ctx.network.add_cast(x, DataType.INT64, name=ctx.name("as_int64"))
    elif x.dtype is not DataType.INT64:
        x = ctx.network.add_cast(x, DataType.INT64, name=ctx.name("as_int64"))
    cats = np.asarray([int(v) for v in ints], np.int64)
    expanded = ctx.network.add_unsqueeze(x, [len(x.shape)], name=ctx.name("expanded"))
    hit = _binary(ctx, BinaryOp.EQUAL, expanded, ctx.array_tensor(cats, "categories"), "matches")
    return [ctx.network.add_cast(hit, DataType.FLOAT32, name=ctx.name())]


# ---- runtime steps (plugnn.dynamic.ml) ---------------------------------------------------------------


def _runtime(ctx: NodeContext) -> list[Any]:
    raise DynamicModelError(f"{ctx.importer.source}: {ctx.label}: {ctx.op_type} works on strings and maps, run-time "
                            f"values of plugnn's dynamic path (plugnn.InferenceSession, plugnn.onnx.backend)")


for _name, _attributes in (("ZipMap", ("classlabels_int64s", "classlabels_strings")),
                           ("LabelEncoder", ("default_float", "default_int64", "default_string", "default_tensor",
                                             "keys_floats", "keys_int64s", "keys_strings", "keys_tensor",
                                             "values_floats", "values_int64s", "values_strings", "values_tensor",
                                             "classes_strings")),
                           ("CategoryMapper", ("cats_int64s", "cats_strings", "default_int64", "default_string"))):
    op(_name, _attributes, domain=ML)(_runtime)
