"""Child processes that run plugin code: started, read, timed out, killed, and their end named.

Two parts of plugnn run a plugin's code outside the calling process so that a crash or a hang
is a finding rather than the end of the caller: the probe (plugnn.probe: `plugnn-probe` on
each candidate file, several at a time) and `plugnn check-backend`'s worker (plugnn.check:
one `python -m plugnn.check_worker` at a time, restarted after the step that killed it). Both
start their children here:

- `child_environment()`: this process's environment with a preloaded sanitizer's own signal
  handling and leak check off, so the child's signal is reported as it happened;
- `Child`: one process in its own session (killing it kills what the plugin started too),
  stdout and stderr gathered, a deadline that its owner may move (check-backend gives each
  step its own time);
- `supervise(starts, jobs)`: runs the children `starts` makes, at most `jobs` at once, reads
  their pipes, kills each one at its deadline, and yields each as it ends (`Child.status` set);
- `death(child)`: how a child that did not finish ended, as the reports say it:
  `SIGSEGV`, `exit(3)`, `timed out after 5 s` (the callers add where: "in BackendFactory").
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator

# A sanitizer runtime inherited through LD_PRELOAD (ASan, UBSan) must not turn the plugin's
# signal into an exit of its own (the probe reports signals as they are), nor fail the probe
# for what the plugin leaks (plugnn check-backend's lifecycle check measures that).
_SANITIZER_SIGNALS = "handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0:handle_abort=0"
_SANITIZER_OPTIONS = {"ASAN_OPTIONS": _SANITIZER_SIGNALS + ":detect_leaks=0", "UBSAN_OPTIONS": _SANITIZER_SIGNALS}

OutputHandler = Callable[["Child", bytes], None]


def child_environment(**extra: str) -> dict[str, str]:
    """This process's environment for a child that runs plugin code (the probe, check-backend's
    worker): with a preloaded sanitizer's own signal handling and leak check off, plus `extra`."""
    env = dict(os.environ)
    for name, options in _SANITIZER_OPTIONS.items():
        env[name] = f"{env[name]}:{options}" if env.get(name) else options
    env.update(extra)
    return env


class Child:
    """One child process in its own session and what it has written so far.

    `on_stdout(child, chunk)`, when given, receives stdout as it arrives instead of `out`
    gathering it; `err_limit` keeps only the last so many bytes of stderr. Raises OSError
    when the program cannot be started.
    """

    def __init__(self, argv: list[str], env: dict[str, str], timeout: float,
                 on_stdout: OutputHandler | None = None, err_limit: int | None = None) -> None:
        self.argv = argv
        self.timeout = timeout
        self.out = bytearray()
        self.err = bytearray()
        self.on_stdout = on_stdout
        self.err_limit = err_limit
        self.timed_out = False
        self.status: int | None = None
        self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, env=env, start_new_session=True)
        self.deadline = time.monotonic() + timeout
        self.open_pipes = 2

    def extend(self, timeout: float) -> None:
        """Give the child `timeout` seconds from now (the time limit reported is `timeout`)."""
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout

    def kill(self) -> None:
        self.timed_out = True
        try:
            os.killpg(self.process.pid, signal.SIGKILL)  # its own session: the plugin's children too
        except OSError:
            pass

    def _received(self, stream: str, chunk: bytes) -> None:
        if stream == "err":
            self.err.extend(chunk)
            if self.err_limit is not None:
                del self.err[:-self.err_limit]
        elif self.on_stdout is not None:
            self.on_stdout(self, chunk)
        else:
            self.out.extend(chunk)


def supervise(starts: Iterable[Callable[[], Child]], jobs: int = 1) -> Iterator[Child]:
    """Start the children `starts` makes, at most `jobs` running at once, and yield each when it
    has ended (its pipes closed, or killed at its deadline and gone), with `status` set (the
    return code: negative for a signal). Children still running when the caller stops
    iterating, or when a start raises, are killed and reaped."""
    waiting = iter(starts)
    running: list[Child] = []
    selector = selectors.DefaultSelector()
    exhausted = False
    try:
        while True:
            while not exhausted and len(running) < jobs:
                start = next(waiting, None)
                if start is None:
                    exhausted = True
                    break
                child = start()
                running.append(child)
                assert child.process.stdout is not None and child.process.stderr is not None
                selector.register(child.process.stdout, selectors.EVENT_READ, (child, "out"))
                selector.register(child.process.stderr, selectors.EVENT_READ, (child, "err"))
            if not running:
                return
            now = time.monotonic()
            for child in running:
                if child.deadline <= now and not child.timed_out:
                    child.kill()
            if any(c.timed_out for c in running):
                wait = 0.05  # killed: its pipes close as soon as the process is gone
            else:
                wait = min(1.0, max(0.0, min(c.deadline for c in running) - now))
            for key, _ in selector.select(timeout=wait):
                child, stream = key.data
                chunk = os.read(key.fd, 65536)
                if chunk:
                    child._received(stream, chunk)
                else:
                    selector.unregister(key.fileobj)
                    key.fileobj.close()  # type: ignore[union-attr]
                    child.open_pipes -= 1
            for child in [c for c in running if c.open_pipes == 0 or (c.timed_out and c.process.poll() is not None)]:
                for pipe in (child.process.stdout, child.process.stderr):
                    if pipe is not None and not pipe.closed:
                        selector.unregister(pipe)
                        pipe.close()
                running.remove(child)
                child.status = child.process.wait()
                yield child
    finally:
        for child in running:
            child.kill()
            child.process.wait()
            for pipe in (child.process.stdout, child.process.stderr):
                if pipe is not None and not pipe.closed:
                    pipe.close()
        selector.close()


def signal_name(number: int) -> str:
    """SIGSEGV for 11; "signal 99" for a number no signal has."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def death(child: Child) -> str:
    """How an ended child ended: "timed out after 5 s", "SIGSEGV" or "exit(3)"."""
    if child.timed_out:
        return f"timed out after {child.timeout:g} s"
    status = child.status if child.status is not None else child.process.wait()
    if status < 0:
        return signal_name(-status)
    return f"exit({status})"


def last_line(data: bytes | bytearray, limit: int = 200) -> str:
    """The last non-blank line of a child's output, cut to `limit` characters."""
    lines = [line.strip() for line in bytes(data).decode("utf-8", errors="replace").splitlines() if line.strip()]
    if not lines:
        return ""
    return lines[-1] if len(lines[-1]) <= limit else lines[-1][: limit - 3] + "..."
