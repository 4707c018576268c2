"""`plugnn run`: load a model (or the built-in demo), run it on the backends and report.

Modelled on Arm NN's ExecuteNetwork: where every layer runs, the inputs used, output
summaries, timing over iterations, an optional per-layer profile, the outputs saved as .npy
and a comparison with onnxruntime. User mistakes raise RunError (a PlugnnError), which the
CLI prints as one `plugnn: error: ...` line with exit status 2. docs/run.md is the guide.

The modules, in the order the data flows through them:

    arguments  the `run` subcommand's options and their defaults (imported when `plugnn` starts)
    errors     RunError, one-line messages, the check for an optional package
    backends   -c parsed, the default order of preference, the backends checked in the runtime
    inputs     --input files and --input-shape read; the network's inputs made (files or random)
    model      the ONNX model or the demo, loaded as a Network
    placement  where every layer runs: groups, fallbacks, fusions, removals
    timing     the warm-up and timed runs, the progress bar, the profile table
    outputs    output summaries and --output-dir's .npy files
    compare    --compare onnxruntime
    report     the report as text
    command    the orchestration: parsed arguments in, the report printed, the exit status out

Only `arguments` is imported when the `plugnn` command starts; the rest (and NumPy) when
`plugnn run` runs, so `plugnn --cmake-dir` stays fast.
"""
