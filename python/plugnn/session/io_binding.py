"""onnxruntime's I/O binding: inputs and outputs bound to a session once, run many times.

Everything is host memory (the only device plugnn's backends have), so binding is zero-copy
where plugnn's runs already are: a bound input array, OrtValue or buffer pointer is what the
network reads (LoadedNetwork binds the caller's arrays), and an output bound to a preallocated
OrtValue or buffer is written in place (LoadedNetwork.run(outputs=...)) on the static path; a
run on the dynamic path copies its result into it. An output bound without a buffer is
allocated by each run and read back with get_outputs() / copy_outputs_to_cpu().
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

import numpy as np

from plugnn.session.ort_errors import InvalidArgument
from plugnn.session.ort_value import OrtValue, OrtValueVector, _numpy_dtype, check_device


def _wrap_pointer(buffer_ptr: int, element_type: Any, shape: Sequence[int], what: str) -> np.ndarray:
    """A NumPy array over `shape` elements of `element_type` at host address `buffer_ptr`
    (the memory stays the caller's: it must outlive the binding)."""
    if not isinstance(buffer_ptr, int) or buffer_ptr <= 0:
        raise InvalidArgument(f"{what}: buffer_ptr must be a host address (a positive int), got {buffer_ptr!r}")
    dtype = _numpy_dtype(element_type)
    if dtype == np.dtype(object):
        raise InvalidArgument(f"{what}: a string tensor cannot be bound by address")
    dims = [int(d) for d in shape]
    count = int(np.prod(dims, dtype=np.int64))
    raw = (ctypes.c_char * (count * dtype.itemsize)).from_address(buffer_ptr)
    return np.frombuffer(raw, dtype=dtype, count=count).reshape(dims)


class IOBinding:
    """onnxruntime's IOBinding for one session (`session.io_binding()`)."""

    def __init__(self, session: Any) -> None:
        self._session = session
        self._inputs: dict[str, Any] = {}
        self._outputs: dict[str, np.ndarray | None] = {}  # name -> preallocated array, or None
        self._results: list[Any] = []
        self._input_names = {a.name for a in session.get_inputs()}
        self._output_names = [o.name for o in session.get_outputs()]

    def _check_input(self, name: str) -> None:
        if name not in self._input_names:
            raise InvalidArgument(f"bind_input: {name!r} is not an input of the model (inputs: "
                                  f"{', '.join(sorted(self._input_names))})")

    def _check_output(self, name: str) -> None:
        if name not in self._output_names:
            raise InvalidArgument(f"bind_output: {name!r} is not an output of the model (outputs: "
                                  f"{', '.join(self._output_names)})")

    # -- inputs ----------------------------------------------------------------------------

    def bind_cpu_input(self, name: str, arr_on_cpu: Any) -> None:
        """Bind `arr_on_cpu` (an ndarray, read where it lies; a list is converted at the run)."""
        self._check_input(name)
        self._inputs[name] = arr_on_cpu

    def bind_input(self, name: str, device_type: Any, device_id: int, element_type: Any, shape: Sequence[int],
                   buffer_ptr: int) -> None:
        """Bind host memory at `buffer_ptr` holding `shape` elements of `element_type`."""
        self._check_input(name)
        check_device(device_type, device_id, f"bind_input({name!r})")
        self._inputs[name] = _wrap_pointer(buffer_ptr, element_type, shape, f"bind_input({name!r})")

    def bind_ortvalue_input(self, name: str, ortvalue: OrtValue) -> None:
        self._check_input(name)
        if not isinstance(ortvalue, OrtValue):
            raise InvalidArgument(f"bind_ortvalue_input({name!r}) takes an OrtValue, got {type(ortvalue).__name__}")
        self._inputs[name] = ortvalue.numpy()

    def clear_binding_inputs(self) -> None:
        self._inputs.clear()

    def synchronize_inputs(self) -> None:
        """Nothing to wait for: host memory."""

    # -- outputs ---------------------------------------------------------------------------

    def bind_output(self, name: str, device_type: Any = "cpu", device_id: int = 0, element_type: Any = None,
                    shape: Sequence[int] | None = None, buffer_ptr: int | None = None) -> None:
        """Bind output `name`: to host memory at `buffer_ptr` (with its `element_type` and
        `shape`), written in place by each run, or (no `buffer_ptr`) allocated by each run."""
        self._check_output(name)
        check_device(device_type, device_id, f"bind_output({name!r})")
        if buffer_ptr is None:
            self._outputs[name] = None
            return
        if element_type is None or shape is None:
            raise InvalidArgument(f"bind_output({name!r}): a buffer_ptr needs its element_type and shape")
        self._outputs[name] = _wrap_pointer(buffer_ptr, element_type, shape, f"bind_output({name!r})")

    def bind_ortvalue_output(self, name: str, ortvalue: OrtValue) -> None:
        """Bind output `name` to a preallocated OrtValue (ortvalue_from_shape_and_type), written
        in place by each run."""
        self._check_output(name)
        if not isinstance(ortvalue, OrtValue) or not ortvalue.is_tensor():
            raise InvalidArgument(f"bind_ortvalue_output({name!r}) takes an OrtValue holding a tensor")
        self._outputs[name] = ortvalue.numpy()

    def clear_binding_outputs(self) -> None:
        self._outputs.clear()
        self._results = []

    def synchronize_outputs(self) -> None:
        """Nothing to wait for: host memory."""

    # -- a run's results -------------------------------------------------------------------

    def get_outputs(self) -> OrtValueVector:
        """The last run's outputs, in the order they were bound (preallocated ones are the
        bound OrtValues' arrays)."""
        return OrtValueVector(OrtValue(v) for v in self._results)

    def get_outputs_as_ortvaluevector(self) -> OrtValueVector:
        return self.get_outputs()

    def copy_outputs_to_cpu(self) -> list[Any]:
        """Copies of the last run's outputs as NumPy arrays."""
        return [v.copy() if isinstance(v, np.ndarray) else v for v in self._results]

    # -- what the session reads ------------------------------------------------------------

    @property
    def bound_inputs(self) -> dict[str, Any]:
        return dict(self._inputs)

    @property
    def bound_outputs(self) -> dict[str, np.ndarray | None]:
        return dict(self._outputs)

    def _set_results(self, results: list[Any]) -> None:
        self._results = results
