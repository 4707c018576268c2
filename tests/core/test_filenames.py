"""is_backend_filename against every row of Arm NN's naming table, and more."""

import pytest

from plugnn.loader import is_backend_filename

VALID = [
    "Arm_GpuAcc_backend.so",
    "Arm_GpuAcc_backend.so.1",
    "Arm_GpuAcc_backend.so.1.2",
    "Arm_GpuAcc_backend.so.1.2.3",
    "Arm_GpuAcc_backend.so.10.1.27",
    "Arm123_GpuAcc_backend.so",
    "Arm_GpuAcc456_backend.so",
    "Arm_CpuAcc_backend.so",
    "pathA/Arm_GpuAcc_backend.so",
    "/abs/pathB/Arm_GpuAcc_backend.so",
    "Plugnn_CpuRef_backend.so",
]

INVALID = [
    "Arm_GpuAcc_backend.so.10.1.33.",  # dot not followed by version number
    "Arm_GpuAcc_backend.so.3.4..5",  # dot not followed by version number
    "Arm_GpuAcc_backend.so.1,1.1",  # comma instead of dot
    "Arm%Co_GpuAcc_backend.so",  # invalid character in vendor
    "Arm_Gpu.Acc_backend.so",  # invalid character in backend name
    "GpuAcc_backend.so",  # missing vendor
    "_GpuAcc_backend.so",  # missing vendor
    "Arm__backend.so",  # missing backend name
    "Arm_GpuAcc.so",  # missing "backend"
    "__backend.so",  # missing vendor and name
    "__.so",  # missing all fields
    "Arm_GpuAcc_backend",  # missing .so
    "Arm_GpuAcc_backend_v1.2.so",  # extra version info at the end
    "",
    "Arm_GpuAcc_backend.so.",
    "Arm_GpuAcc_backend.so.a",
    "Arm_Gpu_Acc_backend.so",  # three fields before _backend
    "arm_gpuacc_BACKEND.so",
    "Arm_GpuAcc_backend.dll",
    "Arm_GpuAcc_backend.so.1 ",
    "Ärm_GpuAcc_backend.so",  # non-ASCII letter
]


@pytest.mark.parametrize("name", VALID)
def test_valid_names(name: str) -> None:
    assert is_backend_filename(name)


@pytest.mark.parametrize("name", INVALID)
def test_invalid_names(name: str) -> None:
    assert not is_backend_filename(name)
