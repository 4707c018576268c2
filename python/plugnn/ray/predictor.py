"""Predictor: what one Ray worker runs for `Dataset.map_batches`."""

from __future__ import annotations

import os
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from plugnn.backend import NUM_THREADS
from plugnn.errors import InputError
from plugnn.runtime import Runtime
from plugnn.session import InferenceSession


def _worker_cpus() -> int | None:
    """The CPUs Ray gave this worker (None outside a Ray worker)."""
    try:
        import ray
    except ImportError:
        return None
    if not ray.is_initialized():
        return None
    cpus = ray.get_runtime_context().get_assigned_resources().get("CPU")
    return max(1, int(cpus)) if cpus else None


def _runtime_with_threads(threads: int) -> Runtime:
    """A Runtime whose backends that take the reserved num_threads option run on `threads`."""
    runtime = Runtime()
    try:
        for backend_id in runtime.backend_ids:
            backend = runtime.backend(backend_id)
            if backend.takes_option(NUM_THREADS):
                backend.set_option(NUM_THREADS, str(threads))
    except BaseException:
        runtime.close()
        raise
    return runtime


class Predictor:
    """Loads `model` once (an InferenceSession) and runs NumPy batches through it.

    A batch is a dict of columns (Ray Data's "numpy" batch format) or one array (for a model with
    one input). Model inputs are read from the columns named like them, or as `input_columns`
    maps them ({"image": "pixels"}: model input "image" from column "pixels"). The result is a
    dict of the outputs named in `output_names` (default: every output), plus the columns named in
    `keep_columns` (an id, a label) passed through unchanged.

    `backends`, `backend_options`, `max_specializations`: as InferenceSession's. When no
    backend_options are given, every backend that lists the reserved option num_threads
    (backend_api.h's PN_OPTION_NUM_THREADS) gets as many threads as the CPUs Ray assigned the
    worker (`num_cpus` of map_batches), so workers sharing a machine do not oversubscribe it.
    """

    def __init__(self, model: str | os.PathLike[str] | bytes | Any, *, input_columns: Mapping[str, str] | None = None,
                 output_names: Sequence[str] | None = None, keep_columns: Sequence[str] = (),
                 backends: Sequence[str] | None = None,
                 backend_options: Mapping[str, Mapping[str, Any]] | None = None,
                 max_specializations: int = 8) -> None:
        cpus = _worker_cpus() if backend_options is None else None
        if cpus is None:
            self.session = InferenceSession(model, backends, backend_options, max_specializations=max_specializations)
        else:
            runtime = _runtime_with_threads(cpus)
            self.session = InferenceSession(model, backends, runtime=runtime, max_specializations=max_specializations)
            weakref.finalize(self, runtime.close)
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.columns = {name: (input_columns or {}).get(name, name) for name in self.inputs}
        self.output_names = list(output_names) if output_names is not None else [o.name for o in self.session.get_outputs()]
        self.keep_columns = list(keep_columns)

    def __call__(self, batch: Mapping[str, np.ndarray] | np.ndarray) -> dict[str, np.ndarray]:
        if isinstance(batch, np.ndarray):
            if len(self.inputs) != 1:
                raise InputError(f"the model takes {len(self.inputs)} inputs ({', '.join(self.inputs)}): give a dict "
                                 f"of columns, not one array")
            feed = {self.inputs[0]: batch}
            columns: Mapping[str, np.ndarray] = {}
        else:
            columns = batch
            missing = [c for c in self.columns.values() if c not in columns]
            if missing:
                raise InputError(f"the batch has columns {sorted(columns)}; the model's inputs need "
                                 f"{', '.join(repr(c) for c in missing)} (map inputs to columns with input_columns=)")
            feed = {name: np.asarray(columns[column]) for name, column in self.columns.items()}
        outputs = self.session.run(self.output_names, feed)
        result = dict(zip(self.output_names, outputs))
        for column in self.keep_columns:
            if column not in columns:
                raise InputError(f"keep_columns names {column!r}, which the batch does not have")
            result[column] = np.asarray(columns[column])
        return result


def predict(dataset: Any, model: str | os.PathLike[str] | bytes, *, workers: int = 1, cpus_per_worker: float = 1,
            batch_size: int = 32, **predictor_kwargs: Any) -> Any:
    """`dataset.map_batches` with a Predictor on `workers` Ray actors of `cpus_per_worker` CPUs
    each: a lazy Dataset of the predictions (consume it with take_all(), iter_batches(), write_*)."""
    source = model if isinstance(model, (str, bytes)) else str(model)
    return dataset.map_batches(Predictor, fn_constructor_kwargs={"model": source, **predictor_kwargs},
                               concurrency=workers, num_cpus=cpus_per_worker, batch_size=batch_size,
                               batch_format="numpy")
