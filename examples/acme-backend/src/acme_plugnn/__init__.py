"""Acme's plugnn backend (backend id "AcmeBasic").

plugnn finds the plugin through this distribution's entry point in the group
plugnn.backends (see pyproject.toml): it calls `backend_paths()` and searches the
directories it returns, so `pip install acme-plugnn` is all a user does.
"""

from __future__ import annotations

import os

BACKENDS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "backends")


def backend_paths() -> list[str]:
    """The directories holding this distribution's plugin files."""
    return [BACKENDS_DIR]
