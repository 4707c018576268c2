"""Greedy decoding with a KV cache: plugnn.InferenceSession against onnxruntime (and OpenVINO when
it is installed) on the decoders of tests/decoders (GPT-2-style and Llama-style, and T5's
decoder with its self-attention cache, exported from transformers configs by
scripts/zoo/export_decoders.py, weights from a seed).

Each model runs a prompt of 32 tokens then 64 greedy steps (the cache fed back; T5: its encoder
once on a source of 32 tokens, untimed, then its decoder from the start token), at batch 1 and
4 and at 1 and 2 threads; the runtimes take turns, one whole generation each, twice, and the
second generation is the one reported (the first warms up; plugnn's builds are counted over
both). Per decode step: the median and p90 of the wall time and the median of the process's
CPU time (which a machine shared with other work inflates less), the tokens compared with
onnxruntime's, plugnn's builds (`session.networks_built`: 2 means one network for the prompt
and one for every step) and instances re-sized in place. Prints a Markdown table
(docs/performance.md, "Run-time shapes"). Run from the repository root:

    python scripts/decode_bench.py [--models gpt2_kv,llama_kv,t5_kv] [--batches 1,4] [--threads 1,2]
                                   [--steps 64] [--json]
    python scripts/decode_bench.py --memory 200 [--models ...]   (RSS over three generations)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "scripts"))

from decoders import decode  # noqa: E402
from zoo import weights  # noqa: E402

PROMPT = 32


def cpu_model() -> str:
    from bench.cpu import this_cpu

    return this_cpu().model


def openvino_runner(model: bytes, threads: int, out_names: list[str]
                     ) -> Callable[[dict[str, np.ndarray]], Mapping[str, np.ndarray]] | None:
    """OpenVINO's run of the graph, its outputs by the graph's output names (in order: OpenVINO
    may name a tensor by another of its names), or None when OpenVINO is not installed."""
    try:
        import openvino as ov
    except ImportError:
        return None
    with tempfile.NamedTemporaryFile(suffix=".onnx", delete=False) as f:
        f.write(model)
        path = f.name
    core = ov.Core()
    # float32 as the others compute (OpenVINO's default on a CPU with AMX or AVX-512 BF16 is bfloat16)
    compiled = core.compile_model(core.read_model(path), "CPU", {"INFERENCE_NUM_THREADS": threads,
                                                                 "NUM_STREAMS": 1, "INFERENCE_PRECISION_HINT": "f32"})
    request = compiled.create_infer_request()
    def run(feed: dict[str, np.ndarray]) -> Mapping[str, np.ndarray]:
        result = request.infer(feed)
        return {name: np.asarray(result[output]) for name, output in zip(out_names, compiled.outputs)}

    return run


def _timed(run: Callable[[dict[str, np.ndarray]], Mapping[str, np.ndarray]], cpu: list[float]
           ) -> Callable[[dict[str, np.ndarray]], Mapping[str, np.ndarray]]:
    def call(feed: dict[str, np.ndarray]) -> Mapping[str, np.ndarray]:
        start = time.process_time()
        out = run(feed)
        cpu.append(time.process_time() - start)
        return out
    return call


Runner = Callable[[dict[str, np.ndarray]], Mapping[str, np.ndarray]]


def runners_of(model: bytes, threads: int, sessions: list[Any]) -> dict[str, Runner]:
    """plugnn's, onnxruntime's and (when installed) OpenVINO's run of one graph; plugnn's
    session is appended to `sessions`."""
    import onnxruntime as ort

    import plugnn

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    reference = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    out_names = [o.name for o in reference.get_outputs()]
    session = plugnn.InferenceSession(model, backend_options={"CpuAcc": {"num_threads": str(threads)}})
    sessions.append(session)
    runners: dict[str, Runner] = {
        "plugnn": lambda f: dict(zip(out_names, session.run(None, f))),
        "onnxruntime": lambda f: dict(zip(out_names, reference.run(None, f))),
    }
    openvino = openvino_runner(model, threads, out_names)
    if openvino is not None:
        runners["openvino"] = openvino
    return runners


def measure(name: str, batch: int, threads: int, steps: int) -> dict[str, Any]:
    entry = decode.entries()[name]
    seq2seq = entry.get("kind") == "encoder_decoder"
    sessions: list[Any] = []
    runners = runners_of(weights.materialize(decode.model_path(entry), 0).SerializeToString(), threads, sessions)
    encoders = runners_of(weights.materialize(decode.encoder_path(entry), 0).SerializeToString(), threads, sessions) \
        if seq2seq else {}
    session = sessions[0]
    results: dict[str, Any] = {}
    for round_ in range(2):
        for runtime, run in runners.items():
            cpu: list[float] = []
            if seq2seq:  # the source as long as a prompt; the encoder runs once, untimed
                tokens, seconds = decode.greedy_seq2seq(encoders[runtime], _timed(run, cpu), entry, batch, PROMPT,
                                                        steps, seed=batch)
            else:
                tokens, seconds = decode.greedy(_timed(run, cpu), entry, batch, PROMPT, steps, seed=batch)
            if round_ == 1:
                wall = [s * 1e3 for s in seconds[1:]]
                results[runtime] = {"tokens": tokens, "median_ms": statistics.median(wall),
                                    "p90_ms": sorted(wall)[int(0.9 * (len(wall) - 1))],
                                    "cpu_median_ms": statistics.median(c * 1e3 for c in cpu[1:]),
                                    "prompt_ms": seconds[0] * 1e3}
    steps_network = session.networks()[-1]
    row = {"model": name, "batch": batch, "threads": threads, "steps": steps,
           "networks_built": session.networks_built, "instances_resized": steps_network.get("instances_resized", 0)}
    for runtime, r in results.items():
        row[runtime] = {k: v for k, v in r.items() if k != "tokens"}
        row[runtime]["same_tokens"] = bool(np.array_equal(r["tokens"], results["onnxruntime"]["tokens"]))
    for opened in sessions:
        opened.close()
    return row


def _resident_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def memory_child(name: str, runtime: str, tokens: int, threads: int) -> list[float]:
    """RSS (MiB) after the session is made, then after each of three generations of `tokens`
    tokens (prompt 32, batch 1; T5: a source of 32), in this process (a fresh one per runtime)."""
    import onnxruntime as ort

    import plugnn

    entry = decode.entries()[name]
    seq2seq = entry.get("kind") == "encoder_decoder"

    def opened(path: Path) -> Runner:
        model = weights.materialize(path, 0).SerializeToString()
        if runtime == "plugnn":
            session: Any = plugnn.InferenceSession(model, backend_options={"CpuAcc": {"num_threads": str(threads)}})
        else:
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        return lambda f: dict(zip(names, session.run(None, f)))

    run = opened(decode.model_path(entry))
    encode = opened(decode.encoder_path(entry)) if seq2seq else None
    rss = [_resident_mb()]
    for generation in range(3):
        if encode is not None:
            decode.greedy_seq2seq(encode, run, entry, 1, PROMPT, tokens - 1, seed=generation)
        else:
            decode.greedy(run, entry, 1, PROMPT, tokens - 1, seed=generation)
        rss.append(_resident_mb())
    return rss


def memory(name: str, tokens: int, threads: int) -> dict[str, list[float]]:
    out = {}
    for runtime in ("plugnn", "onnxruntime"):
        done = subprocess.run([sys.executable, __file__, "--memory-child", name, runtime, str(tokens), str(threads)],
                              capture_output=True, text=True, check=True)
        out[runtime] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--memory-child":
        name, runtime, tokens, threads = sys.argv[2:6]
        print(json.dumps(memory_child(name, runtime, int(tokens), int(threads))))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="gpt2_kv,llama_kv,t5_kv")
    parser.add_argument("--batches", default="1,4")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--memory", type=int, metavar="TOKENS",
                        help="instead: RSS over three generations of TOKENS tokens each (batch 1, one fresh process "
                             "per runtime)")
    args = parser.parse_args()
    if args.memory:
        threads = int(args.threads.split(",")[0])
        print(f"RSS (MiB) after the session, then after each of three {args.memory}-token generations, "
              f"{cpu_model()}, {threads} thread(s), {time.strftime('%Y-%m-%d')}\n")
        print("| model | plugnn | onnxruntime | plugnn / onnxruntime after the third |")
        print("| --- | --- | --- | --- |")
        for model in args.models.split(","):
            rss = memory(model, args.memory, threads)
            print(f"| {model} | {' / '.join(f'{v:.0f}' for v in rss['plugnn'])} | "
                  f"{' / '.join(f'{v:.0f}' for v in rss['onnxruntime'])} | "
                  f"{rss['plugnn'][-1] / rss['onnxruntime'][-1]:.2f} |")
        return 0
    rows = [measure(m, int(b), int(t), args.steps) for m in args.models.split(",")
            for b in args.batches.split(",") for t in args.threads.split(",")]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    peers = [p for p in ("onnxruntime", "openvino") if p in rows[0]]
    print(f"decode, prompt {PROMPT} + {args.steps} greedy steps, {cpu_model()}, {time.strftime('%Y-%m-%d')}\n")
    head = ["model", "batch", "threads", "plugnn step ms median (p90) [CPU ms]"] + \
        [f"{p} step ms median (p90) [CPU ms]" for p in peers] + ["ratio to the faster peer", "same tokens",
                                                                "builds", "instances re-sized"]
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    for row in rows:
        cells = [row["model"], str(row["batch"]), str(row["threads"])]
        for runtime in ["plugnn"] + peers:
            r = row[runtime]
            cells.append(f"{r['median_ms']:.2f} ({r['p90_ms']:.2f}) [{r['cpu_median_ms']:.2f}]")
        faster = min(row[p]["median_ms"] for p in peers)
        cells += [f"{row['plugnn']['median_ms'] / faster:.1f}",
                  " / ".join(f"{p}: {row[p]['same_tokens']}" for p in ["plugnn"] + peers[1:]),
                  str(row["networks_built"]), str(row["instances_resized"])]
        print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
