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


class OrtMemoryInfo:
    """A memory description (name, allocator type, device id, memory type)."""

    def __init__(self, name: str, alloc_type: Any, device_id: int, mem_type: Any) -> None:
        if not isinstance(name, str):
            raise InvalidArgument(f"OrtMemoryInfo: the name must be a str, got {name!r}")
        self.name = name
        self.allocator_type = OrtAllocatorType(alloc_type)
        self.device_id = int(device_id)
        self.memory_type = OrtMemType(mem_type)

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
