"""Fresh locks in a forked child: what makes runtimes and sessions usable after os.fork().

fork() copies a process's memory but only the thread that called it. A lock another thread
held at that moment (a LoadedNetwork in run(), a session making a specialization, a program's
lock) stays held in the child forever, and the child's first run waits on it for ever. This is
what multiprocessing's "fork" start method, gunicorn's preload and PyTorch's DataLoader
workers do to a process whose threads are running sessions.

Objects and modules owning such locks register them here (`fresh_locks_in_child`); in the
child (os.register_at_fork's after_in_child, in the one thread the child has) each registered
lock attribute is replaced by a new, unlocked lock of its kind (threading.Lock or RLock). One
lock shared by several owners (the runtime lock all sessions on a runtime share) stays shared:
each old lock is replaced by one new lock wherever it is registered. An object with more state
to reset (a LoadedNetwork's per-run bindings) registers a callback (`call_in_child`).

What a child inherits of a run that was in flight in another thread is only memory: the next
run in the child binds its inputs and outputs anew and writes every intermediate tensor. The
native side resets itself (CpuAcc's thread pool through pthread_atfork: its workers are
started again by the first parallel loop in the child).
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable, MutableMapping
from typing import Any

_LOCK_TYPE = type(threading.Lock())
_RLOCK_TYPE = type(threading.RLock())

# owner (an object, class or module) -> the names of its lock attributes
_owners: weakref.WeakKeyDictionary[Any, tuple[str, ...]] = weakref.WeakKeyDictionary()
# mappings whose values are locks (one per key)
_mappings: list[weakref.ref[MutableMapping[Any, Any]]] = []
# objects whose `method` is called in the child: owner -> method name
_callbacks: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def fresh_locks_in_child(owner: Any, *names: str) -> None:
    """In a forked child, replace `owner`'s attributes `names` (locks) with new ones. `owner`
    is held weakly (it must support weak references: instances, classes and modules do)."""
    known = _owners.get(owner, ())
    _owners[owner] = known + tuple(n for n in names if n not in known)


def fresh_lock_values_in_child(mapping: MutableMapping[Any, Any]) -> None:
    """In a forked child, replace every value of `mapping` (a lock) with a new one."""
    _mappings.append(weakref.ref(mapping))


def call_in_child(owner: Any, method: str) -> None:
    """In a forked child, call `owner.<method>()` (after every lock was replaced)."""
    _callbacks[owner] = method


def _fresh(old: Any, replaced: dict[int, tuple[Any, Any]]) -> Any:
    if id(old) in replaced:  # (old, new): the old lock is kept alive, so its id stays its own
        return replaced[id(old)][1]
    if isinstance(old, _RLOCK_TYPE):
        new: Any = threading.RLock()
    elif isinstance(old, _LOCK_TYPE):
        new = threading.Lock()
    else:
        return old
    replaced[id(old)] = (old, new)
    return new


def reset_after_fork() -> None:
    """What the child runs (registered with os.register_at_fork; tests may call it too)."""
    replaced: dict[int, tuple[Any, Any]] = {}
    for owner, names in list(_owners.items()):
        for name in names:
            old = getattr(owner, name, None)
            if old is not None:
                setattr(owner, name, _fresh(old, replaced))
    alive = []
    for ref in _mappings:
        mapping = ref()
        if mapping is None:
            continue
        alive.append(ref)
        for key in list(mapping.keys()):
            mapping[key] = _fresh(mapping[key], replaced)
    _mappings[:] = alive
    for owner, method in list(_callbacks.items()):
        callback: Callable[[], None] = getattr(owner, method)
        callback()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=reset_after_fork)
