"""The network's inputs: --input files, --input-shape and --dim read, then every input made (file or random)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from plugnn.run.errors import RunError, one_line

if TYPE_CHECKING:
    import numpy as np

    from plugnn import TensorInfo


def _name_value(option: str, text: str, what: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name or not value:
        raise RunError(f"{option} takes {what}, got {text!r}")
    return name, value


def load_input_files(specs: list[str]) -> dict[str, tuple[np.ndarray, str]]:
    """--input NAME=FILE.npy -> {name: (array, path)}; a bad file is a RunError."""
    import numpy as np

    arrays: dict[str, tuple[np.ndarray, str]] = {}
    for spec in specs:
        name, path = _name_value("--input", spec, "NAME=FILE.npy")
        if name in arrays:
            raise RunError(f"--input gives input {name!r} more than once")
        if not os.path.isfile(path):
            raise RunError(f"--input {name}: no such file: {path}")
        try:
            with open(path, "rb") as f:
                magic = f.read(6)
        except OSError as exc:
            raise RunError(f"--input {name}: cannot read {path} ({exc.strerror or exc})") from None
        if magic != b"\x93NUMPY":
            what = "an .npz archive" if magic.startswith(b"PK") else "not a .npy file"
            raise RunError(f"--input {name}: {path} is {what}; give one array saved with numpy.save")
        try:
            array = np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError) as exc:
            raise RunError(f"--input {name}: {path} is not a .npy file of numbers ({one_line(exc)})") from None
        arrays[name] = (np.ascontiguousarray(array), path)
    return arrays


def parse_input_shapes(specs: list[str]) -> dict[str, tuple[int, ...]]:
    """--input-shape NAME=D,D,... -> {name: shape}."""
    shapes: dict[str, tuple[int, ...]] = {}
    for spec in specs:
        name, dims = _name_value("--input-shape", spec, "NAME=D,D,... (e.g. input=1,3,224,224)")
        try:
            shape = tuple(int(d) for d in dims.replace("x", ",").split(","))
        except ValueError:
            raise RunError(f"--input-shape {name}: dimensions must be integers, got {dims!r}") from None
        if any(d < 1 for d in shape):
            raise RunError(f"--input-shape {name}: dimensions must be positive, got {dims!r}")
        if name in shapes:
            raise RunError(f"--input-shape gives input {name!r} more than once")
        shapes[name] = shape
    return shapes


def parse_dims(specs: list[str]) -> dict[str, int]:
    """--dim SYMBOL=N -> {symbol: N}."""
    dims: dict[str, int] = {}
    for spec in specs:
        name, value = _name_value("--dim", spec, "SYMBOL=N (e.g. batch=8)")
        try:
            size = int(value)
        except ValueError:
            raise RunError(f"--dim {name}: the size must be an integer, got {value!r}") from None
        if size < 1:
            raise RunError(f"--dim {name}: the size must be positive, got {size}")
        if name in dims:
            raise RunError(f"--dim gives symbol {name!r} more than once")
        dims[name] = size
    return dims


def make_inputs(input_infos: dict[str, TensorInfo], files: dict[str, tuple[np.ndarray, str]], seed: int
                ) -> tuple[dict[str, np.ndarray], list[dict[str, Any]]]:
    """Every input the loaded network takes, from its file or random: (arrays, the report's rows)."""
    import numpy as np

    unknown = sorted(set(files) - set(input_infos))
    if unknown:
        takes = ", ".join(f"{n} {tuple(i.shape)} {i.dtype.numpy_name}" for n, i in input_infos.items())
        raise RunError(f"--input names {', '.join(map(repr, unknown))}, which the network does not take; "
                       f"it takes: {takes}")
    rng = np.random.default_rng(seed)
    arrays: dict[str, np.ndarray] = {}
    described: list[dict[str, Any]] = []
    for name, info in input_infos.items():
        dtype, shape = info.dtype.numpy_dtype, tuple(info.shape)
        if name in files:
            array, path = files[name]
            if array.shape != shape:
                raise RunError(f"--input {name}: {path} holds shape {array.shape}, the network takes {shape}")
            if array.dtype != dtype:
                raise RunError(f"--input {name}: {path} holds {array.dtype}, the network takes {dtype} "
                               f"(save it with .astype(numpy.{dtype.name}))")
            source = path
        else:
            array, source = _random(rng, shape, dtype), f"random (seed {seed})"
        arrays[name] = array
        described.append({"name": name, "shape": list(shape), "dtype": dtype.name, "source": source})
    return arrays, described


def _random(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """Standard normal floats; integers 0 or 1 (an index valid in any table of two or more rows:
    token ids, token type ids, attention masks); booleans half true."""
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(0, 2, shape).astype(dtype)
