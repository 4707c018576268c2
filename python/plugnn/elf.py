"""The dynamic symbols an ELF shared object defines (what `nm -D --defined-only` lists),
read from the file itself so that checking a plugin's exports needs no binutils."""

from __future__ import annotations

import struct

SHT_DYNSYM = 11
SHN_UNDEF = 0
SHN_ABS = 0xFFF1
STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE = 1, 2, 10
STV_HIDDEN, STV_INTERNAL = 2, 1


class ElfError(ValueError):
    """Not an ELF file, or one whose tables cannot be read."""


def exported_symbols(path: str) -> set[str]:
    """Names of the global and weak symbols `path` defines and exports (version nodes,
    which are absolute symbols of no address, left out)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF":
        raise ElfError(f"{path} is not an ELF file")
    wide = {1: False, 2: True}.get(data[4])
    order = {1: "<", 2: ">"}.get(data[5])
    if wide is None or order is None:
        raise ElfError(f"{path}: unknown ELF class or byte order")
    try:
        if wide:
            shoff, = struct.unpack_from(order + "Q", data, 0x28)
            shentsize, shnum = struct.unpack_from(order + "HH", data, 0x3A)
        else:
            shoff, = struct.unpack_from(order + "I", data, 0x20)
            shentsize, shnum = struct.unpack_from(order + "HH", data, 0x2E)
        sections = [_section(data, order, wide, shoff + i * shentsize) for i in range(shnum)]
        names: set[str] = set()
        for kind, offset, size, link, entsize in sections:
            if kind != SHT_DYNSYM or not entsize:
                continue
            _, strings, strings_size, _, _ = sections[link]
            for i in range(1, size // entsize):  # entry 0 is the null symbol
                name, info, other, shndx, value = _symbol(data, order, wide, offset + i * entsize)
                binding, visibility = info >> 4, other & 3
                if shndx == SHN_UNDEF or binding not in (STB_GLOBAL, STB_WEAK, STB_GNU_UNIQUE):
                    continue
                if visibility in (STV_HIDDEN, STV_INTERNAL) or (shndx == SHN_ABS and value == 0):
                    continue
                end = data.index(b"\0", strings + name, strings + strings_size)
                names.add(data[strings + name:end].decode("utf-8", errors="replace"))
        return names
    except (struct.error, IndexError, ValueError) as exc:
        raise ElfError(f"{path}: cannot read its symbol tables ({exc})") from None


def _section(data: bytes, order: str, wide: bool, at: int) -> tuple[int, int, int, int, int]:
    if wide:
        _, kind, _, _, offset, size, link, _, _, entsize = struct.unpack_from(order + "IIQQQQIIQQ", data, at)
    else:
        _, kind, _, _, offset, size, link, _, _, entsize = struct.unpack_from(order + "IIIIIIIIII", data, at)
    return kind, offset, size, link, entsize


def _symbol(data: bytes, order: str, wide: bool, at: int) -> tuple[int, int, int, int, int]:
    if wide:
        name, info, other, shndx, value, _ = struct.unpack_from(order + "IBBHQQ", data, at)
    else:
        name, value, _, info, other, shndx = struct.unpack_from(order + "IIIBBH", data, at)
    return name, info, other, shndx, value
