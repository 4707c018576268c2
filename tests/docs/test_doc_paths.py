"""Every source file the docs name exists: a doc that cites a deleted or moved file (as
docs/backends.md once cited CpuAcc's conv_chain.h) fails here.

A name in backticks ending in a source or build extension (`plugins/accel/src/chain_plan.h`,
`pn_validate_spatial.c`) must be a file of the repository: a path, relative to the repository
or to the document's folder (or to `python/` or `native/include/`, where `plugnn/...` lives);
a bare name, some file of that name. Files the build generates, and those a page's own snippets
write (`<!-- snippet: file NAME -->`), are known by name below.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import docs_snippets as ds

ROOT = ds.ROOT
NAMED = re.compile(r"`([A-Za-z0-9_.\-/]+\.(?:c|h|py|cmake|toml|json|map))`")
# Made by the build, not kept in the repository: the ABI's Python view and the build config
# (generated from the header and cmake/_build_config.py.in), the mocks' list of what was built.
GENERATED = {"_abi_defs.py", "_abi_cffi.py", "_build_config.py", "plugnn/_build_config.py", "out/mocks.json"}
SKIP_DIRS = {".git", "build", "__pycache__", "dist"}


def documents() -> list[Path]:
    return [ROOT / p for p in ds.pages()] + sorted(ROOT.glob("plugins/*/README.md")) + sorted(
        ROOT.glob("examples/*/README.md"))


def _names() -> set[str]:
    found = set()
    for _, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        found.update(files)
    return found


def missing(document: Path, names: set[str]) -> list[str]:
    text = document.read_text(encoding="utf-8")
    page = str(document.relative_to(ROOT)) if document.is_relative_to(ROOT) else ""
    written = {s.note.split(" ", 1)[1] for s in ds.snippets(page) if s.kind == "file"} if page in ds.pages() else set()
    absent = []
    for name in sorted(set(NAMED.findall(text))):
        if name in GENERATED or name in written:
            continue
        if "/" not in name:
            if name not in names:
                absent.append(name)
            continue
        bases = (ROOT, document.parent, ROOT / "python", ROOT / "native" / "include")
        if not any((base / name).exists() for base in bases):
            absent.append(name)
    return absent


def test_every_file_the_docs_name_exists() -> None:
    names = _names()
    problems = [f"{doc.relative_to(ROOT)}: {name}" for doc in documents() for name in missing(doc, names)]
    assert not problems, "files named in the docs that do not exist:\n" + "\n".join(problems)


def test_a_deleted_file_is_found(tmp_path: Path) -> None:
    doc = ROOT / "docs" / "backends.md"
    assert missing(doc, _names()) == []
    names = _names() - {"chain_plan.h"}
    stale = tmp_path / "stale.md"
    stale.write_text("see `plugins/accel/src/conv_chain.h` and `chain_plan.h`, `pn_plugin.h`\n")
    assert missing(stale, names) == ["chain_plan.h", "plugins/accel/src/conv_chain.h"]
