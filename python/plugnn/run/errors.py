"""RunError, the one-line messages it carries, and the check for an optional package."""

from __future__ import annotations

import importlib.util

from plugnn.errors import PlugnnError


class RunError(PlugnnError):
    """A user mistake on the `plugnn run` command line: bad file, name, shape, backend list."""


def one_line(exc: BaseException | str) -> str:
    """A message (from another library, say) as one line: its lines joined with "; "."""
    text = str(exc).strip()
    return "; ".join(part.strip() for part in text.splitlines() if part.strip()) or type(exc).__name__


def require(package: str, why: str) -> None:
    """A RunError naming the pip command if `package` (optional) is not installed."""
    if importlib.util.find_spec(package) is None:
        raise RunError(f"{why} needs the {package} package: pip install {package}")
