"""The counts the docs state that plugnn itself can produce: computed here, never typed by hand.

    python scripts/doc_numbers.py            # every name and its value now
    python scripts/doc_numbers.py --write    # rewrite the stale marked numbers of README.md and docs/*.md
    python scripts/doc_numbers.py --check    # list the stale ones; exit status 1 if any

A document marks such a number `<!--n:NAME-->VALUE<!--/n-->` (the comments do not show when
the Markdown is rendered); tests/docs/test_numbers.py fails when a marked VALUE is not what
NAME computes now, or when NAME is unknown. The names:

- `sweep_layers`, `sweep_kinds`: the layers `plugnn check-backend` generates (plugnn.sweep)
  and the kinds they cover; `sweep_cases.<Kind>`: the layers of one kind (`Convolution2d`);
- `claimed.<Backend>`, `refused.<Backend>`, `claimed_kinds.<Backend>`: of those layers, how
  many a bundled backend (CpuRef, CpuAcc) claims in `is_layer_supported`, refuses, and in
  how many kinds it claims at least one (the layers' sweep as check-backend asks it; that
  every claimed layer matches CpuRef is what check-backend's tests assert);
- `abi_version`: the backend API version of the header (`1.1`);
- `zoo_models`: the models of the test zoo (tests/zoo/manifest.json).
"""

from __future__ import annotations

import argparse
import functools
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARK = re.compile(r"<!--n:([\w.]+)-->(.*?)<!--/n-->")
BUNDLED = ("CpuRef", "CpuAcc")


def documents(root: Path = ROOT) -> list[Path]:
    """The documents whose numbers must hold: README.md and docs/*.md (docs/history/ is a record)."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


@functools.cache
def _sweep_cases() -> dict[str, int]:
    from plugnn import sweep

    return {sweep.kind_name(kind): len(sweep.cases(kind)) for kind in sweep.GENERATORS}


@functools.cache
def _claims(backend_id: str) -> dict[str, tuple[int, int]]:
    """Per kind: (claimed, refused) of the sweep's layers on `backend_id`."""
    import plugnn
    from plugnn import sweep

    found: dict[str, tuple[int, int]] = {}
    with plugnn.Runtime() as runtime:
        backend = runtime.backend(backend_id)
        for kind in sweep.GENERATORS:
            claimed = sum(bool(backend.is_layer_supported(case.spec).supported) for case in sweep.cases(kind))
            found[sweep.kind_name(kind)] = (claimed, len(sweep.cases(kind)) - claimed)
    return found


def _abi_version() -> str:
    from plugnn._abi_defs import PLUGNN_BACKEND_API_VERSION_MAJOR, PLUGNN_BACKEND_API_VERSION_MINOR

    return f"{PLUGNN_BACKEND_API_VERSION_MAJOR}.{PLUGNN_BACKEND_API_VERSION_MINOR}"


def _zoo_models() -> int:
    import json

    return len(json.loads((ROOT / "tests" / "zoo" / "manifest.json").read_text())["models"])


def value(name: str) -> str:
    """The value of `name` now, as the docs print it; KeyError for an unknown name."""
    base, _, arg = name.partition(".")
    fixed: dict[str, Callable[[], object]] = {
        "sweep_layers": lambda: sum(_sweep_cases().values()),
        "sweep_kinds": lambda: len(_sweep_cases()),
        "abi_version": _abi_version,
        "zoo_models": _zoo_models,
    }
    if not arg and base in fixed:
        return str(fixed[base]())
    if base == "sweep_cases" and arg in _sweep_cases():
        return str(_sweep_cases()[arg])
    if base in ("claimed", "refused", "claimed_kinds") and arg in BUNDLED:
        claims = _claims(arg)
        if base == "claimed_kinds":
            return str(sum(1 for c, _ in claims.values() if c))
        return str(sum(c if base == "claimed" else r for c, r in claims.values()))
    raise KeyError(name)


def stale(path: Path) -> list[tuple[int, str, str, str]]:
    """(line, name, written, now) for every marked number of `path` that is not its value now
    (`now` is "unknown name" for a name this script does not know)."""
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        for match in MARK.finditer(line):
            name, written = match.groups()
            try:
                now = value(name)
            except KeyError:
                now = "unknown name"
            if written != now:
                found.append((number, name, written, now))
    return found


def write(path: Path) -> int:
    """Rewrite the marked numbers of `path` with their values now; returns how many changed."""
    text = path.read_text(encoding="utf-8")
    changed = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal changed
        now = value(match.group(1))
        changed += now != match.group(2)
        return f"<!--n:{match.group(1)}-->{now}<!--/n-->"

    new = MARK.sub(replace, text)
    if new != text:
        path.write_text(new, encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help="rewrite the stale marked numbers")
    group.add_argument("--check", action="store_true", help="list the stale marked numbers; exit 1 if any")
    args = parser.parse_args(argv)
    if args.write:
        for path in documents():
            if (n := write(path)):
                print(f"{path.relative_to(ROOT)}: {n} number(s) rewritten")
        return 0
    if args.check:
        problems = [(path, *entry) for path in documents() for entry in stale(path)]
        for path, line, name, written, now in problems:
            print(f"{path.relative_to(ROOT)}:{line}: {name} is {now}, the text says {written}")
        return 1 if problems else 0
    names = ["sweep_layers", "sweep_kinds", "abi_version", "zoo_models"]
    names += [f"{what}.{b}" for b in BUNDLED for what in ("claimed", "refused", "claimed_kinds")]
    names += [f"sweep_cases.{kind}" for kind in _sweep_cases()]
    for name in names:
        print(f"{name} = {value(name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
