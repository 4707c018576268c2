"""ONNX's whole backend test suite through plugnn.onnx.backend, on the default backends.

Every test of the installed onnx package's suite - node, simple, pytorch-converted,
pytorch-operator and real - runs here on plugnn's default backends (the runtime's preference:
CpuAcc, then CpuRef for what CpuAcc declines), compared with ONNX's expected outputs at each
test's own tolerances by ONNX's runner. Only the CPU variants are collected (the _cuda twins
would be skipped: plugnn's ONNX backend is CPU only). Every test left out is in EXCLUDED with
its reason; docs/conformance.md mirrors the list and gives the counts per suite beside
onnxruntime's (scripts/onnx_conformance.py measures both in one run).
"""

from __future__ import annotations

import warnings

import onnx.backend.test

from plugnn.onnx import backend as plugnn_backend

# ONNX's test case classes, one per suite.
SUITES = {
    "node": "OnnxBackendNodeModelTest",
    "simple": "OnnxBackendSimpleModelTest",
    "pytorch-converted": "OnnxBackendPyTorchConvertedModelTest",
    "pytorch-operator": "OnnxBackendPyTorchOperatorModelTest",
    "real": "OnnxBackendRealModelTest",
}

# (pattern, reason): every test left out, and why. docs/conformance.md mirrors this list.
EXCLUDED = [
    (r"^test_(cast|castlike)_.*(FLOAT8|FLOAT4E2M1|INT4|UINT4|INT2|UINT2|e8m0)",
     "float8, float4, 4-bit and 2-bit integer element types: no plugnn element type holds them (the ABI's "
     "pn_data_type has whole-byte integer and IEEE/bfloat16 float types only); the importer refuses them, naming "
     "the type"),
    (r"^test_(quantizelinear|dequantizelinear)_.*(e4m3fn|e5m2|float4e2m1|int4|uint4|int2|uint2)",
     "float8, float4, 4-bit and 2-bit integer quantization: no plugnn element type holds them (as above); the "
     "importer refuses them, naming the input and its type"),
    (r"^test_attention_4d_causal_fp16", "float16 attention: plugnn's layers compute in float32 and round each "
     "layer's result to float16 once; ONNX's expected values come from NumPy float16 arithmetic that rounds inside "
     "each step. 2 of the 192 elements differ by one float16 ulp, beyond the test's rtol 1e-3, and plugnn's are the "
     "nearer to the exact (float64) values: errors 2.0e-4 and 1.4e-4 against 2.9e-4 and 3.5e-4 (the expanded form "
     "computes the same and is excluded with it). The difference arises in Softmax alone: in the expanded form every "
     "node before it agrees bit for bit, and 14 of its 144 outputs differ by one ulp (4.9e-4) because ONNX's "
     "reference rounds exp, the sum and the quotient each to float16; matching that would make every float16 "
     "Softmax less accurate, so plugnn does not. onnxruntime fails the plain form and passes the expanded one"),
    (r"^test_dft_inverse", "the expected outputs come from NumPy's complex64 FFT, whose imaginary parts are off by "
     "1.9e-7 where the exact value is 0, beyond the test's atol of 1e-7; plugnn's DFT computes in double (3e-15 "
     "there; the inverse DFT against float64 NumPy: tests/conformance/test_spectral.py, tests/onnx/test_misc_ops.py)"),
    (r"^test_loop16_seq_none", "ONNX's runner cannot compare this test's expected output (a sequence whose first "
     "element is a scalar: len() of an unsized array raises TypeError inside onnx.backend.test.runner, and "
     "onnxruntime fails it the same way); tests/onnx/test_dynamic.py compares plugnn's output with ONNX's reference "
     "evaluator instead"),
    (r"^test_ai_onnx_ml_", "the ai.onnx.ml domain (ArrayFeatureExtractor, Binarizer, LabelEncoder, TreeEnsemble): "
     "classical machine-learning operators are out of a neural-network runtime's scope, by decision; plugnn imports "
     "ONNX's default domain (and ai.onnx.preview's function bodies) and refuses such a model naming the missing "
     "default-domain opset. onnxruntime passes these 8"),
    (r"^test_(adagrad|adam|momentum|nesterov_momentum)_", "ai.onnx.preview.training's optimizers (Adagrad, Adam, "
     "Momentum): training, out of an inference runtime's scope; onnxruntime fails them too"),
    (r"^test_gradient_of_add", "ai.onnx.preview.training's Gradient (simple suite): computing gradients is training, "
     "out of an inference runtime's scope; onnxruntime fails them too"),
    (r"^test_bernoulli", "Bernoulli's expected outputs are draws of NumPy's global generator, which ONNX does not "
     "specify and no other generator reproduces (the seeded cases too: NumPy's RandomState(seed)); plugnn's Bernoulli "
     "(its function body over RandomUniformLike, Philox) is deterministic when seeded and is checked in "
     "tests/onnx/test_random_ops.py; onnxruntime fails them too"),
    (r"^test_training_dropout(?!_zero_ratio)", "Dropout with training_mode true and a ratio > 0 zeroes elements at "
     "random (the expected values are one draw of NumPy's RandomState); plugnn drops them at random too, as "
     "onnxruntime does (RandomUniformLike, Philox: the same distribution, not NumPy's draws; "
     "tests/onnx/test_leniency.py checks it), and the test_training_dropout_zero_ratio cases pass; onnxruntime fails "
     "them too"),
    (r"^test_image_decoder_", "ImageDecoder decodes JPEG, PNG, BMP, TIFF, WebP, JPEG 2000 and PNM files: a codec, "
     "not a neural-network computation, and bit-exact only against the decoder that made the expected outputs "
     "(Pillow); by decision plugnn takes decoded pixels from the application and refuses the operator; "
     "onnxruntime fails them too"),
]


with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)  # ONNX's test generators overflow casts on purpose
    backend_test = onnx.backend.test.BackendTest(plugnn_backend, __name__)

for pattern, _reason in EXCLUDED:
    backend_test.exclude(pattern)

# The CPU variants of every suite (the _cuda twins would only be skipped).
for _suite, _class_name in SUITES.items():
    _cases = backend_test.test_cases[_class_name]
    for _name in [n for n in vars(_cases) if n.startswith("test_") and n.endswith("_cuda")]:
        delattr(_cases, _name)
    globals()[_class_name] = _cases
del _cases
