"""scripts/ort_api_tests.py, on a stand-in checkout made here: the generated shim makes every
`import onnxruntime[.x]` the plugnn module of that name, and the summary counts what ran."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

STAND_IN_TESTS = '''
import unittest
import numpy as np
from helper import get_name
import onnxruntime as onnxrt
from onnxruntime.capi.onnxruntime_pybind11_state import Fail, InvalidArgument
from onnxruntime.capi import _pybind_state as C


class TestInferenceSession(unittest.TestCase):
    def test_forwarded_to_plugnn(self):
        import plugnn
        import plugnn.capi._pybind_state
        self.assertIs(onnxrt, plugnn)
        self.assertIs(C, plugnn.capi._pybind_state)
        self.assertTrue(issubclass(InvalidArgument, plugnn.InputError))
        self.assertEqual(onnxrt.__name__, "plugnn")

    def test_runs_a_model(self):
        sess = onnxrt.InferenceSession(get_name("model.onnx"), providers=["CPUExecutionProvider"])
        (y,) = sess.run(None, {"x": np.ones((2, 3), np.float32)})
        np.testing.assert_allclose(y, 2 * np.ones((2, 3), np.float32))

    def test_register_custom_ops_library(self):
        onnxrt.SessionOptions().register_custom_ops_library("./libcustom_op_library.so")
'''

HELPER = '''
import os
def get_name(name):
    return os.path.join("testdata", name)
'''


def test_the_script_runs_a_checkout_through_the_shim(tmp_path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    tests = tmp_path / "onnxruntime" / "test" / "python"
    data = tmp_path / "onnxruntime" / "test" / "testdata"
    tests.mkdir(parents=True)
    data.mkdir()
    (tests / "onnxruntime_test_python.py").write_text(STAND_IN_TESTS)
    (tests / "helper.py").write_text(HELPER)
    graph = helper.make_graph([helper.make_node("Add", ["x", "x"], ["y"])], "double",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
              str(data / "model.onnx"))
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "ort_api_tests.py"), str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "== onnxruntime_test_python.py on plugnn: 3 tests" in out
    assert "test_register_custom_ops_library [FAILED]: loads onnxruntime's custom-op shared library" in out
    assert "applicable: 2, passed 2 (100.0 %), not passed 0" in out
    missing = subprocess.run([sys.executable, str(REPO / "scripts" / "ort_api_tests.py"), str(tmp_path / "nothing")],
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode != 0 and "is missing: give an onnxruntime checkout" in missing.stderr
