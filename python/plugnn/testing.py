"""A pytest plugin: `plugnn check-backend` as tests, for a backend vendor's own CI.

    pytest --plugnn-backend build/Acme_Npu_backend.so [--plugnn-layers Convolution2d,Activation]

adds one test per check (file, probe, exports, entry points, backend object, lifecycle) and
one per layer kind of the sweep, named `plugnn-backend[<file>]::<check>`, next to whatever
else pytest collects. The checks run once per file (every call into the plugin in a child
process, as `plugnn check-backend` does); each test passes when its check holds and fails
with the findings otherwise. The plugin registers itself through the pytest11 entry point of
the plugnn distribution; without --plugnn-backend it adds nothing.

    pytest --plugnn-isolate AcmeNpu tests/e2e

runs the backend AcmeNpu in a worker process in every plugnn Runtime the tests create (it sets
PLUGNN_ISOLATE for the session), so a kernel that crashes or hangs (with PLUGNN_ISOLATE_WATCHDOG)
fails one test with a BackendCrashedError instead of ending the test run.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from plugnn.check import Report


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("plugnn", "plugnn backend checks")
    group.addoption("--plugnn-backend", action="append", default=[], metavar="PATH",
                    help="check this backend plugin file (repeatable): one test per check and layer kind")
    group.addoption("--plugnn-layers", default=None, metavar="KIND[,KIND...]",
                    help="sweep only these layer kinds (Convolution2d, Activation, ...)")
    group.addoption("--plugnn-isolate", action="append", default=[], metavar="BACKEND_ID",
                    help="run this backend in a worker process in every plugnn Runtime the tests create "
                         "(repeatable; sets PLUGNN_ISOLATE): a crash fails one test with BackendCrashedError")
    group.addoption("--plugnn-option", action="append", default=[], metavar="KEY=VALUE",
                    help="an option to round-trip through set_option/get_option (repeatable)")


class BackendCheckFailure(Exception):
    """A check of `plugnn check-backend` did not hold; the message lists the findings."""


class BackendCheckItem(pytest.Item):
    def __init__(self, *, path: str, check: str, kind: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.plugin_path = path
        self.check = check
        self.kind = kind

    def runtest(self) -> None:
        report = _report(self.config, self.plugin_path)
        check = report.checks[self.check]
        if self.kind is None:
            if check.status != "pass":
                raise BackendCheckFailure("\n".join(check.failures + check.notes) or check.status)
            return
        counts = report.layers.get(self.kind)
        failures = [f for f in check.failures if f.startswith(self.kind + " ")]
        if failures:
            raise BackendCheckFailure("\n".join(failures))
        if counts is None:
            raise BackendCheckFailure("; ".join(check.notes) or f"the sweep did not reach {self.kind}")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, BackendCheckFailure):
            return f"{self.plugin_path}: {self.check}{f' ({self.kind})' if self.kind else ''}:\n{excinfo.value}"
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[str, int | None, str]:
        return self.plugin_path, None, self.name


def pytest_configure(config: pytest.Config) -> None:
    isolate = config.getoption("--plugnn-isolate", default=[]) or []
    if isolate:
        from plugnn.isolation import ENV_VAR

        current = [p for p in os.environ.get(ENV_VAR, "").split(",") if p.strip()]
        os.environ[ENV_VAR] = ",".join(current + list(isolate))


def _report(config: pytest.Config, path: str) -> Report:
    reports: dict[str, Report] = config.stash.setdefault(_REPORTS, {})
    if path not in reports:
        from plugnn.check import check_backend

        layers = config.getoption("plugnn_layers")
        options = dict(o.split("=", 1) for o in config.getoption("plugnn_option"))
        reports[path] = check_backend(path, layers.split(",") if layers else None, options)
    return reports[path]


_REPORTS = pytest.StashKey[dict]()


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    paths = config.getoption("plugnn_backend")
    if not paths:
        return
    from plugnn.check import CHECKS
    from plugnn.sweep import GENERATORS, kind_name, parse_kinds

    layers = config.getoption("plugnn_layers")
    kinds = parse_kinds(layers.split(",")) if layers else list(GENERATORS)
    for raw in paths:
        path = os.path.abspath(raw)
        base = f"plugnn-backend[{os.path.basename(path)}]"
        for check in CHECKS:
            if check == "layers":
                for kind in kinds:
                    name = kind_name(kind)
                    items.append(BackendCheckItem.from_parent(session, name=f"{base}::layers[{name}]", path=path,
                                                              check=check, kind=name))
            else:
                items.append(BackendCheckItem.from_parent(session, name=f"{base}::{check}", path=path, check=check))
