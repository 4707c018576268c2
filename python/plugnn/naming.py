"""Short, readable, still unique forms of the long layer names exporters generate, for what a
person reads (explain(), plugnn run, the graph drawing).

    /features/features.6/features.6.1/block/block.2/fc2/Conv  ->  features.6.1/block.2/fc2/Conv

A path component that the next one repeats with a suffix ("block" before "block.2") says
nothing the next does not, and the leading "/" neither; fused layers ("a+b", "a..b") are
shortened part by part. A form still longer than `width` keeps its last components behind
"~/". Every short form is unique among the names given (a name whose short form would collide
keeps more of itself, at worst all of it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_JOINERS = re.compile(r"(\+|\.\.)")


def _collapse(path: str) -> list[str]:
    parts = [p for p in path.split("/") if p]
    kept = [p for i, p in enumerate(parts) if not (i + 1 < len(parts) and parts[i + 1].startswith(p + "."))]
    return kept or [path]


def _short_path(path: str, width: int) -> str:
    parts = _collapse(path)
    text = "/".join(parts)
    if len(text) <= width:
        return text
    tail: list[str] = []
    for part in reversed(parts):
        if tail and len("~/" + "/".join([part, *tail])) > width:
            break
        tail.insert(0, part)
    return "~/" + "/".join(tail) if len(tail) < len(parts) else text


def short_name(name: str, width: int = 40) -> str:
    """One name's short form (unique only among itself: use short_names for a set). In a fused
    name, the parts after the first drop the leading components they share with it."""
    pieces = _JOINERS.split(name)
    if len(pieces) == 1:
        return _short_path(name, width)
    words, joiners = pieces[0::2], pieces[1::2]
    first = _collapse(words[0])
    rest = []
    for word in words[1:]:
        parts = _collapse(word)
        common = 0
        while common < min(len(parts) - 1, len(first)) and parts[common] == first[common]:
            common += 1
        rest.append("/".join(parts[common:]))
    tail = "".join(j + r for j, r in zip(joiners, rest))
    return _short_path(words[0], max(width - len(tail), 16)) + tail


def short_names(names: Iterable[str], width: int = 40) -> dict[str, str]:
    """Each name's short form, unique among `names` (colliding ones are made longer)."""
    unique = list(dict.fromkeys(names))
    result: dict[str, str] = {}
    for limit in (width, width * 2, width * 4):
        result = {n: result.get(n) or short_name(n, limit) for n in unique}
        seen: dict[str, list[str]] = {}
        for n, s in result.items():
            seen.setdefault(s, []).append(n)
        clashes = {n for group in seen.values() if len(group) > 1 for n in group}
        if not clashes:
            return result
        for n in clashes:
            result[n] = ""
    return {n: (s or n) for n, s in result.items()}


def clip(text: str, width: int) -> str:
    """`text` cut to `width` characters, "..." marking a cut."""
    return text if len(text) <= width else text[: max(width - 3, 0)] + "..."
