"""The `plugnn` command line."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from plugnn import BACKEND_API_VERSION, PlugnnError, __version__
from plugnn._build_config import INSTALL_DIR
from plugnn.run.arguments import add_parser as add_run_parser

# The installed native parts (cmake/, include/, backends/), also under an editable install.
PACKAGE_DIR = Path(INSTALL_DIR)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="plugnn", description="plugnn inference runtime")
    parser.add_argument("--version", action="version",
                        version=f"plugnn {__version__} (backend API {BACKEND_API_VERSION[0]}.{BACKEND_API_VERSION[1]})")
    parser.add_argument("--cmake-dir", action="store_true",
                        help="print the directory to pass as -Dplugnn_DIR to find_package(plugnn CONFIG)")
    parser.add_argument("--include-dir", action="store_true", help="print the directory of the C headers")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what the loader does")
    commands = parser.add_subparsers(dest="command")
    backends = commands.add_parser("backends", help="list usable backends and rejected candidates")
    backends.add_argument("--dynamic-backends-path", metavar="DIR",
                          help="search only this directory for dynamic backends")
    backends.add_argument("--json", action="store_true", help="print JSON instead of tables")
    backends.add_argument("--reprobe", action="store_true",
                          help="forget the cached probe verdicts and probe every plugin again")
    backends.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                          help="log what the loader does")
    check = commands.add_parser("check-backend", help="check that a backend plugin is right (every call in a "
                                                       "child process; exit status 0 only when all holds)")
    check.add_argument("path", help="the plugin file (<vendor>_<name>_backend.so[.<version>])")
    check.add_argument("--layers", metavar="KIND[,KIND...]",
                       help="sweep only these layer kinds (Convolution2d, Activation, ...)")
    check.add_argument("--option", metavar="KEY=VALUE", action="append", default=[],
                       help="an option to round-trip through set_option and get_option (repeatable)")
    check.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                       help="time limit of one step (default 30)")
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    add_run_parser(commands)  # plugnn run: python/plugnn/run/, docs/run.md
    return parser


def _table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _searched(path: str) -> str:
    from plugnn.loader import ENTRY_POINT_GROUP, INSTALLED_TOKEN

    return f"installed distributions (entry points {ENTRY_POINT_GROUP})" if path == INSTALLED_TOKEN else path


def _backends_command(args: argparse.Namespace) -> int:
    from plugnn import probe
    from plugnn.runtime import Runtime

    if args.reprobe:
        probe.clear_cache()
    # Always probed, whatever PLUGNN_PROBE says: this is the command that tells what is wrong.
    with Runtime(dynamic_backends_path=args.dynamic_backends_path, probe="process") as runtime:
        usable = runtime.describe()
        for row in usable:  # each backend's options as it lists them (Backend.options)
            try:
                row["options"] = [option.as_dict() for option in runtime.backend(row["backend_id"]).options()]
            except PlugnnError as exc:
                row["options"], row["options_error"] = [], str(exc)
        problems = [r for r in runtime.load_report if r.status != "loaded"]
        if args.json:
            print(json.dumps({
                "backend_api_version": "{}.{}".format(*BACKEND_API_VERSION),
                "search_paths": runtime.backend_paths,
                "backends": usable,
                "load_report": [r.as_dict() for r in runtime.load_report],
            }, indent=2))
            return 0
        searched = ", ".join(map(_searched, runtime.backend_paths)) or (
            "nothing (no valid directory, see below)" if problems else "nothing (dynamic loading disabled)")
        print(f"Backend API {BACKEND_API_VERSION[0]}.{BACKEND_API_VERSION[1]}; searched: {searched}")
        print()
        if usable:
            sources = any(b["source"] for b in usable)
            print(_table([[b["backend_id"], b["version"], b["origin"], *([b["source"] or "-"] if sources else [])]
                          for b in usable], ["backend", "version", "origin", *(["distribution"] if sources else [])]))
        else:
            print("No usable backends.")
        for b in usable:
            if b["options"] or b.get("options_error"):
                print()
                print(f"{b['backend_id']} options:")
                if b.get("options_error"):
                    print(f"  cannot list them: {b['options_error']}")
                rows = [[o["name"], o["type"] + (", read-only" if o["read_only"] else ""), o["default"], o["help"]]
                        for o in b["options"]]
                if rows:
                    print(_table(rows, ["option", "type", "default", "help"]))
        if problems:
            print()
            print(_table([[r.status, r.path, r.backend_id or "-", r.reason] for r in problems],
                         ["status", "path", "backend", "reason"]))
    return 0


def _check_backend_command(args: argparse.Namespace) -> int:
    from plugnn.check import check_backend
    from plugnn.sweep import parse_kinds

    layers = [k.strip() for k in args.layers.split(",") if k.strip()] if args.layers else None
    try:
        if layers:
            parse_kinds(layers)
        options = dict(option.split("=", 1) for option in args.option)
    except ValueError as exc:
        print(f"plugnn: error: {exc}" if "=" in str(exc) or "kind" in str(exc) else
              "plugnn: error: --option takes KEY=VALUE", file=sys.stderr)
        return 2
    report = check_backend(args.path, layers, options, args.timeout)
    print(json.dumps(report.as_dict(), indent=2) if args.json else report.text())
    return 0 if report.passed else 1


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.ERROR,
                        format="plugnn: %(levelname)s: %(message)s")
    if args.cmake_dir:
        print(PACKAGE_DIR / "cmake")
        return 0
    if args.include_dir:
        print(PACKAGE_DIR / "include")
        return 0
    try:
        if args.command == "backends":
            return _backends_command(args)
        if args.command == "check-backend":
            return _check_backend_command(args)
        if args.command == "run":
            try:
                from plugnn.run.command import run_command

                return run_command(args)
            except KeyboardInterrupt:
                print("plugnn: interrupted", file=sys.stderr)
                return 130
    except PlugnnError as exc:
        message = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
        print(f"plugnn: error: {message or type(exc).__name__}", file=sys.stderr)
        return 2
    parser.print_help()
    return 0


