"""The outputs: a summary of each for the report, and --output-dir's .npy files."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plugnn.run.errors import RunError

if TYPE_CHECKING:
    import numpy as np

FIRST_VALUES = 5  # values of each output shown in the report


def summarize(name: str, array: np.ndarray) -> dict[str, Any]:
    """Shape, dtype, min, max, mean, the count of non-finite values and the first values."""
    import numpy as np

    flat = array.reshape(-1)
    summary: dict[str, Any] = {"name": name, "shape": list(array.shape), "dtype": array.dtype.name}
    if flat.size:
        values = flat.astype(np.float64) if array.dtype.kind in "fiub" else None
        if values is not None:
            summary.update(min=float(values.min()), max=float(values.max()), mean=float(values.mean()))
            summary["nonfinite"] = int(flat.size - np.isfinite(values).sum())
        summary["first"] = [plain(v) for v in flat[:FIRST_VALUES]]
    return summary


def plain(value: Any) -> Any:
    """A NumPy scalar as a Python one for JSON; inf and nan as their names."""
    value = value.item() if hasattr(value, "item") else value
    return value if not isinstance(value, float) or math.isfinite(value) else str(value)


def prepare_output_dir(directory: str) -> Path:
    """--output-dir made (checked before the runs, so a bad one fails early)."""
    target = Path(directory)
    if target.exists() and not target.is_dir():
        raise RunError(f"--output-dir {directory} exists and is not a directory")
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunError(f"--output-dir {directory}: cannot create it ({exc.strerror or exc})") from None
    return target


def write_outputs(directory: str, outputs: dict[str, np.ndarray]) -> list[dict[str, str]]:
    """Every output to DIR/NAME.npy (names made safe and unique); the report's "output_files"."""
    import numpy as np

    target = prepare_output_dir(directory)
    written, used = [], set()
    for name, array in outputs.items():
        file_name = _file_name(name)
        stem = file_name[:-4]
        n = 1
        while file_name in used:
            n += 1
            file_name = f"{stem}_{n}.npy"
        used.add(file_name)
        path = target / file_name
        try:
            np.save(path, array)
        except OSError as exc:
            raise RunError(f"--output-dir: cannot write {path} ({exc.strerror or exc})") from None
        written.append({"name": name, "path": str(path)})
    return written


def _file_name(name: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.\-]", "_", name).lstrip(".")
    return (safe or "output") + ".npy"
