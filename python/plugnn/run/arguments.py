"""The `plugnn run` subcommand's options (argparse) and their defaults.

Imported whenever the `plugnn` command starts, so it imports nothing heavy: the command
itself is plugnn.run.command, imported only when `plugnn run` runs.
"""

from __future__ import annotations

import argparse

DEFAULT_ITERATIONS = 10
DEFAULT_BUDGET_SECONDS = 10.0  # with no --iterations, a slow model gets as many runs as fit in this


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add `run` to the `plugnn` command's subparsers."""
    run = commands.add_parser(
        "run", help="run a model (or the built-in demo) and report placement, outputs and timing",
        description="Run an ONNX model, or with no MODEL the built-in demo network, on plugnn's backends: "
                    "prints which backend runs each layer, the inputs, output summaries and timing.")
    run.add_argument("model", nargs="?", metavar="MODEL",
                     help="an ONNX model file (needs the onnx package); omit it to run the built-in demo")
    run.add_argument("-c", "--compute", metavar="BACKEND[,BACKEND...]",
                     help="backends in order of preference (default: every usable backend, "
                          "CpuAcc and CpuRef first)")
    run.add_argument("--option", action="append", default=[], metavar="BACKEND:KEY=VALUE",
                     help="set a backend option before the model is optimized, e.g. CpuAcc:num_threads=1 "
                          "(repeatable; CpuAcc's options: plugins/accel/README.md)")
    run.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                     help="feed input NAME from a .npy file (repeatable); other inputs are random")
    run.add_argument("--input-shape", action="append", default=[], metavar="NAME=D,D,...",
                     help="fix the shape of an ONNX input with dynamic dimensions (repeatable)")
    run.add_argument("--dim", action="append", default=[], metavar="SYMBOL=N",
                     help="set a symbolic dimension (an input's dim_param, e.g. batch=8) for every input naming "
                          "it (repeatable); a symbol not set is 1")
    run.add_argument("--iterations", type=_positive_int, default=None, metavar="N",
                     help=f"timed runs after one warm-up run (default: {DEFAULT_ITERATIONS}, or as many as fit "
                          f"in about {DEFAULT_BUDGET_SECONDS:g} s when one run is slow, at least 1)")
    run.add_argument("--dynamic-backends-path", metavar="DIR",
                     help="search only this directory for dynamic backends")
    run.add_argument("--profile", action="store_true", help="per-layer timing table (median over the iterations)")
    run.add_argument("--output-dir", metavar="DIR", help="write every output to DIR/NAME.npy")
    run.add_argument("--compare", choices=["onnxruntime"],
                     help="run the same inputs in onnxruntime (CPUExecutionProvider) and report the differences")
    run.add_argument("--details", action="store_true",
                     help="after the report, every layer with every backend's answer (explain(verbose=True))")
    run.add_argument("--graph", metavar="FILE",
                     help="draw the network coloured by backend, fallbacks and fused layers marked: FILE.dot "
                          "(Graphviz text, needs nothing) or FILE.svg/.png/.pdf (needs Graphviz's dot program)")
    run.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    run.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the random inputs (default: 0)")
    run.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                     help="log what the loader does")
    return run


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value
