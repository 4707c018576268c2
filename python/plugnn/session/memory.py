"""onnxruntime's allocator settings, accepted with no effect.

plugnn plans each loaded network's memory once (plugnn.memory_plan: one arena per network,
tensors placed by lifetime) and its backends own their allocations; there is no process-wide
arena to share or shrink. OrtMemoryInfo, OrtArenaCfg and create_and_register_allocator are
here so code written for onnxruntime runs: they check their arguments and keep them.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping
from typing import Any

from plugnn.session.ort_errors import InvalidArgument
from plugnn.session.ort_value import check_device

log = logging.getLogger("plugnn")


class OrtAllocatorType(enum.IntEnum):
    INVALID = -1
    ORT_DEVICE_ALLOCATOR = 0
    ORT_ARENA_ALLOCATOR = 1


class OrtMemType(enum.IntEnum):
    CPU_INPUT = -2
    CPU_OUTPUT = -1
    CPU = -1
    DEFAULT = 0


class OrtDeviceMemoryType(enum.IntEnum):
    DEFAULT = 0
    HOST_ACCESSIBLE = 5


class OrtMemoryInfoDeviceType(enum.IntEnum):
    CPU = 0
    GPU = 1
    FPGA = 2
    NPU = 3


class OrtMemoryInfo:
    """A memory description: name, allocator type, device id, memory type (`mem_type`), the
    device's memory type and vendor."""

    def __init__(self, name: str, alloc_type: Any, device_id: int, mem_type: Any) -> None:
        if not isinstance(name, str):
            raise InvalidArgument(f"OrtMemoryInfo: the name must be a str, got {name!r}")
        self.name = name
        self.allocator_type = OrtAllocatorType(alloc_type)
        self.device_id = int(device_id)
        self.mem_type = OrtMemType(mem_type)
        self.device_type = OrtMemoryInfoDeviceType.CPU if name.lower().startswith("cpu") else OrtMemoryInfoDeviceType.GPU
        self.device_mem_type = OrtDeviceMemoryType.DEFAULT
        self.device_vendor_id = 0
        self.alignment = 0

    @staticmethod
    def create_v2(name: str, device_type: Any, vendor_id: int, device_id: int, device_mem_type: Any,
                  alignment: int, alloc_type: Any) -> OrtMemoryInfo:
        """onnxruntime's second constructor (device type, vendor, device memory type, alignment)."""
        info = OrtMemoryInfo(name, alloc_type, device_id, OrtMemType.DEFAULT)
        info.device_type = OrtMemoryInfoDeviceType(device_type)
        info.device_vendor_id = int(vendor_id)
        info.device_mem_type = OrtDeviceMemoryType(device_mem_type)
        info.alignment = int(alignment)
        return info

    @property
    def memory_type(self) -> OrtMemType:
        return self.mem_type


def host_memory_info() -> OrtMemoryInfo:
    """Where every plugnn input and output lives: host memory of the CPU."""
    return OrtMemoryInfo("Cpu", OrtAllocatorType.ORT_DEVICE_ALLOCATOR, 0, OrtMemType.DEFAULT)

    def __repr__(self) -> str:
        return f"<plugnn.OrtMemoryInfo {self.name} {self.allocator_type.name} {self.device_id}>"


_ARENA_KEYS = ("max_mem", "arena_extend_strategy", "initial_chunk_size_bytes", "max_dead_bytes_per_chunk",
               "initial_growth_chunk_size_bytes", "max_power_of_two_extend_bytes")


class OrtArenaCfg:
    """onnxruntime's arena configuration: OrtArenaCfg(max_mem, arena_extend_strategy,
    initial_chunk_size_bytes, max_dead_bytes_per_chunk) or OrtArenaCfg({key: value})."""

    def __init__(self, *args: Any) -> None:
        values = dict.fromkeys(_ARENA_KEYS, -1)
        if len(args) == 1 and isinstance(args[0], Mapping):
            unknown = sorted(set(args[0]) - set(_ARENA_KEYS))
            if unknown:
                raise InvalidArgument(f"OrtArenaCfg: unknown key(s) {unknown}; the keys are {', '.join(_ARENA_KEYS)}")
            values.update({k: int(v) for k, v in args[0].items()})
        elif len(args) == 4:
            values.update(zip(_ARENA_KEYS[:4], (int(a) for a in args)))
        elif args:
            raise InvalidArgument("OrtArenaCfg takes 4 ints (max_mem, arena_extend_strategy, initial_chunk_size_bytes, "
                                  "max_dead_bytes_per_chunk) or one dict")
        for key, value in values.items():
            setattr(self, key, value)


def create_and_register_allocator(mem_info: OrtMemoryInfo, arena_cfg: OrtArenaCfg | None = None) -> None:
    """Accepted with no effect: plugnn's memory is planned per loaded network."""
    if not isinstance(mem_info, OrtMemoryInfo):
        raise InvalidArgument(f"create_and_register_allocator takes an OrtMemoryInfo, got {type(mem_info).__name__}")
    check_device(mem_info.name, mem_info.device_id, "create_and_register_allocator")
    log.info("create_and_register_allocator(%r): plugnn plans memory per loaded network; nothing to register", mem_info)


def create_and_register_allocator_v2(provider_type: str, mem_info: OrtMemoryInfo, provider_options: Mapping[str, str],
                                     arena_cfg: OrtArenaCfg | None = None) -> None:
    """Accepted with no effect (see create_and_register_allocator)."""
    create_and_register_allocator(mem_info, arena_cfg)
