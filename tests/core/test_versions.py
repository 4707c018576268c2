"""Version compatibility (Arm NN's rules) and backend id validation."""

import pytest

from plugnn.backend import backend_id_problem
from plugnn.loader import is_backend_version_compatible


@pytest.mark.parametrize("plugin, runtime, ok", [
    ((2, 4), (2, 4), True),
    ((2, 1), (2, 4), True),
    ((2, 5), (2, 4), False),
    ((2, 0), (1, 0), False),
    ((2, 0), (3, 0), False),
    ((1, 0), (1, 0), True),
    ((0, 9), (1, 0), False),
])
def test_compatibility(plugin: tuple[int, int], runtime: tuple[int, int], ok: bool) -> None:
    assert is_backend_version_compatible(plugin, runtime) is ok


@pytest.mark.parametrize("backend_id", ["CpuRef", "CpuAcc", "My_Backend2", "_x", "A" * 64])
def test_valid_ids(backend_id: str) -> None:
    assert backend_id_problem(backend_id) == ""


@pytest.mark.parametrize("backend_id, problem", [
    ("", "empty backend id"),
    ("Mock-Bad.Id", "characters other than"),
    ("9Lives", "starts with a digit"),
    ("has space", "characters other than"),
    ("Host", "reserved"),
    ("runtime", "reserved"),
    ("UNKNOWN", "reserved"),
    ("A" * 65, "longer than 64"),
])
def test_invalid_ids(backend_id: str, problem: str) -> None:
    assert problem in backend_id_problem(backend_id)
