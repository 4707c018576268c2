"""Every command and Python snippet of README.md and docs/*.md runs as written, so a false
command fails here (docs_snippets.py says what counts as a snippet and how each is run).

Each page's snippets run in order in a working directory of the page's own, as a reader would
run them one after the other. What a page's snippets take as given (a model file such as
`model.onnx`, a variable a fragment uses) is made by the page's setup below, from seeds
(nothing is downloaded). `pip` is judged, not run (tests/docs/pip_check.py): the suite runs
offline inside an installation of plugnn. What a page cannot run in CI is marked in the page
itself with its reason (`<!-- snippet: skip: ... -->`); `test_every_snippet_runs_or_says_why`
lists them. The transcripts show CpuAcc on a CPU with AVX-512: elsewhere their commands run and
must end as shown, and what they print is not compared.

Cost: about 45 s of CPU for all pages (75 s of wall time on a loaded 2-vCPU machine), most of it
docs/run.md (ResNet-18 at 224x224 run 11 times and in onnxruntime), docs/ray.md (a local Ray
cluster of 2 CPUs), docs/session.md (ResNet-50 at 224x224, four batch sizes) and docs/onnx.md
(ResNet-18 at 224x224 on CpuRef, the oracle, once); the mock plugins are the suite's own build.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

import docs_snippets as ds

TIMEOUT = 600
HERE = Path(__file__).resolve().parent


# ---- what each page takes as given -----------------------------------------------------------


def _symbolic_batch(model, name: str = "batch"):  # noqa: ANN001, ANN202 - onnx types, imported late
    for value in list(model.graph.input) + list(model.graph.output):
        value.type.tensor_type.shape.dim[0].dim_param = name
    return model


def _readme(work: Path) -> str:
    import onnx

    from plugnn import synthetic_models

    onnx.save(_symbolic_batch(synthetic_models.small_cnn()), work / "model.onnx")
    return "import numpy as np\nbatch = np.zeros((4, 3, 32, 32), np.float32)  # the README's `batch`\n"


def _onnx(work: Path) -> str:
    from plugnn import synthetic_models

    synthetic_models.save(synthetic_models.resnet18(), work / "resnet.onnx")
    return textwrap.dedent("""
        import numpy as np
        import onnx
        import onnx.helper
        x = np.array([[-1.0, 2.0]], np.float32)  # the backend snippet's model and input
        model = onnx.helper.make_model(onnx.helper.make_graph(
            [onnx.helper.make_node("Relu", ["x"], ["y"])], "relu",
            [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 2])],
            [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 2])]))
        """)


def _run(work: Path) -> str:
    import numpy as np
    import onnx
    import onnx.helper as h

    np.save(work / "img64.npy", np.zeros((1, 3, 32, 32), np.float64))
    body = h.make_graph([h.make_node("Identity", ["cond_in"], ["cond_out"]),
                         h.make_node("Add", ["sum_in", "sum_in"], ["sum_out"])], "body",
                        [h.make_tensor_value_info("i", onnx.TensorProto.INT64, []),
                         h.make_tensor_value_info("cond_in", onnx.TensorProto.BOOL, []),
                         h.make_tensor_value_info("sum_in", onnx.TensorProto.FLOAT, [1])],
                        [h.make_tensor_value_info("cond_out", onnx.TensorProto.BOOL, []),
                         h.make_tensor_value_info("sum_out", onnx.TensorProto.FLOAT, [1])])
    graph = h.make_graph([h.make_node("Loop", ["n", "", "x"], ["y"], name="loop", body=body)], "loop",
                         [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])],
                         [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])],
                         [onnx.numpy_helper.from_array(np.array(3, np.int64), "n")])
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 17)]), work / "loop.onnx")
    return ""


def _session(work: Path) -> str:
    sys.path.insert(0, str(ds.ROOT / "tests"))
    from zoo import weights

    import onnx

    entry = next(e for e in weights.load_manifest()["models"] if e["name"] == "resnet50")
    onnx.save(weights.materialize(weights.model_path(entry), seed=0), work / "resnet50.onnx")
    return ""


def _ray(work: Path) -> str:
    import onnx

    from plugnn import synthetic_models

    model = _symbolic_batch(synthetic_models.resnet18(image=64))
    for node in model.graph.node:  # the snippet's column is "image"
        node.input[:] = ["image" if name == model.graph.input[0].name else name for name in node.input]
    model.graph.input[0].name = "image"
    onnx.save(model, work / "resnet18.onnx")
    return ""


SETUP: dict[str, Callable[[Path], str]] = {
    "README.md": _readme, "docs/onnx.md": _onnx, "docs/run.md": _run, "docs/session.md": _session,
    "docs/ray.md": _ray,
}
# Pages whose snippets run from the repository root (they read the repository's files).
IN_REPOSITORY = {"docs/zoo.md"}
NEEDS = {"docs/ray.md": "ray", "docs/onnx.md": "onnx", "docs/run.md": "onnxruntime", "docs/session.md": "onnx",
         "README.md": "onnx", "docs/zoo.md": "onnx"}


# ---- running ----------------------------------------------------------------------------------


def _environment(work: Path, extra: dict[str, str]) -> dict[str, str]:
    """This interpreter first on PATH (its `plugnn`, `python`, `cmake`), pip judged by pip_check."""
    tools = work / ".snippet-tools"
    tools.mkdir(exist_ok=True)
    check = HERE / "pip_check.py"
    (tools / "pip").write_text(f'#!/bin/sh\nexec "{sys.executable}" "{check}" "$@"\n')
    wrapper = (f'#!/bin/sh\nif [ "$1" = "-m" ] && [ "$2" = "pip" ]; then shift 2; exec "{sys.executable}" '
               f'"{check}" "$@"; fi\nexec "{sys.executable}" "$@"\n')
    for name in ("python", "python3"):
        (tools / name).write_text(wrapper)
    for tool in tools.iterdir():
        tool.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("PLUGNN_DYNAMIC_BACKEND_PATHS", "PYTHONPATH")}
    env["PATH"] = os.pathsep.join([str(tools), str(Path(sys.executable).parent), env.get("PATH", "")])
    env["COLUMNS"] = "100"
    env.update(extra)
    return env


@functools.cache
def _outputs_comparable() -> bool:
    """The transcripts show CpuAcc as it places layers on a CPU with AVX-512 (its blocked chains):
    on another CPU the commands still run and must end as shown, but their output differs."""
    import plugnn

    with plugnn.Runtime() as runtime:
        return "CpuAcc" in runtime.backend_ids and runtime.backend("CpuAcc").get_option("isa") == "avx512"


def _substitute(text: str, places: dict[str, str]) -> str:
    for written, real in places.items():
        text = text.replace(written, real)
    return text


def _run_page(page: str, work: Path, places: dict[str, str]) -> None:
    prelude = SETUP[page](work) if page in SETUP else ""
    cwd = ds.ROOT if page in IN_REPOSITORY else work
    env = _environment(work, {})
    failures = []
    for index, snippet in enumerate(ds.snippets(page)):
        if snippet.skip_reason is not None:
            continue
        body = _substitute(snippet.body, places)
        if snippet.kind == "file":
            (work / snippet.note.split(" ", 1)[1]).write_text(body)
            continue
        if snippet.kind == "python":
            script = work / f"snippet_{index}.py"
            script.write_text(ds.python_source(dataclasses.replace(snippet, body=body), prelude))
            done = subprocess.run([sys.executable, str(script)], cwd=cwd, env=env, capture_output=True, text=True,
                                  timeout=TIMEOUT)
            if done.returncode != 0:
                failures.append(f"{snippet.where} (python) failed:\n{done.stdout[-2000:]}{done.stderr[-3000:]}")
            continue
        if snippet.kind == "shell":
            done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", body], cwd=cwd, env=env,
                                  capture_output=True, text=True, timeout=TIMEOUT)
            if done.returncode != 0:
                failures.append(f"{snippet.where} (shell) failed with status {done.returncode}:\n"
                                f"{done.stdout[-2000:]}{done.stderr[-3000:]}")
            continue
        for command, shown in ds.transcript(dataclasses.replace(snippet, body=body)):
            done = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=cwd, env=env, capture_output=True,
                                  text=True, timeout=TIMEOUT)
            expects_error = any(line.lstrip().startswith(("plugnn: error:", "result: FAIL")) for line in shown)
            if (done.returncode != 0) != expects_error:
                failures.append(f"{snippet.where}: `$ {command}` exited with status {done.returncode}:\n"
                                f"{done.stdout[-2000:]}{done.stderr[-3000:]}")
                continue
            difference = ds.matches(shown, done.stdout + done.stderr) if _outputs_comparable() else None
            if difference:
                failures.append(f"{snippet.where}: `$ {command}`: {difference}")
    assert not failures, "\n\n".join(failures)


RUN_PAGES = [page for page in ds.pages() if any(s.kind != "file" and s.skip_reason is None for s in ds.snippets(page))]


@pytest.mark.parametrize("page", [pytest.param(page, marks=pytest.mark.plugins) if page == "docs/backends.md" else page
                                  for page in RUN_PAGES])  # backends.md's check-backend transcript runs a mock
def test_page_snippets_run_as_written(page: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if page in NEEDS:
        pytest.importorskip(NEEDS[page])
    places = {}
    if page == "docs/backends.md":
        if shutil.which("cmake") is None:
            pytest.fail("cmake is needed: pip install '.[test]'")
        places = {"/tmp/docs_example": str(tmp_path), "/tmp/mocks/out": str(request.getfixturevalue("mock_out_dir"))}
    _run_page(page, tmp_path, places)


def test_every_snippet_runs_or_says_why() -> None:
    problems = [f"{s.where}: {p}" for page in ds.pages() for s in ds.snippets(page) if (p := ds.note_problem(s))]
    assert not problems, "\n".join(problems)
    assert {"README.md", "docs/run.md", "docs/backends.md"} <= set(RUN_PAGES)


# ---- the harness itself -----------------------------------------------------------------------


def test_transcripts_compare_what_is_printed() -> None:
    shown = ["Backend API 1.1; searched: /x", "", "backend  version", "-------  -------", "Acme     1.1",
             "Timing (10 runs after 1 warm-up run of 8.061 ms):", "..."]
    printed = ("Backend API 1.1; searched: /x\n\nbackend    version\n---------  -------\nAcme     1.1\n"
               "Timing (10 runs after 1 warm-up run of 12.5 ms):\nmore\nlines\n")
    assert ds.matches(shown, printed) is None
    assert ds.matches(["Backend API 1.0"], "Backend API 1.1\n") is not None  # versions are compared
    assert ds.matches(["19 layers"], "4 layers\n") is not None  # so are counts
    assert ds.matches(["a", "..."], "b\n") is not None
    assert ds.matches(["a ... c"], "a b c\n") is None
    assert ds.matches(["a"], "a\nb\n") is not None  # nothing more than shown, without a `...`


def test_python_comments_that_are_literals_are_checked() -> None:
    snippet = ds.Snippet("X.md", 10, "python", "print([1, 2])  # [1, 2]\nprint(3)  # three\nprint(4)  # 5\n", "")
    source = ds.python_source(snippet)
    assert "__expect([1, 2], [1, 2], 'X.md:11')" in source and "print(3)  # three" in source
    done = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True)
    assert done.returncode == 1 and "X.md:13: it prints 4, the text says 5" in done.stderr


@pytest.mark.parametrize(("args", "fault"), [
    (["install", "."], None), (["install", ".[onnx]"], None), (["install", "onnxruntime"], None),
    (["install", ".[nope]"], "no extra nope"), (["install", "plugnn"], "not on a package index"),
    (["install", "plugnn[ray]"], "not on a package index"),
    (["install", "--find-links", "wheels", "plugnn[ray]"], None),
    (["wheel", "--no-deps", ".", "-w", "dist"], None),
])
def test_pip_commands_are_judged(args: list[str], fault: str | None) -> None:
    sys.path.insert(0, str(HERE))
    import pip_check

    found = pip_check.problem(args)
    assert (found is None) if fault is None else (fault in (found or ""))
