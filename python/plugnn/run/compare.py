"""--compare onnxruntime: the same inputs run in onnxruntime (CPUExecutionProvider), output by output."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from plugnn.run.errors import RunError, one_line, require
from plugnn.run.outputs import plain

if TYPE_CHECKING:
    import numpy as np

    from plugnn.run.model import Model

# Outputs "agree" with onnxruntime when max|plugnn - ort| <= ATOL + RTOL * max|ort| (float32,
# different summation orders; see docs/run.md). A disagreement makes the exit status 1.
COMPARE_RTOL = 1e-3
COMPARE_ATOL = 1e-4


def require_onnxruntime(model_path: str | None) -> None:
    """onnxruntime, and for the demo (exported to ONNX first) onnx, or a RunError naming the pip command."""
    require("onnxruntime", "--compare onnxruntime")
    if model_path is None:
        require("onnx", "--compare onnxruntime on the built-in demo (exported to ONNX for onnxruntime)")


def compare_onnxruntime(model: Model, inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray]
                        ) -> dict[str, Any]:
    """The report's "compare": onnxruntime's outputs for `inputs` against plugnn's `outputs`."""
    import numpy as np

    require_onnxruntime(model.path)
    if model.path is None:
        from plugnn import demo, synthetic_models

        batch = next(iter(inputs.values())).shape[0]
        source: Any = synthetic_models.small_cnn(batch, seed=demo.DEFAULT_SEED).SerializeToString()
        what = "the demo exported to ONNX (plugnn.synthetic_models.small_cnn)"
    else:
        source, what = model.path, model.path
    import onnxruntime as ort

    try:
        options = ort.SessionOptions()
        options.log_severity_level = 3
        session = ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
        ort_inputs = {i.name for i in session.get_inputs()}
        feed = {name: array for name, array in inputs.items() if name in ort_inputs}
        names = [o.name for o in session.get_outputs()]
        wanted = [n for n in outputs if n in names]
        reference = dict(zip(wanted, session.run(wanted, feed)))
    except Exception as exc:  # noqa: BLE001 - onnxruntime's own errors: report, no traceback
        raise RunError(f"--compare onnxruntime: onnxruntime could not run {what}: {one_line(exc)}") from None
    results = []
    for name, ours in outputs.items():
        if name not in reference:
            results.append({"name": name, "ok": False, "problem": "onnxruntime has no output of this name"})
            continue
        theirs = np.asarray(reference[name])
        if ours.shape != theirs.shape:
            results.append({"name": name, "ok": False,
                            "problem": f"shape {ours.shape} but onnxruntime gives {theirs.shape}"})
            continue
        a, b = ours.astype(np.float64), theirs.astype(np.float64)
        diff = np.abs(a - b)
        scale = float(np.abs(b).max()) if b.size else 0.0
        max_abs = float(diff.max()) if diff.size else 0.0
        max_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else math.inf)
        ok = bool(np.isfinite(diff).all() and max_abs <= COMPARE_ATOL + COMPARE_RTOL * scale)
        results.append({"name": name, "ok": ok, "max_abs_diff": max_abs, "max_rel_diff": plain(max_rel),
                        "reference_max_abs": scale})
    return {"against": "onnxruntime", "version": ort.__version__, "provider": "CPUExecutionProvider",
            "model": what, "rtol": COMPARE_RTOL, "atol": COMPARE_ATOL,
            "agree": all(r["ok"] for r in results), "outputs": results}
