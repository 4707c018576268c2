"""onnxruntime's execution providers, as plugnn's backends.

A provider name is a plugnn backend id ("CpuAcc", "CpuRef", a plugin's id) or
"CPUExecutionProvider", which stands for the runtime's own preference (the bundled CPU
backends CpuAcc then CpuRef, then any other). A name of an onnxruntime provider plugnn has no
backend for ("CUDAExecutionProvider", any "...ExecutionProvider") is skipped with a warning,
as onnxruntime skips a provider its build lacks, so ["CUDAExecutionProvider",
"CPUExecutionProvider"] runs on the CPU backends. Any other name is an error.

Provider options: for a backend id, that backend's string options (CpuAcc's "num_threads",
"isa", ...; docs/backends.md), applied to the runtime the session creates; for
"CPUExecutionProvider", onnxruntime's CPU provider options (only "use_arena" exists), accepted
with no effect.
"""

from __future__ import annotations

import collections.abc
import functools
import logging
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from plugnn.errors import SessionError, UnknownBackendError
from plugnn.session.ort_errors import Fail

log = logging.getLogger("plugnn")

CPU_PROVIDER = "CPUExecutionProvider"
ORT_SUFFIX = "ExecutionProvider"
# onnxruntime's CPU provider takes these options; plugnn has no arena to switch.
CPU_PROVIDER_OPTIONS = frozenset({"use_arena"})


class UnknownProviderError(UnknownBackendError, Fail):
    """A provider name that is neither a plugnn backend, "CPUExecutionProvider", nor an
    onnxruntime provider name (which would be skipped): onnxruntime's "Unknown Provider Type"."""

    def __init__(self, name: str, available: list[str], hint: str = "") -> None:
        super().__init__(name, available, hint)
        self.args = (f"Unknown Provider Type: {name}; plugnn's providers are {', '.join(available)} "
                     f"(a backend id, or {CPU_PROVIDER} for the runtime's preference)",)


@functools.lru_cache(maxsize=1)
def _discovered() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the backends a default runtime has, in preference order; every backend id its loader
    saw, rejected ones included): found once per process."""
    from plugnn.runtime import Runtime

    with Runtime() as runtime:
        preferred = tuple(runtime.preferred_backends)
        seen = [r.backend_id for r in runtime.load_report if r.backend_id]
    return preferred, tuple(dict.fromkeys([*preferred, *seen]))


def get_available_providers() -> list[str]:
    """The providers a session can use: the backends of a default plugnn.Runtime in order of
    preference, then "CPUExecutionProvider" (onnxruntime's name for the CPU, which a session
    resolves to that same preference)."""
    return [*_discovered()[0], CPU_PROVIDER]


def get_all_providers() -> list[str]:
    """Every backend plugnn's loader found (also those it rejected), then "CPUExecutionProvider"
    last, as onnxruntime lists its CPU provider last."""
    return [*_discovered()[1], CPU_PROVIDER]


def get_device() -> str:
    """"CPU": every bundled backend runs on the host."""
    return "CPU"


def check_and_normalize_provider_args(providers: Any, provider_options: Any,
                                      available_provider_names: Sequence[str]) -> tuple[list[str], list[dict[str, str]]]:
    """onnxruntime's argument rules: `providers` a sequence of names or (name, options dict)
    tuples; `provider_options` (only with plain names) a sequence of dicts of the same length.
    Returns (names, options with str keys and values); a name not in
    `available_provider_names` or a duplicate is warned about (UserWarning), a duplicate dropped.
    ValueError (SessionError) for anything else."""
    if providers is None:
        return [], []
    if isinstance(providers, str) or not isinstance(providers, collections.abc.Sequence):
        raise SessionError(f"'providers' should be a sequence of provider names, got {providers!r}")
    normalized: dict[str, dict[str, str]] = {}

    def add(name: str, options: Mapping[Any, Any]) -> None:
        if name not in available_provider_names:
            warnings.warn(f"Specified provider '{name}' is not in available provider names. Available providers: "
                          f"'{', '.join(available_provider_names)}'", stacklevel=3)
        if name in normalized:
            warnings.warn(f"Duplicate provider '{name}' encountered, ignoring.", stacklevel=3)
            return
        normalized[name] = {str(k): str(v) for k, v in options.items()}

    if provider_options is not None:
        if isinstance(provider_options, (str, Mapping)) or not isinstance(provider_options, collections.abc.Sequence):
            raise SessionError(f"'provider_options' should be a sequence of dicts, got {provider_options!r}")
        if len(providers) != len(provider_options):
            raise SessionError(f"'providers' ({len(providers)}) and 'provider_options' ({len(provider_options)}) "
                               "should be the same length if both are given")
        if not all(isinstance(p, str) for p in providers):
            raise SessionError("only provider names (str) go with 'provider_options'; give (name, options) tuples "
                               "in 'providers' without 'provider_options'")
        if not all(isinstance(o, dict) for o in provider_options):
            raise SessionError("'provider_options' values must be dicts")
        for name, options in zip(providers, provider_options):
            add(name, options)
    else:
        for entry in providers:
            if isinstance(entry, str):
                add(entry, {})
            elif isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[0], str) \
                    and isinstance(entry[1], dict):
                add(entry[0], entry[1])
            else:
                raise SessionError(f"a provider is a name or a (name, options dict) tuple, got {entry!r}")
    return list(normalized), list(normalized.values())


@dataclass
class ProviderChoice:
    """What a session's providers came to: `backends` (plugnn ids in preference order, None: the
    runtime's own), `backend_options` to apply to the runtime the session creates, `names` (what
    get_providers() answers) and `options` (get_provider_options())."""

    backends: list[str] | None
    backend_options: dict[str, dict[str, str]] = field(default_factory=dict)
    names: list[str] = field(default_factory=list)
    options: dict[str, dict[str, str]] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)


def choose_providers(providers: Any, provider_options: Any, known: Sequence[str], preferred: Sequence[str],
                     strict: bool = False) -> ProviderChoice:
    """Resolve onnxruntime-style `providers` against the backends `known` to the runtime.

    An onnxruntime provider plugnn lacks is skipped with a warning (a UnknownProviderError when
    `strict`, as onnxruntime's set_providers is); nothing left means the runtime's preference."""
    names, options = _normalize_quietly(providers, provider_options, [*known, CPU_PROVIDER])
    available = [*known, CPU_PROVIDER]
    chosen = ProviderChoice(backends=[])
    assert chosen.backends is not None
    for name, opts in zip(names, options):
        if name == CPU_PROVIDER:
            unknown = sorted(set(opts) - CPU_PROVIDER_OPTIONS)
            if unknown:
                log.warning("provider %s: option(s) %s are not options of onnxruntime's CPU provider; ignored (a "
                            "plugnn backend's options go with its id, e.g. ('CpuAcc', {'num_threads': '2'}))",
                            CPU_PROVIDER, ", ".join(map(repr, unknown)))
            ids = list(preferred)
        elif name in known:
            ids = [name]
            if opts:
                chosen.backend_options[name] = dict(opts)
        elif name.endswith(ORT_SUFFIX) and not strict:
            message = (f"provider {name!r} is onnxruntime's; plugnn has no backend for it and skips it "
                       f"(available providers: {', '.join(available)})")
            warnings.warn(message, UserWarning, stacklevel=3)
            log.warning("%s", message)
            chosen.skipped.append(name)
            continue
        else:
            raise UnknownProviderError(name, available)
        chosen.names.append(name)
        chosen.options[name] = dict(opts)
        chosen.backends += [b for b in ids if b not in chosen.backends]
    if not chosen.names:  # nothing usable: the runtime's own preference, onnxruntime's CPU fallback
        chosen.backends = None
        chosen.names = [CPU_PROVIDER]
        chosen.options = {CPU_PROVIDER: {}}
    return chosen


def _normalize_quietly(providers: Any, provider_options: Any, available: list[str]
                       ) -> tuple[list[str], list[dict[str, str]]]:
    """check_and_normalize_provider_args without its "not available" warning (choose_providers
    says what it does with those names); the duplicate warning stays."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Specified provider .* is not in available provider names")
        return check_and_normalize_provider_args(providers, provider_options, available)

