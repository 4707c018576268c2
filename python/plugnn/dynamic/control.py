"""The nodes a program's runtime runs: If, Loop, Scan, SequenceMap and function calls (running
sub-programs), the sequence and optional operators (sequences.py), the operators on string
tensors (strings.py), the ai.onnx.ml operators on strings and maps (ml.py), Identity of a sequence, optional or string tensor. Each handler reads its
inputs from the environment and writes its outputs there.

Sub-programs (programs of a branch, a body, a function body) are made once per node and keep
their own segments: a Loop whose body sees the same shapes every iteration imports it once and
runs the same loaded networks each time, only the bound arrays changing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from plugnn.dynamic import ml, sequences, strings
from plugnn.dynamic.segments import function_body, outer_reads
from plugnn.dynamic.values import check_declared, dense, describe
from plugnn.errors import ModelError, PlugnnError, RunError
from plugnn.limits import MAX_TENSOR_BYTES_ENV, human_bytes, max_tensor_bytes
from plugnn.onnx import validation

Program = Any  # plugnn.dynamic.program.Program (which imports this module)


def node_label(index: int, node: Any) -> str:
    """A node as the importer names it: "node 'loop' (#3, Loop)"."""
    if node.name:
        return f"node {node.name!r} (#{index}, {node.op_type})"
    first = node.output[0] if node.output else "?"
    return f"node #{index} ({node.op_type}, unnamed, output {first!r})"


class Step:
    """One runtime node being run: its inputs, attributes, and errors that name it."""

    def __init__(self, program: Program, index: int, node: Any, values: dict[str, Any]) -> None:
        self.program = program
        self.index = index
        self.node = node
        self.values = values

    @functools.cached_property
    def label(self) -> str:
        return node_label(self.index, self.node)

    @functools.cached_property
    def attrs(self) -> dict[str, Any]:
        return {a.name: a for a in self.node.attribute}

    def error(self, message: str) -> RunError:
        return RunError(f"{self.program.source}: {self.label}: {message}")

    def has(self, i: int) -> bool:
        return i < len(self.node.input) and bool(self.node.input[i])

    def input(self, i: int) -> Any:
        name = self.node.input[i]
        if name in self.values:
            return self.values[name]
        if name in self.program.constants:
            return self.program.constants[name]
        raise ModelError(f"{self.program.source}: {self.label}: input {i} {name!r} is produced by no earlier node, "
                         f"initializer or input")

    def tensor(self, i: int, what: str) -> np.ndarray:
        value = self.input(i)
        if not isinstance(value, np.ndarray):
            raise self.error(f"input {i} ({what}) must be a tensor, got {describe(value)}")
        return value

    def scalar(self, i: int, what: str) -> Any:
        value = self.tensor(i, what)
        if value.size != 1:
            raise self.error(f"input {i} ({what}) must hold one element, got shape {list(value.shape)}")
        return value.reshape(-1)[0]

    def attr(self, name: str, default: Any = None) -> Any:
        attr = self.attrs.get(name)
        if attr is None:
            return default
        from onnx import helper

        return helper.get_attribute_value(attr)

    def set(self, i: int, value: Any) -> None:
        if i < len(self.node.output) and self.node.output[i]:
            self.values[self.node.output[i]] = value

    def sub(self, attr_name: str, what: str) -> Program:
        """The program of subgraph attribute `attr_name` (made once per node)."""
        graph = self.attr(attr_name)
        if graph is None:
            raise ModelError(f"{self.program.source}: {self.label}: attribute {attr_name!r} is missing")
        from onnx import numpy_helper

        constants = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
        return self.program.child((self.index, attr_name), graph, graph.node, self.program.opset,
                                  [v.name for v in graph.input], [v.name for v in graph.output], constants,
                                  f"{self.label} {what}", [v.type for v in graph.output])

    def captures(self, sub: Program) -> dict[str, Any]:
        """The values of this program that `sub` reads from outside it."""
        names = _outer_names(sub)
        return {n: self.values[n] for n in names if n in self.values}

    def run_sub(self, sub: Program, formals: dict[str, Any], what: str) -> list[Any]:
        env = self.captures(sub)
        env.update(formals)
        outputs = sub.run(env)
        for k, (value, declared) in enumerate(zip(outputs, sub.declared)):
            try:
                check_declared(value, declared, f"output {k} ({sub.outputs[k]!r}) of the {what}")
            except RunError as exc:
                raise self.error(str(exc)) from None
        return outputs


def _outer_names(sub: Program) -> list[str]:
    cached = getattr(sub, "outer_names", None)
    if cached is None:
        defined = set(sub.inputs) | set(sub.constants)
        for node in sub.nodes:
            defined.update(n for n in node.output if n)
        wanted: dict[str, None] = {}
        for node in sub.nodes:
            for name in list(node.input) + list(_subgraph_names(node)):
                if name and name not in defined:
                    wanted[name] = None
        for name in sub.outputs:
            if name and name not in defined:
                wanted[name] = None
        cached = list(wanted)
        sub.outer_names = cached
    return cached


def _subgraph_names(node: Any) -> list[str]:
    return list(outer_reads(node))


# ---- If -------------------------------------------------------------------------------------


def _if(step: Step) -> None:
    condition = bool(step.scalar(0, "cond"))
    branch = "then_branch" if condition else "else_branch"
    sub = step.sub(branch, branch)
    outputs = step.run_sub(sub, {}, branch)
    if len(outputs) != len(step.node.output):
        raise step.error(f"the {branch} has {len(outputs)} outputs, the node {len(step.node.output)}")
    for i, value in enumerate(outputs):
        step.set(i, value)


# ---- Loop -----------------------------------------------------------------------------------


def _loop(step: Step) -> None:
    node = step.node
    body = step.sub("body", "body")
    carried_count = len(body.inputs) - 2
    if carried_count < 0 or len(node.input) - 2 != carried_count:
        raise step.error(f"the body takes {len(body.inputs)} inputs (iteration number, condition, "
                         f"{max(carried_count, 0)} carried values); the node gives {max(len(node.input) - 2, 0)} "
                         f"carried values")
    scan_count = len(body.outputs) - 1 - carried_count
    if scan_count < 0:
        raise step.error(f"the body returns {len(body.outputs)} outputs, fewer than the condition and "
                         f"{carried_count} carried values")
    trip = int(step.scalar(0, "M")) if step.has(0) else None
    use_condition = step.has(1)
    if trip is None and not use_condition:
        raise step.error("it has neither a trip count (M) nor a condition: it would never end")
    condition = bool(step.scalar(1, "cond")) if use_condition else True
    carried = [step.input(2 + k) for k in range(carried_count)]
    scans: list[list[np.ndarray]] = [[] for _ in range(scan_count)]
    names = body.inputs
    shapes = [_declared_one_element_shape(body.graph, k) for k in (0, 1)]
    iteration = 0
    # The scan outputs grow by one slice per iteration: their total is held to the tensor limit
    # (plugnn.limits), so a trip count from the data cannot grow memory until the process is
    # killed. Each iteration is Python code: Ctrl-C interrupts the loop between iterations.
    limit, scanned = max_tensor_bytes(), 0
    while (trip is None or iteration < trip) and condition:
        formals = {names[0]: np.array(iteration, np.int64).reshape(shapes[0]),
                   names[1]: np.array(condition).reshape(shapes[1])}
        formals.update(zip(names[2:], carried))
        outputs = step.run_sub(body, formals, f"body (iteration {iteration})")
        if use_condition:
            flag = outputs[0]
            if not isinstance(flag, np.ndarray) or flag.size != 1:
                raise step.error(f"the body's condition output is {describe(flag)}, not one boolean")
            condition = bool(flag.reshape(-1)[0])
        carried = outputs[1:1 + carried_count]
        for k in range(scan_count):
            value = outputs[1 + carried_count + k]
            if not isinstance(value, np.ndarray):
                raise step.error(f"scan output {k} of the body is {describe(value)}, not a tensor")
            if scans[k] and value.shape != scans[k][0].shape:
                raise step.error(f"scan output {k} of the body has shape {list(value.shape)} at iteration "
                                 f"{iteration}, {list(scans[k][0].shape)} before: iterations must agree")
            scans[k].append(value)
            scanned += value.nbytes
        if scanned > limit:
            raise step.error(f"its scan outputs hold {human_bytes(scanned)} after {iteration + 1} iterations (trip "
                             f"count {trip}), more than the limit of {human_bytes(limit)} ({MAX_TENSOR_BYTES_ENV})")
        iteration += 1
    for k, value in enumerate(carried):
        step.set(k, value)
    for k in range(scan_count):
        step.set(carried_count + k, _stack(scans[k], body.declared[1 + carried_count + k]
                                           if len(body.declared) > 1 + carried_count + k else None, 0))


def _declared_one_element_shape(body: Any, k: int) -> tuple[int, ...]:
    """The shape a Loop body's input k (iteration number, condition) is fed in: (1,) when the
    body declares it [1] (as onnxruntime feeds it), else a scalar."""
    if k < len(body.input):
        ttype = body.input[k].type
        if ttype.HasField("tensor_type") and ttype.tensor_type.HasField("shape"):
            dims = ttype.tensor_type.shape.dim
            if len(dims) == 1 and dims[0].HasField("dim_value") and dims[0].dim_value == 1:
                return (1,)
    return ()


def _stack(items: list[np.ndarray], declared: Any, axis: int) -> np.ndarray:
    """The per-iteration values stacked along `axis`; no iteration: an empty tensor of the
    declared element type and, when the declared shape is fully known, its dims."""
    if items:
        return dense(np.stack(items, axis=axis))
    from plugnn.onnx.context import np_dtype

    dtype, dims = np.dtype(np.float32), ()
    if declared is not None and declared.WhichOneof("value") == "tensor_type":
        tensor = declared.tensor_type
        if tensor.elem_type:
            dtype = np_dtype(tensor.elem_type)
        if tensor.HasField("shape") and all(d.HasField("dim_value") for d in tensor.shape.dim):
            dims = tuple(int(d.dim_value) for d in tensor.shape.dim)
    shape = list(dims)
    shape.insert(axis if axis >= 0 else len(dims) + 1 + axis, 0)
    return np.empty(shape, dtype)


# ---- Scan -----------------------------------------------------------------------------------


def _axes(step: Step, name: str, count: int, default: int = 0) -> list[int]:
    values = step.attr(name)
    if values is None:
        return [default] * count
    values = [int(v) for v in values]
    if len(values) != count:
        raise ModelError(f"{step.program.source}: {step.label}: attribute {name!r} has {len(values)} entries, "
                         f"the node {count}")
    return values


def _scan(step: Step) -> None:
    if step.program.opset < 9:
        _scan8(step)
        return
    node = step.node
    body = step.sub("body", "body")
    scan_inputs = int(step.attr("num_scan_inputs", 0))
    state_count = len(node.input) - scan_inputs
    if scan_inputs < 1 or state_count < 0 or len(body.inputs) != len(node.input):
        raise ModelError(f"{step.program.source}: {step.label}: num_scan_inputs {scan_inputs} does not fit "
                         f"{len(node.input)} inputs and a body of {len(body.inputs)} inputs")
    scan_outputs = len(body.outputs) - state_count
    in_axes = _axes(step, "scan_input_axes", scan_inputs)
    in_dirs = _axes(step, "scan_input_directions", scan_inputs)
    out_axes = _axes(step, "scan_output_axes", scan_outputs)
    out_dirs = _axes(step, "scan_output_directions", scan_outputs)
    states = [step.input(k) for k in range(state_count)]
    sequences_in = []
    length = None
    for j in range(scan_inputs):
        x = step.tensor(state_count + j, f"scan input {j}")
        axis = in_axes[j]
        if not -x.ndim <= axis < x.ndim:
            raise step.error(f"scan_input_axes[{j}] = {axis} is out of range for scan input {j} of rank {x.ndim}")
        axis %= x.ndim
        if length is not None and x.shape[axis] != length:
            raise step.error(f"scan input {j} has {x.shape[axis]} slices along axis {axis}, scan input 0 has {length}")
        length = x.shape[axis]
        sequences_in.append((x, axis, in_dirs[j]))
    states, collected = _scan_loop(step, body, states, sequences_in, length or 0, scan_outputs)
    for k, value in enumerate(states):
        step.set(k, value)
    for k in range(scan_outputs):
        items = collected[k][::-1] if out_dirs[k] else collected[k]
        declared = body.declared[state_count + k] if len(body.declared) > state_count + k else None
        rank = (items[0].ndim if items else 0) + 1
        axis = out_axes[k]
        if not -rank <= axis < rank:
            raise step.error(f"scan_output_axes[{k}] = {axis} is out of range for scan output {k} of rank {rank}")
        step.set(state_count + k, _stack(items, declared, axis % rank))


def _scan_loop(step: Step, body: Program, states: list[Any], inputs: list[tuple[np.ndarray, int, int]],
               length: int, scan_outputs: int) -> tuple[list[Any], list[list[np.ndarray]]]:
    names = body.inputs
    state_count = len(states)
    collected: list[list[np.ndarray]] = [[] for _ in range(scan_outputs)]
    for t in range(length):
        formals = dict(zip(names[:state_count], states))
        for (x, axis, reverse), name in zip(inputs, names[state_count:]):
            formals[name] = dense(np.take(x, length - 1 - t if reverse else t, axis=axis))
        outputs = step.run_sub(body, formals, f"body (iteration {t})")
        states = outputs[:state_count]
        for k in range(scan_outputs):
            value = outputs[state_count + k]
            if not isinstance(value, np.ndarray):
                raise step.error(f"scan output {k} of the body is {describe(value)}, not a tensor")
            if collected[k] and value.shape != collected[k][0].shape:
                raise step.error(f"scan output {k} of the body has shape {list(value.shape)} at iteration {t}, "
                                 f"{list(collected[k][0].shape)} before: iterations must agree")
            collected[k].append(value)
    return states, collected


def _scan8(step: Step) -> None:
    """Scan-8: every input and output has a batch dim first; the scan axis follows it."""
    node = step.node
    body = step.sub("body", "body")
    scan_inputs = int(step.attr("num_scan_inputs", 0))
    state_count = len(node.input) - 1 - scan_inputs
    if scan_inputs < 1 or state_count < 0 or len(body.inputs) != state_count + scan_inputs:
        raise ModelError(f"{step.program.source}: {step.label}: num_scan_inputs {scan_inputs} does not fit "
                         f"{len(node.input)} inputs and a body of {len(body.inputs)} inputs")
    scan_outputs = len(body.outputs) - state_count
    directions = _axes(step, "directions", scan_inputs)
    states = [step.tensor(1 + k, f"initial state {k}") for k in range(state_count)]
    xs = [step.tensor(1 + state_count + j, f"scan input {j}") for j in range(scan_inputs)]
    batch = xs[0].shape[0] if xs[0].ndim else 0
    lengths = step.tensor(0, "sequence_lens") if step.has(0) else None
    final: list[list[Any]] = [[] for _ in range(state_count)]
    stacked: list[list[np.ndarray]] = [[] for _ in range(scan_outputs)]
    for b in range(batch):
        length = xs[0].shape[1]
        if lengths is not None and int(lengths.reshape(-1)[b]) != length:
            raise step.error(f"sequence_lens[{b}] = {int(lengths.reshape(-1)[b])} is shorter than the sequence "
                             f"({length}); plugnn runs Scan-8 over whole sequences only")
        inputs = [(x[b], 0, directions[j]) for j, x in enumerate(xs)]
        out_states, collected = _scan_loop(step, body, [s[b] for s in states], inputs, length, scan_outputs)
        for k, value in enumerate(out_states):
            final[k].append(value)
        for k in range(scan_outputs):
            declared = body.declared[state_count + k] if len(body.declared) > state_count + k else None
            stacked[k].append(_stack(collected[k], declared, 0))
    for k in range(state_count):
        step.set(k, dense(np.stack(final[k])) if final[k] else states[k][:0])
    for k in range(scan_outputs):
        step.set(state_count + k, dense(np.stack(stacked[k])) if stacked[k]
                 else np.empty((0, 0), np.float32))


# ---- SequenceMap and function calls -----------------------------------------------------------


def _sequence_map(step: Step) -> None:
    body = step.sub("body", "body")
    first = step.input(0)
    if not isinstance(first, list):
        raise step.error(f"input 0 (input_sequence) must be a sequence, got {describe(first)}")
    extra = [step.input(i) for i in range(1, len(step.node.input))]
    for i, value in enumerate(extra, start=1):
        if isinstance(value, list) and len(value) != len(first):
            raise step.error(f"input {i} is a sequence of {len(value)} tensors, input 0 of {len(first)}")
    results: list[list[Any]] = [[] for _ in step.node.output]
    for position, element in enumerate(first):
        args = [element] + [v[position] if isinstance(v, list) else v for v in extra]
        outputs = step.run_sub(body, dict(zip(body.inputs, args)), f"body (element {position})")
        for k, value in enumerate(outputs):
            results[k].append(value)
    for k, items in enumerate(results):
        step.set(k, items)


def _function_call(step: Step, cause: ModelError) -> None:
    """A node without a converter whose ONNX function body holds something the runtime runs: its
    body as a sub-program (made per combination of input types and ranks)."""
    node = step.node
    inputs = [step.input(i) if step.has(i) else None for i in range(len(node.input))]
    signature = tuple((v.dtype.str, v.shape) if isinstance(v, np.ndarray) else type(v).__name__ for v in inputs)
    key = (step.index, "function", signature)
    sub = step.program.subprograms.get(key)
    if sub is None:
        body = function_body(step.program, step.index, node, step.values)
        if body is None:
            raise cause
        nodes, opset, constants, note = body
        from onnx import helper

        graph = helper.make_graph(nodes, f"{node.op_type}_body", [], [])
        outputs = [n for n in node.output if n]
        sub = step.program.child(key, graph, nodes, opset, [], outputs, constants, f"{step.label} ({note})")
    results = step.run_sub(sub, {}, "function body")
    for name, value in zip([n for n in node.output if n], results):
        step.values[name] = value


def _identity(step: Step) -> None:
    step.set(0, step.input(0))


HANDLERS: dict[str, Callable[[Step], None]] = {
    "If": _if,
    "Loop": _loop,
    "Scan": _scan,
    "SequenceMap": _sequence_map,
    "Identity": _identity,
    **sequences.HANDLERS,
    **strings.HANDLERS,
    **ml.HANDLERS,
}


def run_node(program: Program, index: int, cause: ModelError, values: dict[str, Any]) -> None:
    """Run node `index` of `program` in the runtime; `cause` is why the importer could not."""
    node = program.nodes[index]
    step = Step(program, index, node, values)
    handler = HANDLERS.get(node.op_type)
    try:
        if handler is not None:
            handler(step)
        elif any(strings.is_string_array(step.input(i)) for i in range(len(node.input)) if step.has(i)):
            raise strings.not_for_strings(step)
        else:
            _function_call(step, cause)
    except PlugnnError:
        raise
    except (ArithmeticError, LookupError, TypeError, ValueError, AttributeError) as exc:
        # What the handler did not foresee: the schema's reason when the node breaks it (an
        # attribute of another type, a missing input), else the exception, naming the node.
        label = f"{program.source}: {step.label}"
        validation.check_node(node, program.opset, label)
        raise ModelError(f"{label}: cannot be run: {type(exc).__name__}: {exc}") from exc
