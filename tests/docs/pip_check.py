"""`pip` as the docs' snippets meet it in tests/docs: judged, not run.

The suite runs offline, inside an installation of plugnn, so an install command of the docs
is checked for what can go wrong in the text instead of being run: `.` / `.[extra,...]` must
name extras that plugnn's pyproject.toml defines, and `plugnn` itself is not on a package
index, so asking pip for it by name (`pip install plugnn`, `'plugnn[ray]'`) is an error unless
`--find-links` points at a directory of wheels built from the source (`pip wheel .`). Other
names are packages of PyPI, accepted as they are. Exit status 0 when the command holds, 2 with
the reason otherwise.

    python pip_check.py install [OPTIONS] REQUIREMENT...
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REQUIREMENT = re.compile(r"^([A-Za-z0-9_.-]+)(\[([A-Za-z0-9_,.-]*)\])?([<>=!~].*)?$")
TAKES_VALUE = {"-w", "--wheel-dir", "-f", "--find-links", "-r", "--requirement", "-c", "--constraint",
               "-i", "--index-url", "--extra-index-url", "-t", "--target", "--prefix", "--root"}


def extras() -> set[str]:
    """The extras of plugnn's pyproject.toml (its [project.optional-dependencies] table; read
    without tomllib, which Python 3.10 lacks)."""
    text = (ROOT / "pyproject.toml").read_text()
    table = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    return set(re.findall(r"^([A-Za-z0-9_-]+)\s*=", table, re.M))


def problem(args: list[str]) -> str | None:
    if not args or args[0] not in ("install", "wheel", "download"):
        return None  # pip list, pip show, ...: nothing to judge
    find_links = False
    requirements: list[str] = []
    words = iter(args[1:])
    for word in words:
        if word in ("-f", "--find-links") or word.startswith("--find-links="):
            find_links = True
        if word in TAKES_VALUE:
            next(words, None)
        elif not word.startswith("-"):
            requirements.append(word)
    known = extras()
    for requirement in requirements:
        path, _, rest = requirement.partition("[")
        if path in (".", "./") or (path.startswith((".", "/")) and not path.endswith(".whl")):
            wanted = {e for e in rest.rstrip("]").split(",") if e} if rest else set()
            if path in (".", "./") and wanted - known:
                return (f"{requirement}: plugnn has no extra {', '.join(sorted(wanted - known))} "
                        f"(its extras: {', '.join(sorted(known))})")
            continue
        match = REQUIREMENT.match(requirement)
        if match and match.group(1).lower() == "plugnn" and not find_links:
            return (f"{requirement}: plugnn is not on a package index; install it from its source tree "
                    "(pip install .) or from a wheel built there (pip wheel . -w DIR, then --find-links DIR)")
        if match and match.group(1).lower() == "plugnn" and match.group(3):
            wanted = set(match.group(3).split(","))
            if wanted - known:
                return f"{requirement}: plugnn has no extra {', '.join(sorted(wanted - known))}"
    return None


def main(argv: list[str]) -> int:
    reason = problem(argv)
    if reason:
        print(f"pip (as the docs test judges it): {reason}", file=sys.stderr)
        return 2
    print(f"pip (as the docs test judges it): pip {' '.join(argv)} holds")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
