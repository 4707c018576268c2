"""The same application code runs on onnxruntime and on plugnn with only its import changed.

USER_CODE is what an onnxruntime user writes (open a session, read the inputs' names and
shapes, run batches of several sizes, ask for outputs by name); the test runs it once with
`import onnxruntime as ort` and once with `import plugnn as ort`, and compares the results.
Tolerance as in tests/e2e: float32 sums in different orders, max|diff| <= 1e-4 * max|ort|."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx

from session import models

USER_CODE = '''
{import_line}
import numpy as np

session = ort.InferenceSession(MODEL_PATH)
first = session.get_inputs()[0]
described = [(i.name, i.shape, i.type) for i in session.get_inputs()]
described += [(o.name, o.shape, o.type) for o in session.get_outputs()]
rng = np.random.default_rng(7)
results = []
for batch in (1, 3, 2, 3):
    image = rng.standard_normal((batch, 3, 16, 16)).astype(np.float32)
    probabilities, = session.run(["probabilities"], {{first.name: image}})
    everything = session.run(None, {{first.name: image}})
    results.append((probabilities, everything))
'''


def run_user_code(import_line: str, model_path: Path) -> dict[str, Any]:
    scope: dict[str, Any] = {"MODEL_PATH": str(model_path)}
    exec(USER_CODE.format(import_line=import_line), scope)  # noqa: S102 - the test's own code
    return scope


def test_the_same_code_runs_on_onnxruntime_and_plugnn(tmp_path: Path) -> None:
    path = tmp_path / "cnn.onnx"
    onnx.save(models.cnn(), str(path))
    reference = run_user_code("import onnxruntime as ort", path)
    ours = run_user_code("import plugnn as ort", path)
    assert ours["described"] == reference["described"]
    assert ours["described"][0] == ("image", ["N", 3, "size", "size"], "tensor(float)")
    for (p_ours, all_ours), (p_ref, all_ref) in zip(ours["results"], reference["results"], strict=True):
        assert p_ours.shape == p_ref.shape and p_ours.dtype == p_ref.dtype
        assert np.abs(p_ours - p_ref).max() <= 1e-4 * np.abs(p_ref).max()
        assert [a.shape for a in all_ours] == [a.shape for a in all_ref] == [p_ref.shape, p_ref.shape]
        for a, b in zip(all_ours, all_ref):
            assert np.abs(a - b).max() <= 1e-4 * max(np.abs(b).max(), 1.0)
    session = ours["session"]
    assert session.networks_built == 1  # one network for batches 1, 3, 2 and 3: nothing imported again
    assert len(session.networks()[0]["instances"]) == 3  # one instance per binding (N = 1, 3, 2)
    session.close()
