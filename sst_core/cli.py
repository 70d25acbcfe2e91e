"""The ``sst`` command (also ``python -m sst_core``).

    sst notebooks run [--profile P] [--only NAME ...]
    sst book [--profile P]
    sst report NAME [--profile P] [--format md|json]
    sst report --list
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import config


def _profile(value: str) -> str:
    if value not in config.PROFILES:
        raise argparse.ArgumentTypeError(
            f"unknown profile {value!r}; allowed: {', '.join(config.PROFILES)}")
    return value


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sst", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)

    nb = sub.add_parser("notebooks", help="execute notebooks with papermill")
    nb_sub = nb.add_subparsers(dest="action", required=True)
    run = nb_sub.add_parser("run", help="execute notebooks in book order")
    run.add_argument("--profile", type=_profile, default="quick")
    run.add_argument("--only", nargs="+", metavar="NAME", help="notebook names, e.g. p1_groups")
    run.add_argument("--root", type=Path, default=None, help="project root (default: found from cwd)")

    book = sub.add_parser("book", help="execute every notebook and build the book strictly")
    book.add_argument("--profile", type=_profile, default="quick")
    book.add_argument("--root", type=Path, default=None)

    rep = sub.add_parser("report", help="print a table of the book from stored run records")
    rep.add_argument("name", nargs="?", help="report name (see --list)")
    rep.add_argument("--list", action="store_true", help="list report names")
    rep.add_argument("--profile", type=_profile, default="quick")
    rep.add_argument("--format", choices=("md", "json"), default="md")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "report":
        from .reports import REPORTS, get_report

        if args.list or not args.name:
            print("\n".join(sorted(REPORTS)))
            return 0 if args.list else 2
        try:
            table = get_report(args.name)(config.get_profile(args.profile))
        except ValueError as err:
            print(f"sst report: {err}", file=sys.stderr)
            return 2
        print(table.to_json() if args.format == "json" else table.to_markdown())
        return 0

    from .notebooks import BookError, build_book, find_root, run_notebooks

    try:
        root = (args.root.resolve() if args.root else find_root())
        if args.command == "notebooks":
            runs = run_notebooks(root, args.profile, args.only)
            return 0 if all(r.ok for r in runs) else 1
        build_book(root, args.profile)
        return 0
    except (BookError, config.ConfigError) as err:
        print(f"sst {args.command}: {err}", file=sys.stderr)
        return 1
