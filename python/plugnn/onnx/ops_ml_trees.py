"""ai.onnx.ml tree ensembles: TreeEnsembleRegressor, TreeEnsembleClassifier (ML opsets 1 and 3)
and TreeEnsemble (ML opset 5), imported as one TREE_ENSEMBLE layer (backend_api.h, "Tree
ensembles").

The node attributes (tree id, node id, mode, feature, threshold, children, leaf weights keyed by
tree and node id) become the layer's arrays: each tree's nodes in an order where children come
after their parent (so every walk ends), leaf weights per leaf. A BRANCH_MEMBER node of
TreeEnsemble (a set test) becomes a chain of EQ tests sharing its children.

The classifier's outputs follow onnxruntime (the ONNX-ML text leaves the two-class case open):
more than two classes: label = the class of the largest score (after base values), scores after
post_transform; two classes: onnxruntime's rules for which class is positive, when only one
class is scored by the leaves ("binary case"), whose weights' signs decide how the second
score is formed. Labels are int64 (classlabels_int64s) or strings (classlabels_strings: the
label index is computed on the backends, the strings picked by a runtime step, plugnn.dynamic).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from plugnn.descriptors import PN_TREE_MISSING_TRUE, BinaryOp, TreeNodeMode, UnaryOp
from plugnn.network import Tensor
from plugnn.onnx.context import NodeContext
from plugnn.onnx.registry import op
from plugnn.tensor import DataType

ML = "ai.onnx.ml"

_MODES = {"BRANCH_LEQ": TreeNodeMode.LEQ, "BRANCH_LT": TreeNodeMode.LT, "BRANCH_GTE": TreeNodeMode.GTE,
          "BRANCH_GT": TreeNodeMode.GT, "BRANCH_EQ": TreeNodeMode.EQ, "BRANCH_NEQ": TreeNodeMode.NEQ,
          "LEAF": TreeNodeMode.LEAF}
# TreeEnsemble (ML opset 5) numbers its modes and transforms.
_MODES_V5 = {0: TreeNodeMode.LEQ, 1: TreeNodeMode.LT, 2: TreeNodeMode.GTE, 3: TreeNodeMode.GT, 4: TreeNodeMode.EQ,
             5: TreeNodeMode.NEQ}
_MEMBER_V5 = 6
_AGGREGATES = ("AVERAGE", "SUM", "MIN", "MAX")
_TRANSFORMS = ("NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO", "PROBIT")
_TRANSFORMS_V5 = ("NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT")

_NODE_ATTRIBUTES = ("nodes_falsenodeids", "nodes_featureids", "nodes_hitrates", "nodes_hitrates_as_tensor",
                    "nodes_missing_value_tracks_true", "nodes_modes", "nodes_nodeids", "nodes_treeids",
                    "nodes_truenodeids", "nodes_values", "nodes_values_as_tensor", "post_transform",
                    "base_values", "base_values_as_tensor")


@dataclass
class _Node:
    mode: int = 0
    feature: int = 0
    threshold: float = 0.0
    missing_true: bool = False
    yes: Any = None
    no: Any = None
    weights: list[tuple[int, float]] = field(default_factory=list)


@dataclass
class Forest:
    """Trees as nodes keyed by any hashable id, each tree a root key; laid out by `arrays`."""

    trees: list[tuple[Any, dict[Any, _Node]]] = field(default_factory=list)
    strict: bool = True  # every node of a tree must be reachable from its root (not for opset 5's shared node list)

    def arrays(self, ctx: NodeContext, targets: int) -> dict[str, np.ndarray]:
        offsets = [0]
        modes: list[int] = []
        features: list[int] = []
        thresholds: list[float] = []
        yes: list[int] = []
        no: list[int] = []
        leaf_targets: list[int] = []
        leaf_weights: list[float] = []
        for number, (root, nodes) in enumerate(self.trees):
            order = _topological(ctx, number, root, nodes)
            if self.strict and len(order) != len(nodes):
                lost = sorted(set(nodes) - set(order), key=str)[:5]
                raise ctx.error(f"tree {number}: node(s) {', '.join(map(str, lost))} are not reachable from its "
                                f"root {root} (a cycle, or a broken child link)")
            at = {key: offsets[-1] + i for i, key in enumerate(order)}
            for key in order:
                node = nodes[key]
                if node.mode == TreeNodeMode.LEAF:
                    modes.append(int(TreeNodeMode.LEAF))
                    features.append(0)
                    thresholds.append(0.0)
                    yes.append(len(leaf_targets))
                    no.append(len(node.weights))
                    for target, weight in node.weights:
                        if not 0 <= target < targets:
                            raise ctx.error(f"tree {number}: a leaf weight names target/class {target}, outside "
                                            f"[0, {targets})")
                        leaf_targets.append(target)
                        leaf_weights.append(weight)
                else:
                    modes.append(int(node.mode) | (PN_TREE_MISSING_TRUE if node.missing_true else 0))
                    features.append(node.feature)
                    thresholds.append(node.threshold)
                    yes.append(at[node.yes])
                    no.append(at[node.no])
            offsets.append(offsets[-1] + len(order))
        return {"tree_offsets": np.asarray(offsets, np.int64), "node_modes": np.asarray(modes, np.uint8),
                "node_features": np.asarray(features, np.int64),
                "node_thresholds": np.asarray(thresholds, np.float64), "node_true": np.asarray(yes, np.int64),
                "node_false": np.asarray(no, np.int64), "leaf_targets": np.asarray(leaf_targets, np.int64),
                "leaf_weights": np.asarray(leaf_weights, np.float64)}

    def target_coverage(self) -> tuple[set[int], set[int]]:
        """(targets some leaf names, targets every leaf names)."""
        some: set[int] = set()
        every: set[int] | None = None
        for _, nodes in self.trees:
            for node in nodes.values():
                if node.mode == TreeNodeMode.LEAF:
                    named = {t for t, _ in node.weights}
                    some |= named
                    every = named if every is None else every & named
        return some, every or set()


def _topological(ctx: NodeContext, number: int, root: Any, nodes: dict[Any, _Node]) -> list[Any]:
    """The nodes reachable from root, every node after all its parents (Kahn's order)."""
    reach: list[Any] = [root]
    seen = {root}
    parents: dict[Any, int] = {root: 0}
    i = 0
    while i < len(reach):
        node = nodes[reach[i]]
        i += 1
        if node.mode == TreeNodeMode.LEAF:
            continue
        for child in (node.yes, node.no):
            parents[child] = parents.get(child, 0) + 1
            if child not in seen:
                seen.add(child)
                reach.append(child)
    order: list[Any] = []
    ready = [root]
    while ready:
        key = ready.pop()
        order.append(key)
        node = nodes[key]
        if node.mode == TreeNodeMode.LEAF:
            continue
        for child in (node.no, node.yes) if node.no != node.yes else (node.yes,):
            parents[child] -= 1 if node.no != node.yes else 2
            if parents[child] == 0:
                ready.append(child)
    if len(order) != len(reach):
        raise ctx.error(f"tree {number} has a cycle (a node is its own descendant)")
    return order


# ---- reading the attributes -------------------------------------------------------------------


def _floats(ctx: NodeContext, name: str) -> np.ndarray | None:
    """A float list attribute, or its *_as_tensor form (double precision), or None."""
    tensor = ctx.attr(f"{name}_as_tensor")
    if tensor is not None:
        if ctx.has(name):
            raise ctx.error(f"attributes {name!r} and {name + '_as_tensor'!r} are both set; give one")
        return np.asarray(tensor, np.float64).reshape(-1)
    value = ctx.attr(name)
    return None if value is None else np.asarray(value, np.float32).astype(np.float64)


def _ints(ctx: NodeContext, name: str, required: bool = True) -> list[int]:
    value = ctx.attr(name)
    if value is None:
        if required:
            raise ctx.error(f"attribute {name!r} is required")
        return []
    return [int(v) for v in value]


def _lengths(ctx: NodeContext, arrays: dict[str, Sequence[Any]], count: int) -> None:
    for name, values in arrays.items():
        if len(values) != count:
            raise ctx.error(f"attribute {name!r} has {len(values)} entries, the nodes {count}")


def _classic_forest(ctx: NodeContext, prefix: str) -> Forest:
    """The nodes_* and <prefix>_* (target_ or class_) attributes of the ML opset 1 / 3 ops."""
    tree_ids = _ints(ctx, "nodes_treeids")
    node_ids = _ints(ctx, "nodes_nodeids")
    count = len(tree_ids)
    modes = ctx.attr("nodes_modes")
    if modes is None:
        raise ctx.error("attribute 'nodes_modes' is required")
    thresholds = _floats(ctx, "nodes_values")
    if thresholds is None:
        thresholds = np.zeros(count)
    features = _ints(ctx, "nodes_featureids")
    true_ids = _ints(ctx, "nodes_truenodeids")
    false_ids = _ints(ctx, "nodes_falsenodeids")
    missing = _ints(ctx, "nodes_missing_value_tracks_true", required=False) or [0] * count
    _lengths(ctx, {"nodes_nodeids": node_ids, "nodes_modes": modes, "nodes_values": thresholds,
                   "nodes_featureids": features, "nodes_truenodeids": true_ids, "nodes_falsenodeids": false_ids,
                   "nodes_missing_value_tracks_true": missing}, count)
    trees: dict[int, dict[Any, _Node]] = {}
    for i in range(count):
        mode = _MODES.get(str(modes[i]))
        if mode is None:
            raise ctx.error(f"node {i} (tree {tree_ids[i]}, node {node_ids[i]}) has mode {modes[i]!r}; modes are "
                            f"{', '.join(_MODES)}")
        nodes = trees.setdefault(tree_ids[i], {})
        if node_ids[i] in nodes:
            raise ctx.error(f"tree {tree_ids[i]} has node id {node_ids[i]} twice")
        nodes[node_ids[i]] = _Node(int(mode), features[i], float(thresholds[i]), bool(missing[i]), true_ids[i],
                                   false_ids[i])
    w_trees = _ints(ctx, f"{prefix}_treeids", required=False)
    w_nodes = _ints(ctx, f"{prefix}_nodeids", required=False)
    w_ids = _ints(ctx, f"{prefix}_ids", required=False)
    w_values = _floats(ctx, f"{prefix}_weights")
    w_values = np.zeros(0) if w_values is None else w_values
    _lengths(ctx, {f"{prefix}_nodeids": w_nodes, f"{prefix}_ids": w_ids, f"{prefix}_weights": w_values},
             len(w_trees))
    for k in range(len(w_trees)):
        node = trees.get(w_trees[k], {}).get(w_nodes[k])
        if node is None:
            raise ctx.error(f"weight {k} names tree {w_trees[k]} node {w_nodes[k]}, which no node is")
        if node.mode != TreeNodeMode.LEAF:
            raise ctx.error(f"weight {k} names tree {w_trees[k]} node {w_nodes[k]}, which is a branch, not a leaf")
        node.weights.append((w_ids[k], float(w_values[k])))
    forest = Forest()
    for tree_id, nodes in trees.items():
        children = set()
        for key, node in nodes.items():
            if node.mode != TreeNodeMode.LEAF:
                for child in (node.yes, node.no):
                    if child not in nodes:
                        raise ctx.error(f"tree {tree_id} node {key} has child {child}, which the tree does not hold")
                    children.add(child)
        roots = [key for key in nodes if key not in children]
        if len(roots) != 1:
            raise ctx.error(f"tree {tree_id} has {len(roots)} root nodes (nodes no branch points at); a tree has one")
        forest.trees.append((roots[0], nodes))
    if not forest.trees:
        raise ctx.error("the ensemble has no tree")
    return forest


def _v5_forest(ctx: NodeContext) -> tuple[Forest, int]:
    """TreeEnsemble's (ML opset 5) tensors: tree roots, node arrays, leaf arrays, set members."""
    def tensor(name: str, required: bool = True) -> np.ndarray | None:
        value = ctx.attr(name)
        if value is None and required:
            raise ctx.error(f"attribute {name!r} is required")
        return None if value is None else np.asarray(value).reshape(-1)

    roots = [int(v) for v in _ints(ctx, "tree_roots")]
    features = _ints(ctx, "nodes_featureids")
    count = len(features)
    modes = tensor("nodes_modes")
    splits = tensor("nodes_splits").astype(np.float64)
    true_ids, false_ids = _ints(ctx, "nodes_truenodeids"), _ints(ctx, "nodes_falsenodeids")
    true_leafs, false_leafs = _ints(ctx, "nodes_trueleafs"), _ints(ctx, "nodes_falseleafs")
    missing = _ints(ctx, "nodes_missing_value_tracks_true", required=False) or [0] * count
    _lengths(ctx, {"nodes_modes": modes, "nodes_splits": splits, "nodes_truenodeids": true_ids,
                   "nodes_falsenodeids": false_ids, "nodes_trueleafs": true_leafs, "nodes_falseleafs": false_leafs,
                   "nodes_missing_value_tracks_true": missing}, count)
    leaf_targets = _ints(ctx, "leaf_targetids")
    leaf_weights = tensor("leaf_weights").astype(np.float64)
    if len(leaf_weights) != len(leaf_targets):
        raise ctx.error(f"leaf_weights has {len(leaf_weights)} entries, leaf_targetids {len(leaf_targets)}")
    members = tensor("membership_values", required=False)
    sets: list[list[float]] = []
    if members is not None:
        current: list[float] = []
        for value in members.astype(np.float64):
            if np.isnan(value):
                sets.append(current)
                current = []
            else:
                current.append(float(value))
        if current:
            sets.append(current)
    nodes: dict[Any, _Node] = {}
    member_index = 0
    for j, (target, weight) in enumerate(zip(leaf_targets, leaf_weights)):
        nodes[("leaf", j)] = _Node(int(TreeNodeMode.LEAF), weights=[(target, float(weight))])

    def child(i: int, index: int, leaf: int) -> Any:
        key = ("leaf", index) if leaf else ("node", index)
        if key not in nodes and not (not leaf and 0 <= index < count):
            raise ctx.error(f"node {i} has {'leaf' if leaf else 'node'} child {index}, which does not exist")
        return key

    for i in range(count):
        mode = int(modes[i])
        yes, no = child(i, true_ids[i], true_leafs[i]), child(i, false_ids[i], false_leafs[i])
        if not 0 <= features[i]:
            raise ctx.error(f"node {i} reads feature {features[i]}")
        if mode == _MEMBER_V5:
            if member_index >= len(sets):
                raise ctx.error(f"node {i} is BRANCH_MEMBER, and membership_values holds no set for it")
            values = sets[member_index]
            member_index += 1
            if not values:
                raise ctx.error(f"node {i} is BRANCH_MEMBER with an empty set")
            for k, value in enumerate(values):  # x == v0 ? yes : (x == v1 ? yes : ... : no)
                key = ("node", i) if k == 0 else ("member", i, k)
                following = ("member", i, k + 1) if k + 1 < len(values) else no
                nodes[key] = _Node(int(TreeNodeMode.EQ), features[i], value, bool(missing[i]), yes, following)
            continue
        if mode not in _MODES_V5:
            raise ctx.error(f"node {i} has mode {mode}; modes are 0..6 (BRANCH_LEQ .. BRANCH_MEMBER)")
        nodes[("node", i)] = _Node(int(_MODES_V5[mode]), features[i], float(splits[i]), bool(missing[i]), yes, no)
    forest = Forest(strict=False)
    for t, root in enumerate(roots):
        if not 0 <= root < count:
            raise ctx.error(f"tree_roots[{t}] = {root} is not a node")
        forest.trees.append((("node", root), nodes))
    if not forest.trees:
        raise ctx.error("the ensemble has no tree")
    n_targets = int(ctx.attr("n_targets", 0) or 0)
    if n_targets < 1:
        raise ctx.error("attribute 'n_targets' must be >= 1")
    return forest, n_targets


# ---- the layer --------------------------------------------------------------------------------


def _rows(ctx: NodeContext) -> Tensor:
    """X as [N, F] of float32 or float64 (integers as float64: exact up to 2^53)."""
    x = ctx.tensor(0, "X")
    dtype = x.dtype
    if dtype not in (DataType.FLOAT32, DataType.FLOAT64):
        if dtype not in (DataType.INT64, DataType.INT32, DataType.FLOAT16, DataType.BFLOAT16):
            raise ctx.error(f"input 0 (X) is {dtype.numpy_name}; the tree ensembles take float, double, int64 and "
                            f"int32")
        x = ctx.network.add_cast(x, DataType.FLOAT64, name=ctx.name("as_double"))
    if len(x.shape) == 1:
        x = ctx.network.add_reshape(x, (1, x.shape[0]), name=ctx.name("rows"))
    elif len(x.shape) != 2:
        raise ctx.error(f"input 0 (X) has shape {list(x.shape)}; the tree ensembles take [N, F] (or [F])")
    return x


def _choice(ctx: NodeContext, name: str, choices: Sequence[str], default: str) -> str:
    value = str(ctx.attr(name, default))
    if value not in choices:
        raise ctx.unsupported_value(name, value, ", ".join(choices))
    return value


def _ensemble(ctx: NodeContext, x: Tensor, forest: Forest, targets: int, base: np.ndarray, op: str,
              aggregate: str, post: str) -> tuple[Tensor, ...]:
    arrays = forest.arrays(ctx, targets)
    return ctx.network.add_tree_ensemble(x, **arrays, base_values=base, op=op, aggregate=aggregate,
                                         post_transform=post, name=ctx.name())


def _base(ctx: NodeContext, targets: int) -> np.ndarray:
    base = _floats(ctx, "base_values")
    return np.zeros(targets) if base is None or len(base) != targets else base


def _float32(ctx: NodeContext, scores: Tensor) -> Tensor:
    if scores.dtype is DataType.FLOAT32:
        return scores
    return ctx.network.add_cast(scores, DataType.FLOAT32, name=ctx.name("float"))


@op("TreeEnsembleRegressor", _NODE_ATTRIBUTES + ("aggregate_function", "n_targets", "target_ids", "target_nodeids",
                                                  "target_treeids", "target_weights", "target_weights_as_tensor"),
    domain=ML)
def tree_ensemble_regressor(ctx: NodeContext) -> list[Any]:
    x = _rows(ctx)
    forest = _classic_forest(ctx, "target")
    targets = int(ctx.attr("n_targets", 1) or 1)
    aggregate = _choice(ctx, "aggregate_function", _AGGREGATES, "SUM")
    post = _choice(ctx, "post_transform", _TRANSFORMS, "NONE")
    base = _floats(ctx, "base_values")
    if targets == 1:
        # onnxruntime adds a single base value to a single target and applies only PROBIT to it.
        base = np.asarray([base[0]] if base is not None and len(base) >= 1 else [0.0])
        post = post if post == "PROBIT" else "NONE"
    else:
        base = np.zeros(targets) if base is None or len(base) != targets else base
    (scores,) = _ensemble(ctx, x, forest, targets, base, "regressor", aggregate, post)
    return [_float32(ctx, scores)]


@op("TreeEnsemble", ("aggregate_function", "leaf_targetids", "leaf_weights", "membership_values", "n_targets",
                     "nodes_falseleafs", "nodes_falsenodeids", "nodes_featureids", "nodes_hitrates",
                     "nodes_missing_value_tracks_true", "nodes_modes", "nodes_splits", "nodes_trueleafs",
                     "nodes_truenodeids", "post_transform", "tree_roots"), domain=ML)
def tree_ensemble(ctx: NodeContext) -> list[Any]:
    x_in = ctx.tensor(0, "X")
    x = _rows(ctx)
    forest, targets = _v5_forest(ctx)
    aggregate = int(ctx.attr("aggregate_function", 1))
    post = int(ctx.attr("post_transform", 0))
    if not 0 <= aggregate < 4:
        raise ctx.unsupported_value("aggregate_function", aggregate, "0 (AVERAGE), 1 (SUM), 2 (MIN), 3 (MAX)")
    if not 0 <= post < 5:
        raise ctx.unsupported_value("post_transform", post, "0 (NONE), 1 (SOFTMAX), 2 (LOGISTIC), 3 (SOFTMAX_ZERO), "
                                                             "4 (PROBIT)")
    (scores,) = _ensemble(ctx, x, forest, targets, np.zeros(targets), "regressor", _AGGREGATES[aggregate],
                          _TRANSFORMS_V5[post])
    if scores.dtype is not x_in.dtype:
        scores = ctx.network.add_cast(scores, x_in.dtype, name=ctx.name("as_input_type"))
    return [scores]


@op("TreeEnsembleClassifier", _NODE_ATTRIBUTES + ("class_ids", "class_nodeids", "class_treeids", "class_weights",
                                                   "class_weights_as_tensor", "classlabels_int64s",
                                                   "classlabels_strings"),
    domain=ML, outputs_note="outputs Y (label) and Z (scores)")
def tree_ensemble_classifier(ctx: NodeContext) -> list[Any]:
    from plugnn.onnx.ops_ml import labels_output

    x = _rows(ctx)
    forest = _classic_forest(ctx, "class")
    labels = _labels(ctx)
    classes = len(labels)
    post = _choice(ctx, "post_transform", _TRANSFORMS, "NONE")
    base = _floats(ctx, "base_values")
    base = np.zeros(0) if base is None else base
    weights = _floats(ctx, "class_weights")
    scored, always = forest.target_coverage()
    if classes > 2:
        full = np.zeros(classes)
        full[:min(len(base), classes)] = base[:classes]
        scores, index = _ensemble(ctx, x, forest, classes, full, "classifier", "sum", post)
        return [labels_output(ctx, labels, index), _float32(ctx, scores)]
    if classes != 2:
        raise ctx.error(f"the classifier has {classes} class label(s); it needs at least 2")
    scores, _ = _ensemble(ctx, x, forest, 2, np.zeros(2), "classifier", "sum", "none")
    binary = len(set(scored)) == 1
    positive_weights = weights is None or bool(np.all(weights >= 0))
    index, z = _two_classes(ctx, scores, scored, always, base, binary, positive_weights, post)
    return [labels_output(ctx, labels, index), _float32(ctx, z)]


def _labels(ctx: NodeContext) -> np.ndarray:
    ints, strings = ctx.attr("classlabels_int64s"), ctx.attr("classlabels_strings")
    if (ints is None) == (strings is None):
        raise ctx.error("exactly one of 'classlabels_int64s' and 'classlabels_strings' must be given")
    if ints is not None:
        return np.asarray([int(v) for v in ints], np.int64)
    array = np.empty(len(strings), object)
    array[:] = [str(s) for s in strings]
    return array


def _two_classes(ctx: NodeContext, scores: Tensor, scored: set[int], always: set[int], base: np.ndarray,
                 binary: bool, positive_weights: bool, post: str) -> tuple[Tensor, Tensor]:
    """onnxruntime's two-class rules, on the raw sums s0, s1 (columns of `scores`): which scores
    exist (`has`: a class a leaf names; when only some leaves name it, the rule would depend on the
    row, which plugnn refuses), base values, the positive class and the written scores."""
    net = ctx.network
    for k in (0, 1):
        if k in scored and k not in always:
            raise ctx.error(f"class {k} is scored by some leaves only; onnxruntime's two-class rules then depend on "
                            f"each row's leaves, which plugnn does not reproduce")
    has0, has1 = 0 in scored, 1 in scored
    dtype = scores.dtype
    s0 = net.add_slice(scores, [0], [1], [1], name=ctx.name("s0"))
    s1 = net.add_slice(scores, [1], [2], [1], name=ctx.name("s1"))

    def const(value: float, role: str) -> Tensor:
        return ctx.array_tensor(np.asarray([[value]], dtype.numpy_dtype), role)

    def add(a: Tensor, b: Any, role: str) -> Tensor:
        return net.add_elementwise(BinaryOp.ADD, a, b, name=ctx.name(role))

    two = True  # both scores written (else one score, completed per onnxruntime's write_scores)
    extra = -1  # onnxruntime's write_additional_scores
    if len(base) == 2:
        if has1:
            s1 = add(s0, const(float(base[1]), "base1"), "with_base1")
            s0 = net.add_unary(UnaryOp.NEG, s1, name=ctx.name("negative"))
            has1 = True
        else:
            s1 = add(s1, const(float(base[1]), "base1"), "with_base1")
            s0 = add(s0, const(float(base[0]), "base0"), "with_base0")
    elif len(base) == 1:
        s0 = add(s0, const(float(base[0]), "base0"), "with_base0")
        two = has1
    elif len(base) == 0:
        extra = 3
        two = has1
    else:
        raise ctx.error(f"a two-class ensemble takes 0, 1 or 2 base values, got {len(base)}")
    positive = s1 if two and has1 else s0
    zero = const(0.0, "zero")
    if binary:
        threshold = const(0.5 if positive_weights else 0.0, "threshold")
        is_positive = net.add_elementwise(BinaryOp.GREATER, positive, threshold, name=ctx.name("positive"))
    else:
        is_positive = net.add_elementwise(BinaryOp.GREATER, positive, zero, name=ctx.name("positive"))
    index = net.add_cast(net.add_reshape(is_positive, (-1,), name=ctx.name("flat")), DataType.INT64,
                         name=ctx.name("index"))
    if two:
        z = net.add_concat([s0, s1], 1, name=ctx.name("scores"))
        return index, _transform(ctx, z, post)
    if post == "PROBIT":
        raise ctx.error("a two-class ensemble with one score and PROBIT writes one column in onnxruntime; plugnn "
                        "does not reproduce that")
    if binary:
        extra = 0 if positive_weights else None  # None: 2 or 3, decided per row by the sign
    if extra == -1:
        raise ctx.error("this two-class ensemble writes one score column in onnxruntime (no rule for the "
                        "second); plugnn does not reproduce that")
    if extra in (0, 1):
        first = net.add_elementwise(BinaryOp.SUB, const(1.0, "one"), s0, name=ctx.name("complement"))
        pair = [first, s0]
    elif post == "LOGISTIC":
        neg = net.add_unary(UnaryOp.NEG, s0, name=ctx.name("negated"))
        pair = [_logistic(ctx, neg, "logistic0"), _logistic(ctx, s0, "logistic1")]
    elif extra == 3:
        pair = [s0, net.add_unary(UnaryOp.NEG, s0, name=ctx.name("negated"))]
    elif extra is None:  # 2 for a positive row: [-s, s]; 3 for the others: [s, -s]
        neg = net.add_unary(UnaryOp.NEG, s0, name=ctx.name("negated"))
        cond = net.add_elementwise(BinaryOp.GREATER, s0, zero, name=ctx.name("sign"))
        pair = [net.add_select(cond, neg, s0, name=ctx.name("first")),
                net.add_select(cond, s0, neg, name=ctx.name("second"))]
    return index, net.add_concat(pair, 1, name=ctx.name("scores"))


def _logistic(ctx: NodeContext, x: Tensor, role: str) -> Tensor:
    from plugnn.descriptors import ActivationKind

    return ctx.network.add_activation(x, ActivationKind.SIGMOID, name=ctx.name(role))


def _transform(ctx: NodeContext, z: Tensor, post: str) -> Tensor:
    """post_transform over both scores of each row (onnxruntime's write_scores with two)."""
    net = ctx.network
    if post == "NONE":
        return z
    if post == "LOGISTIC":
        return _logistic(ctx, z, "logistic")
    if post == "SOFTMAX":
        return net.add_softmax(z, 1, name=ctx.name("softmax"))
    raise ctx.error(f"post_transform {post} on a two-class ensemble with two scores is not supported by plugnn "
                    f"(NONE, LOGISTIC, SOFTMAX are)")
