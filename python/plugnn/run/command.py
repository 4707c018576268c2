"""`plugnn run` from the parsed arguments to the printed report and the exit status."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from plugnn import PlugnnError, Runtime, optimize
from plugnn.run.backends import apply_options, choose_backends, parse_backends, parse_options
from plugnn.run.compare import compare_onnxruntime, require_onnxruntime
from plugnn.run.dynamic_run import DynamicRun
from plugnn.run.errors import RunError
from plugnn.run.inputs import load_input_files, make_inputs, parse_dims, parse_input_shapes
from plugnn.run.model import load_model
from plugnn.run.outputs import prepare_output_dir, summarize, write_outputs
from plugnn.run.placement import placement
from plugnn.run.report import format_report
from plugnn.run.timing import profile_table, time_runs

if TYPE_CHECKING:
    import argparse


def draw_graph(optimized: Any, path: str) -> str:
    """--graph: the drawing written (or rendered) to `path`; a RunError when it cannot be."""
    from plugnn.graph_dot import render

    try:
        return str(render(optimized.explain(format="dot"), path))
    except OSError as exc:
        raise RunError(f"--graph {path}: {exc.strerror or exc}") from None
    except PlugnnError as exc:
        raise RunError(f"--graph: {exc}") from None


def run_command(args: argparse.Namespace) -> int:
    """Run the model and print the report (text, or JSON with --json): 1 if its outputs differ
    from onnxruntime's (--compare), else 0. A user's mistake raises RunError."""
    requested = parse_backends(args.compute)
    options = parse_options(args.option)
    input_files = load_input_files(args.input)
    input_shapes = parse_input_shapes(args.input_shape)
    dims = parse_dims(args.dim)
    if args.compare == "onnxruntime":  # fail before the long part
        require_onnxruntime(args.model)
    if args.output_dir:
        prepare_output_dir(args.output_dir)
    model = load_model(args.model, input_files, input_shapes, dims)
    graph_file = details = None
    with Runtime(dynamic_backends_path=args.dynamic_backends_path) as runtime:
        backends = choose_backends(runtime, requested)
        apply_options(runtime, options)
        if model.network is None:  # the dynamic path: segments, loaded as the runs reach them
            if args.graph:
                raise RunError("--graph draws one network; this model runs on plugnn's dynamic path as segments "
                               "(--details lists each segment's placement)")
            program = DynamicRun(model.proto, model.path or "<model>", runtime, backends, model.shapes)
            try:
                inputs, inputs_described = make_inputs(program.input_infos, input_files, args.seed)
                outputs, timing, profiles = time_runs(program, inputs, args.iterations, args.profile)
                segments = program.segments()
                used = sorted({b for s in segments for b in s.optimized.backends_used})
                notes = model.notes + [f"runs on plugnn's dynamic path (control flow or shapes the data decides) as "
                                       f"{len(segments)} segments, {program.model.segments_made} imported"]
                place, network_name = program.placement(), program.model.name
                details = program.model.explain(verbose=True) if args.details else None
            finally:
                program.close()
        else:
            optimized = optimize(model.network, runtime, backends)
            graph_file = draw_graph(optimized, args.graph) if args.graph else None
            with runtime.load_network(optimized) as loaded:
                inputs, inputs_described = make_inputs(loaded.input_infos, input_files, args.seed)
                outputs, timing, profiles = time_runs(loaded, inputs, args.iterations, args.profile)
            used, notes, network_name = optimized.backends_used, model.notes, optimized.network_name
            place = placement(optimized, model.network)
            details = optimized.explain(verbose=True) if args.details else None
        report: dict[str, Any] = {
            "model": model.path, "description": model.description, "network": network_name,
            "backends": {"available": runtime.backend_ids, "preferred": backends, "used": used, "options": options},
            "placement": place,
            "inputs": inputs_described,
            "notes": notes,
            "outputs": [summarize(name, array) for name, array in outputs.items()],
            "timing": timing,
        }
    if graph_file is not None:
        report["graph_file"] = graph_file
    if details is not None:
        report["details"] = details
    if args.profile:
        report["profile"] = profile_table(profiles)
    if args.output_dir:
        report["output_files"] = write_outputs(args.output_dir, outputs)
    if args.compare == "onnxruntime":
        report["compare"] = compare_onnxruntime(model, inputs, outputs)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(format_report(report))
    return 1 if "compare" in report and not report["compare"]["agree"] else 0
