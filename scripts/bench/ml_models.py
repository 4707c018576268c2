"""plugnn vs onnxruntime on classical-ML models (a random forest and gradient boosting from
scikit-learn, converted with skl2onnx), at batch 1 and 1000, in one process, the two runtimes
alternated run by run (so a load change on a shared machine hits both), medians printed.

    python scripts/bench/ml_models.py [--threads N] [--runs R]

onnxruntime runs with intra_op_num_threads = N (default 1) and plugnn.InferenceSession twice:
with its default backends (tree layers on CpuAcc, num_threads = N) and on CpuRef alone (its tree
kernel is one thread); the three alternate run by run.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "ml"))
from models import data, skl  # noqa: E402


def models() -> list[tuple[str, object, np.ndarray]]:
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestClassifier

    x, y = data(3, rows=2000)
    xr, yr = data(0, rows=2000)
    forest = RandomForestClassifier(100, max_depth=10, random_state=0).fit(x, y)
    boosting = GradientBoostingRegressor(n_estimators=100, max_depth=3, random_state=0).fit(xr, yr)
    return [("random forest, 100 trees, depth 10, 3 classes (ZipMap off)", skl(forest, zipmap=False), x),
            ("random forest, as skl2onnx writes it (ZipMap on)", skl(forest), x),
            ("gradient boosting regressor, 100 trees, depth 3", skl(boosting), xr)]


def main() -> None:
    import onnxruntime as ort

    import plugnn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    print(f"{platform.processor() or platform.machine()}; onnxruntime {ort.__version__} with "
          f"{args.threads} thread(s); plugnn {plugnn.__version__}")
    for name, model, rows in models():
        options = ort.SessionOptions()
        options.intra_op_num_threads = args.threads
        reference = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        sessions = [plugnn.InferenceSession(model.SerializeToString(),
                                            backend_options={"CpuAcc": {"num_threads": args.threads}}),
                    plugnn.InferenceSession(model.SerializeToString(), backends=["CpuRef"])]
        for batch in (1, 1000):
            feed = {"X": np.ascontiguousarray(rows[:batch])}
            runs = args.runs if batch == 1 else max(args.runs // 10, 5)
            for _ in range(3):
                reference.run(None, feed)
                for session in sessions:
                    session.run(None, feed)
            times: tuple[list[float], ...] = ([], [], [])
            for _ in range(runs):
                start = time.perf_counter()
                reference.run(None, feed)
                times[0].append(time.perf_counter() - start)
                for i, session in enumerate(sessions):
                    start = time.perf_counter()
                    session.run(None, feed)
                    times[i + 1].append(time.perf_counter() - start)
            ort_us, acc_us, ref_us = (float(np.median(t)) * 1e6 for t in times)
            print(f"{name:62s} batch {batch:5d}: onnxruntime {ort_us:10.1f} us  plugnn CpuAcc {acc_us:10.1f} us "
                  f"({acc_us / ort_us:.2f}x)  plugnn CpuRef {ref_us:10.1f} us ({ref_us / ort_us:.2f}x)")

if __name__ == "__main__":
    main()
