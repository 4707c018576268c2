"""plugnn.dynamic: models whose structure or shapes are decided while they run.

A `Program` runs one ONNX graph (a model's, an If branch, a Loop or Scan body, a function body)
as a sequence of steps over run-time values (NumPy arrays, Python lists for sequences, None for
an empty optional):

- a *segment*: a maximal run of nodes imported as a plugnn Network, specialized for the shapes
  (and, where the import needs them, the values) of what it reads, optimized and assigned to the
  backends like any network, loaded once and cached (LRU) for those shapes;
- a *runtime step*: a node the runtime itself runs (If, Loop, Scan, the sequence and optional
  operators, a function whose body holds one of them), running sub-programs for subgraphs.

A segment ends where the import cannot go on without running what came before: a node the
runtime runs, a value the import needs (a shape, pads, k) computed at run time, a node reading
the output of a data-dependent layer (NonZero, Unique, NonMaxSuppression, Compress; their
backends report the actual shape). The next segment is then imported with that value or shape
known. See docs/architecture.md, "Dynamic models".
"""

from __future__ import annotations

from plugnn.dynamic.program import DynamicModel, Engine, Program

__all__ = ["DynamicModel", "Engine", "Program"]
