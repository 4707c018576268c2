"""The process-wide registry of backends written in Python (the "static" path)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import ClassVar

from plugnn.backend import Backend, backend_id_problem
from plugnn import fork_safety
from plugnn.errors import RegistryError, UnknownBackendError

BackendFactoryFn = Callable[[], Backend]


class BackendRegistry:
    """Backend factories registered from Python code, shared by every runtime.

    Each runtime calls every registered factory once when it is created, so runtimes
    never share a backend instance. Registration does not affect runtimes that exist.
    """

    _factories: ClassVar[dict[str, BackendFactoryFn]] = {}
    _lock: ClassVar[threading.Lock] = threading.Lock()

    @classmethod
    def register(cls, backend_id: str, factory: BackendFactoryFn) -> None:
        """Register `factory` (called with no arguments, returning a Backend) as `backend_id`."""
        problem = backend_id_problem(backend_id)
        if problem:
            raise RegistryError(f"cannot register backend {backend_id!r}: {problem}")
        if not callable(factory):
            raise RegistryError(f"cannot register backend {backend_id!r}: the factory is not callable")
        with cls._lock:
            if backend_id in cls._factories:
                raise RegistryError(f"backend {backend_id!r} is already registered")
            cls._factories[backend_id] = factory

    @classmethod
    def deregister(cls, backend_id: str) -> None:
        with cls._lock:
            if backend_id not in cls._factories:
                raise UnknownBackendError(backend_id, sorted(cls._factories))
            del cls._factories[backend_id]

    @classmethod
    def is_registered(cls, backend_id: str) -> bool:
        with cls._lock:
            return backend_id in cls._factories

    @classmethod
    def registered_ids(cls) -> list[str]:
        with cls._lock:
            return list(cls._factories)

    @classmethod
    def factories(cls) -> dict[str, BackendFactoryFn]:
        """A snapshot of the registered factories, in registration order."""
        with cls._lock:
            return dict(cls._factories)


fork_safety.fresh_locks_in_child(BackendRegistry, "_lock")
