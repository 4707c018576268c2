"""CpuAcc's elementwise math (plugins/accel/src/kernels/math_functions.h): exp, expm1, log, tanh, sigmoid, erf
and the normal CDF Phi of GELU, and the activations built on them, measured against float64
NumPy / math over the whole float32 range, for every kernel set this machine runs (portable,
avx2, avx512: option isa).

The functions are called straight from the kernel tables: vector_math_driver.c is linked here
with kern_portable.c, kern_avx2.c and kern_avx512.c compiled with the flags
plugins/accel/CMakeLists.txt gives them (ACCEL_KERNEL_FLAGS below), so what is measured is the
code the plugin runs, over millions of values per call. Needs a C compiler (CC, else cc or gcc).

Inputs: every 4099th float32 bit pattern (about a million values, every binade of both signs,
subnormals included) plus 2^18 uniform values in each of [-1, 1], [-10, 10] and [-120, 120].
Error: |y - f(x)| / ulp(f(x)), f in float64, ulp(r) = 2^(floor(log2 |r|) - 23) (2^-149 in the
subnormals). The bounds below are the stated accuracy (plugins/accel/README.md, "Accuracy");
the measured maxima are a little below them on every kernel set (the AVX2 and AVX-512 builds
fuse multiply-adds, the portable one rounds twice: their bits differ, each within the bound).
"""

from __future__ import annotations

import ctypes
import math
import os
import platform
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from .common import BEST_ISA, HAVE_CPUACC, ISA_ORDER

REPO = Path(__file__).resolve().parent.parent.parent
ACCEL_SRC = REPO / "plugins" / "accel" / "src"
DRIVER = Path(__file__).resolve().parent / "vector_math_driver.c"
X86 = platform.machine().lower() in ("x86_64", "amd64")
ISAS = ISA_ORDER[:ISA_ORDER.index(BEST_ISA) + 1] if X86 else ["portable"]

# plugins/accel/CMakeLists.txt: -O3, C11, and these for the three kernel files.
ACCEL_KERNEL_FLAGS = ["-O3", "-std=c11", "-fPIC", "-fno-trapping-math", "-fno-math-errno"]
ISA_FLAGS = {"portable": [], "avx2": ["-mavx2", "-mfma"],
             "avx512": ["-mavx512f", "-mavx512dq", "-mavx512bw", "-mavx512vl", "-mfma"]}
ISA_FILES = {"portable": "kernels/vector_kernels_portable.c", "avx2": "kernels/vector_kernels_avx2.c",
             "avx512": "kernels/vector_kernels_avx512.c"}
ISA_INDEX = {"portable": 0, "avx2": 1, "avx512": 2}

# accel_math_fn (plugins/accel/src/accel.h)
EXP, EXPM1, LOG, TANH, SIGMOID, ERF, PHI = range(7)

# scripts/sanitize.sh preloads the sanitizer runtimes into this process, not into the compiler.
PLAIN_ENV = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "LSAN_OPTIONS",
                                                               "UBSAN_OPTIONS")}

pytestmark = pytest.mark.skipif(not HAVE_CPUACC, reason="CpuAcc is not built")

FloatArray = np.ndarray


def compiler() -> str:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.fail("a C compiler is needed to build the vector math driver (set CC)")
    return cc


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    out = tmp_path_factory.mktemp("vector_math")
    include = [f"-I{ACCEL_SRC}", f"-I{REPO / 'native' / 'include'}"]
    defines = ["-DACCEL_HAVE_X86_KERNELS=1"] if X86 else []
    objects = []
    sources = [(ISA_FILES[isa], ISA_FLAGS[isa]) for isa in (ISA_ORDER if X86 else ["portable"])]
    # plugin_common's element conversions (and the element sizes they use), which the
    # half-precision rows call
    common = [(str(REPO / "native" / "src" / f), []) for f in ("pn_elements.c", "pn_tensor.c")]
    for name, flags in [*sources, *common, (str(DRIVER), [])]:
        obj = out / (Path(name).stem + ".o")
        src = name if os.path.isabs(name) else str(ACCEL_SRC / name)
        command = [compiler(), *ACCEL_KERNEL_FLAGS, *flags, *defines, *include, "-c", src, "-o", str(obj)]
        result = subprocess.run(command, capture_output=True, text=True, env=PLAIN_ENV)
        assert result.returncode == 0, f"{' '.join(command)}\n{result.stderr}"
        objects.append(str(obj))
    so = out / "libvector_math.so"
    command = [compiler(), "-shared", "-o", str(so), *objects, "-lm"]
    result = subprocess.run(command, capture_output=True, text=True, env=PLAIN_ENV)
    assert result.returncode == 0, f"{' '.join(command)}\n{result.stderr}"
    library = ctypes.CDLL(str(so))
    f32p = ctypes.POINTER(ctypes.c_float)
    library.vm_math.argtypes = [ctypes.c_int, ctypes.c_int, f32p, f32p, ctypes.c_int64]
    library.vm_activation.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_float, ctypes.c_float, f32p, f32p,
                                      ctypes.c_int64]
    return library


def _ptr(a: np.ndarray) -> ctypes._Pointer:  # type: ignore[type-arg]
    return a.ctypes.data_as(ctypes.POINTER(ctypes.c_float))


def math_row(lib: ctypes.CDLL, isa: str, fn: int, x: FloatArray) -> FloatArray:
    x = np.ascontiguousarray(x, np.float32)
    y = np.full_like(x, np.nan)
    assert lib.vm_math(ISA_INDEX[isa], fn, _ptr(x), _ptr(y), x.size) == 0
    return y


def activation_row(lib: ctypes.CDLL, isa: str, kind: int, alpha: float, beta: float, x: FloatArray) -> FloatArray:
    x = np.ascontiguousarray(x, np.float32)
    y = np.full_like(x, np.nan)
    assert lib.vm_activation(ISA_INDEX[isa], kind, alpha, beta, _ptr(x), _ptr(y), x.size) == 0
    return y


# ---- inputs and oracles --------------------------------------------------------------------


def sweep() -> FloatArray:
    bits = np.arange(0, 2**32, 4099, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    rng = np.random.default_rng(17)
    extra = [rng.uniform(-r, r, 2**18).astype(np.float32) for r in (1.0, 10.0, 120.0)]
    return np.concatenate([x[np.isfinite(x)], *extra])


SWEEP = sweep()
SQRT_HALF = math.sqrt(0.5)
_erf = np.frompyfunc(math.erf, 1, 1)
_erfc = np.frompyfunc(math.erfc, 1, 1)


def d(x: FloatArray) -> np.ndarray:
    return np.asarray(x, np.float64)


def sigmoid64(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def phi64(x: np.ndarray) -> np.ndarray:
    return 0.5 * _erfc(-x * SQRT_HALF).astype(np.float64)


MATH: dict[str, tuple[int, Callable[[np.ndarray], np.ndarray], float]] = {
    # name: (accel_math_fn, float64 oracle, stated max ulp)
    "exp": (EXP, np.exp, 1.0),
    "expm1": (EXPM1, np.expm1, 2.0),
    "log": (LOG, np.log, 1.0),
    "tanh": (TANH, np.tanh, 1.5),
    "sigmoid": (SIGMOID, sigmoid64, 2.5),
    "erf": (ERF, lambda x: _erf(x).astype(np.float64), 1.5),
    "phi": (PHI, phi64, 6.0),
}


def ulps(y: FloatArray, ref: np.ndarray) -> np.ndarray:
    """|y - ref| in units of the float32 ulp at ref."""
    mag = np.maximum(np.abs(ref), 2.0**-126)
    ulp = np.exp2(np.floor(np.log2(mag)) - 23)
    return np.abs(d(y) - ref) / ulp


def representable(ref: np.ndarray) -> np.ndarray:
    """Where the exact value is finite and rounds to a finite float32."""
    return np.isfinite(ref) & (np.abs(ref) < float(np.finfo(np.float32).max))


_oracle_cache: dict[str, tuple[FloatArray, np.ndarray]] = {}


def oracle_values(name: str) -> tuple[FloatArray, np.ndarray]:
    """(inputs, float64 results) of a math function over SWEEP (log: its positive values)."""
    if name not in _oracle_cache:
        x = SWEEP[SWEEP > 0] if name == "log" else SWEEP
        with np.errstate(all="ignore"):
            _oracle_cache[name] = (x, MATH[name][1](d(x)))
    return _oracle_cache[name]


# ---- the math functions ----------------------------------------------------------------------


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("name", list(MATH))
def test_math_function_accuracy_over_the_float32_range(lib: ctypes.CDLL, isa: str, name: str) -> None:
    fn, _, bound = MATH[name]
    x, ref = oracle_values(name)
    y = math_row(lib, isa, fn, x)
    ok = representable(ref)
    err = ulps(y[ok], ref[ok])
    worst = int(np.argmax(err))
    assert err[worst] <= bound, (f"{name} on {isa}: {err[worst]:.3f} ulp at x = {x[ok][worst]!r} "
                                 f"(got {y[ok][worst]!r}, exact {ref[ok][worst]!r}); stated bound {bound}")
    # where the exact value is beyond float32, the result is the infinity of its sign
    big = np.isfinite(ref) & ~ok
    assert np.all(np.isinf(y[big]) & (np.sign(y[big]) == np.sign(ref[big])))


INF, NAN = float("inf"), float("nan")
FMAX = float(np.finfo(np.float32).max)
TINY = 1.401298464324817e-45  # the smallest subnormal
ORACLE = None  # the expected value is the float64 function of the float32 input, within the bound
EDGES: dict[str, list[tuple[float, float | None]]] = {
    # name: (x, expected): NaN expects NaN, infinities and zeros are checked exactly (with their sign)
    "exp": [(NAN, NAN), (INF, INF), (-INF, 0.0), (0.0, 1.0), (-0.0, 1.0), (88.72283, ORACLE), (88.7229, INF),
            (100.0, INF), (FMAX, INF), (-103.97, ORACLE), (-103.98, 0.0), (-104.0, 0.0), (-200.0, 0.0),
            (-FMAX, 0.0), (-87.5, ORACLE), (-100.0, ORACLE)],
    "expm1": [(NAN, NAN), (INF, INF), (-INF, -1.0), (0.0, 0.0), (-0.0, -0.0), (1e-30, ORACLE), (-1e-30, ORACLE),
              (TINY, ORACLE), (-20.0, ORACLE), (89.0, INF), (-FMAX, -1.0)],
    "log": [(NAN, NAN), (INF, INF), (0.0, -INF), (-0.0, -INF), (-1.0, NAN), (-INF, NAN), (-TINY, NAN), (1.0, 0.0),
            (TINY, ORACLE), (1.1754942e-38, ORACLE), (1.1754944e-38, ORACLE), (FMAX, ORACLE)],
    "tanh": [(NAN, NAN), (INF, 1.0), (-INF, -1.0), (0.0, 0.0), (-0.0, -0.0), (1e-40, ORACLE), (-1e-40, ORACLE),
             (20.0, 1.0), (-20.0, -1.0), (FMAX, 1.0), (-FMAX, -1.0)],
    "sigmoid": [(NAN, NAN), (INF, 1.0), (-INF, 0.0), (0.0, 0.5), (-0.0, 0.5), (-100.0, ORACLE), (-104.0, 0.0),
                (FMAX, 1.0), (-FMAX, 0.0), (17.0, 1.0), (-90.0, ORACLE)],
    "erf": [(NAN, NAN), (INF, 1.0), (-INF, -1.0), (0.0, 0.0), (-0.0, -0.0), (1e-40, ORACLE), (-1e-40, ORACLE),
            (TINY, ORACLE), (3.92, 1.0), (-5.0, -1.0), (FMAX, 1.0), (-FMAX, -1.0)],
    "phi": [(NAN, NAN), (INF, 1.0), (-INF, 0.0), (0.0, 0.5), (-0.0, 0.5), (-12.0, ORACLE), (-14.5, 0.0), (6.0, 1.0),
            (-FMAX, 0.0), (FMAX, 1.0)],
}


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("name", list(EDGES))
def test_math_function_edges(lib: ctypes.CDLL, isa: str, name: str) -> None:
    fn, oracle, bound = MATH[name]
    xs = np.array([x for x, _ in EDGES[name]], np.float32)
    y = math_row(lib, isa, fn, xs)
    for (_, want), x, got in zip(EDGES[name], xs, y):
        exact = float(oracle(np.array([float(x)]))[0]) if want is ORACLE else want
        what = f"{name}({x!r}) on {isa}: got {got!r}, expected {exact!r}"
        if math.isnan(exact):
            assert math.isnan(got), what
        elif math.isinf(exact) or exact == 0.0 or want is not ORACLE:
            assert got == exact and math.copysign(1.0, got) == math.copysign(1.0, exact), what
        else:
            assert ulps(np.array([got], np.float32), np.array([exact]))[0] <= bound, what


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("name", list(MATH))
def test_every_length_and_position_gives_the_same_bits(lib: ctypes.CDLL, isa: str, name: str) -> None:
    """Rows of every length 0..70 and 1000 (not multiples of the vector width: the tails run
    the loops' scalar remainders), starting at every offset: each element's bits are those it
    has in one long row."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(1070) * 4).astype(np.float32)
    x[::37] = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, 50.0, -90.0], np.float32)[
        np.arange(x[::37].size) % 8]
    if name == "log":
        x = np.abs(x)
    fn = MATH[name][0]
    whole = math_row(lib, isa, fn, x)
    for n in [*range(71), 1000]:
        for start in (0, 1, 5, 13):
            part = math_row(lib, isa, fn, x[start:start + n])
            np.testing.assert_array_equal(part.view(np.uint32), whole[start:start + n].view(np.uint32),
                                          err_msg=f"{name} on {isa}: length {n} from {start}")


def test_the_fma_kernel_sets_agree_bit_for_bit(lib: ctypes.CDLL) -> None:
    """The AVX2 and AVX-512 builds evaluate the same operations (fused multiply-adds where the
    portable build rounds a product and a sum; the AVX-512 rows on kern_math.h's intrinsic forms
    of the functions, the AVX2 rows on the compiler's vectorization of the scalar ones), so they
    give the same bits: the math functions and every activation built on them."""
    fma = [isa for isa in ISAS if isa != "portable"]
    if len(fma) < 2:
        pytest.skip(f"this machine runs {ISAS}: fewer than two kernel sets with FMA")
    for name, (fn, _, _) in MATH.items():
        x, _ = oracle_values(name)
        np.testing.assert_array_equal(math_row(lib, "avx512", fn, x).view(np.uint32),
                                      math_row(lib, "avx2", fn, x).view(np.uint32),
                                      err_msg=f"{name}: avx512 differs from avx2")
    for name, (kind, alpha, beta, _, _, _) in ACTS.items():
        np.testing.assert_array_equal(activation_row(lib, "avx512", kind, alpha, beta, SWEEP).view(np.uint32),
                                      activation_row(lib, "avx2", kind, alpha, beta, SWEEP).view(np.uint32),
                                      err_msg=f"activation {name}: avx512 differs from avx2")


# ---- the activations built on them --------------------------------------------------------


def act_oracles() -> dict[str, tuple[int, float, float, Callable[[np.ndarray], np.ndarray], float, float]]:
    """name: (pn_activation_kind, alpha, beta, float64 oracle of the header's formula, stated max ulp,
    lowest x the bound holds from)."""
    from plugnn.descriptors import ActivationKind as K

    def f32(v: float) -> float:
        return float(np.float32(v))

    c = math.sqrt(2.0 / math.pi)
    lo = -math.inf
    return {
        "sigmoid": (int(K.SIGMOID), 0.0, 0.0, sigmoid64, 2.5, lo),
        "tanh": (int(K.TANH), 0.0, 0.0, np.tanh, 1.5, lo),
        "elu": (int(K.ELU), 0.7, 0.0, lambda x: np.where(x >= 0, x, f32(0.7) * np.expm1(x)), 2.0, lo),
        "gelu": (int(K.GELU), 0.0, 0.0, lambda x: x * phi64(x), 8.5, lo),
        # (1 + tanh(w)) / 2 == sigmoid(2 w): the float64 tanh rounds to -1 in the tail
        "gelu_tanh": (int(K.GELU_TANH), 0.0, 0.0, lambda x: x * sigmoid64(2 * c * (x + 0.044715 * x**3)), 6.5, lo),
        # below -87 sigmoid's factor is subnormal: fewer bits (see README)
        "swish": (int(K.SWISH), 1.0, 0.0, lambda x: x * sigmoid64(x), 3.5, -87.0),
        "swish_1.702": (int(K.SWISH), 1.702, 0.0, lambda x: x * sigmoid64(f32(1.702) * x), 3.5, -87.0 / 1.702),
        "mish": (int(K.MISH), 0.0, 0.0, lambda x: x * np.tanh(np.logaddexp(0.0, x)), 5.0, -87.0),
        "softplus": (int(K.SOFTPLUS), 0.0, 0.0, lambda x: np.logaddexp(0.0, x), 3.0, lo),
        "softsign": (int(K.SOFTSIGN), 0.0, 0.0, lambda x: x / (1.0 + np.abs(x)), 2.0, lo),
        "selu": (int(K.SELU), 1.67326324, 1.05070098,
                 lambda x: f32(1.05070098) * np.where(x > 0, x, f32(1.67326324) * np.expm1(x)), 2.5, lo),
        "celu": (int(K.CELU), 0.5, 0.0, lambda x: np.maximum(0.0, x) + np.minimum(0.0, 0.5 * np.expm1(x / 0.5)), 2.0, lo),
        "celu_neg": (int(K.CELU), -2.0, 0.0,
                     lambda x: np.maximum(0.0, x) + np.minimum(0.0, -2.0 * np.expm1(x / -2.0)), 2.0, lo),
        "scaled_tanh": (int(K.SCALED_TANH), 1.7159, 0.6666667,
                        lambda x: f32(1.7159) * np.tanh(f32(0.6666667) * x), 3.5, lo),
    }


ACTS = act_oracles()


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("name", list(ACTS))
def test_activation_accuracy_over_the_float32_range(lib: ctypes.CDLL, isa: str, name: str) -> None:
    kind, alpha, beta, oracle, bound, lowest = ACTS[name]
    x = SWEEP
    with np.errstate(all="ignore"):
        ref = oracle(d(x))
    y = activation_row(lib, isa, kind, alpha, beta, x)
    # normal results (a subnormal result has fewer bits than the ulp measure assumes)
    ok = representable(ref) & (np.abs(ref) >= 2.0**-126) & (x >= lowest)
    err = ulps(y[ok], ref[ok])
    worst = int(np.argmax(err))
    assert err[worst] <= bound, (f"{name} on {isa}: {err[worst]:.3f} ulp at x = {x[ok][worst]!r} "
                                 f"(got {y[ok][worst]!r}, exact {ref[ok][worst]!r}); stated bound {bound}")
    small = representable(ref) & (np.abs(ref) < 2.0**-126) & (x >= lowest)
    assert np.all(np.abs(d(y[small]) - ref[small]) <= 2.0**-126), f"{name} on {isa}: subnormal results"
    # NaN where the float64 formula gives NaN, and nowhere else
    np.testing.assert_array_equal(np.isnan(y), np.isnan(ref), err_msg=f"{name} on {isa}: NaN pattern")


ACT_EDGES = [NAN, INF, -INF, 0.0, -0.0, FMAX, -FMAX, 1e-40, -1e-40]


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("name", list(ACTS))
def test_activation_edges(lib: ctypes.CDLL, isa: str, name: str) -> None:
    """NaN, infinities, zeros and the largest floats give what the header's formula gives in
    IEEE float64 (so x * f(x) at -inf with f -> 0 is NaN, as CpuRef computes it)."""
    kind, alpha, beta, oracle, bound, _ = ACTS[name]
    x = np.array(ACT_EDGES, np.float32)
    with np.errstate(all="ignore"):
        ref = oracle(d(x))
    y = activation_row(lib, isa, kind, alpha, beta, x)
    for xi, got, want in zip(x, y, ref):
        what = f"{name}({xi!r}) on {isa}: got {got!r}, expected {want!r}"
        if math.isnan(want):
            assert math.isnan(got), what
        elif math.isinf(want) or abs(want) > FMAX:
            assert math.isinf(got) and math.copysign(1.0, got) == math.copysign(1.0, want), what
        elif want == 0.0:
            assert got == 0.0, what
        else:
            assert abs(float(got) - want) <= max(bound * 2.0**-23 * abs(want), 2.0**-149), what


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("name", list(ACTS))
def test_activation_rows_of_every_length_give_the_same_bits(lib: ctypes.CDLL, isa: str, name: str) -> None:
    """The activation rows (the AVX-512 build's in two vectors per step, one, then a masked
    last one) give each element the bits it has in one long row, for every length 0..70 and
    1000 and several starting offsets, in place too (so no result depends on how a layer is
    cut among threads)."""
    kind, alpha, beta, _, _, _ = ACTS[name]
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(1070) * 4).astype(np.float32)
    x[::37] = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, 50.0, -90.0], np.float32)[
        np.arange(x[::37].size) % 8]
    whole = activation_row(lib, isa, kind, alpha, beta, x)
    for n in [*range(71), 1000]:
        for start in (0, 3, 16, 17):
            part = activation_row(lib, isa, kind, alpha, beta, x[start:start + n])
            np.testing.assert_array_equal(part.view(np.uint32), whole[start:start + n].view(np.uint32),
                                          err_msg=f"{name} on {isa}: length {n} from {start}")
    inplace = np.ascontiguousarray(x[:77])
    assert lib.vm_activation(ISA_INDEX[isa], kind, alpha, beta, _ptr(inplace), _ptr(inplace), inplace.size) == 0
    np.testing.assert_array_equal(inplace.view(np.uint32), whole[:77].view(np.uint32), err_msg=f"{name} in place")


def test_the_threshold_kinds_follow_their_comparisons(lib: ctypes.CDLL) -> None:
    """THRESHOLDED_RELU and SHRINK are exact: selects on comparisons that are false for NaN
    (so NaN gives 0, as the formulas read and as ONNX's reference computes them)."""
    from plugnn.descriptors import ActivationKind as K

    x = np.array([NAN, INF, -INF, 0.0, -0.0, 0.5, 0.7, -0.7, 2.0, -2.0, 1e-40], np.float32)
    for isa in ISAS:
        y = activation_row(lib, isa, int(K.THRESHOLDED_RELU), 0.5, 0.0, x)
        np.testing.assert_array_equal(y, np.where(x > np.float32(0.5), x, np.float32(0)))
        y = activation_row(lib, isa, int(K.SHRINK), 0.5, 0.25, x)
        want = np.where(x < -0.5, x + np.float32(0.25), np.where(x > 0.5, x - np.float32(0.25), 0)).astype(np.float32)
        np.testing.assert_array_equal(y, want)
        y = activation_row(lib, isa, int(K.SHRINK), -0.5, 0.25, x)  # alpha < 0: the first test wins
        want = np.where(x < 0.5, x + np.float32(0.25), np.where(x > -0.5, x - np.float32(0.25), 0)).astype(np.float32)
        np.testing.assert_array_equal(y, want)
