"""The ``sst`` command (also ``python -m sst_core``).

    sst notebooks run [--profile P] [--only NAME ...]
    sst book [--profile P] [--plan | --save-timings]
    sst report NAME [--profile P] [--format md|json]
    sst report --list
    sst bench [--device auto|cpu|cuda] [--format md|json] [--repeat N] [--only NAME ...]
              [--size small|full] [--threads N] [--out FILE] [--record]
    sst sweep EXPERIMENT [--profile P] [--workers N|auto] [--executor local|ray] [--address A]
              [--retry-failed] [--retry-stale] [--stack K] [--threads N] [--no-wait]
              [--stop-by WHEN]
    sst status [--profile P] [--experiment NAME ...] [--format md|json]
    sst lock EXPERIMENT ... [--sample K]
    sst gpu-check [--device cuda] [--no-bench] [--bench-size small|full] [--repeat N]
    sst lra --task TASK ... [--data-dir DIR] [--profile P] [--table main|ablation|both]
"""
from __future__ import annotations

import argparse
import os
import sys
import textwrap
import time
from pathlib import Path

from sst_core.book import params
from sst_core.experiments import registry
from sst_core.spec import configs, profiles
from sst_core.spec.names import one_spelling


def _profile(value: str) -> str:
    if value not in profiles.PROFILES:
        raise argparse.ArgumentTypeError(
            f"unknown profile {value!r}; allowed: {', '.join(profiles.PROFILES)}")
    return value


def _notebook_profile(value: str) -> str:
    if value not in params.NOTEBOOK_PROFILES:
        raise argparse.ArgumentTypeError(
            f"unknown profile {value!r}; allowed: {', '.join(params.NOTEBOOK_PROFILES)}")
    return value


def _positive_int(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}")
    return n


def _workers(value: str) -> int | None:
    """``auto`` (None: the sweep chooses) or a positive int."""
    return None if value == "auto" else _positive_int(value)


def _one_spelling(value: str, names, what: str) -> str:
    """:func:`sst_core.spec.names.one_spelling` as an argparse type."""
    try:
        return one_spelling(value, names, what)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _stop_by(value: str) -> float:
    from sst_core.sweep.runner import parse_stop_by

    try:
        return parse_stop_by(value)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _sweep_or_all(value: str) -> str:
    return _one_spelling(value, [*registry.SWEEPS, "all"], "sweep")


def _sweep_name(value: str) -> str:
    return _one_spelling(value, list(registry.SWEEPS), "sweep")


class _Help(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Every option's help ends with its default; descriptions keep their line breaks."""


def _plain(text: str) -> str:
    """Docstring markup (``code``) as plain text for --help."""
    return text.replace("``", "")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sst", description=_plain(__doc__), formatter_class=_Help)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, **kw) -> argparse.ArgumentParser:
        return sub.add_parser(name, formatter_class=_Help, **kw)

    nb = command("notebooks", help="execute notebooks with papermill")
    nb_sub = nb.add_subparsers(dest="action", required=True, metavar="ACTION")
    run = nb_sub.add_parser("run", help="execute notebooks in book order", formatter_class=_Help)
    run.add_argument("--profile", type=_notebook_profile, default="quick",
                     help="smoke, quick, standard, paper, or best (per chapter: paper where its "
                     "records are stored, else standard where they are, else quick)")
    run.add_argument("--only", nargs="+", metavar="NAME",
                     help="notebook names, e.g. p1_groups; None: every notebook of _toc.yml")
    run.add_argument("--root", type=Path, default=None,
                     help="project root, the folder holding _toc.yml; None: found from the "
                     "current folder upwards")

    book = command("book", help="execute every notebook and build the book strictly")
    book.add_argument("--profile", type=_notebook_profile, default="best",
                      help="smoke, quick, standard, paper, or best (per chapter: paper where its "
                      "records are stored, else standard where they are, else quick)")
    book.add_argument("--plan", action="store_true",
                      help="print per chapter the profile it would run at and why, its runs "
                      "stored, missing and stale, and the compute the missing ones need; "
                      "run nothing")
    book.add_argument("--save-timings", action="store_true",
                      help="write the compute of every stored run of --profile to "
                      "results/timings/<profile>.json, which prices the runs of a clone "
                      "without those records (smoke's are not committed); run nothing")
    book.add_argument("--root", type=Path, default=None,
                      help="project root, the folder holding _toc.yml; None: found from the "
                      "current folder upwards")

    rep = command("report", help="print a table of the book from stored run records")
    rep.add_argument("name", nargs="?", help="report name (see --list); required unless --list")
    rep.add_argument("--list", action="store_true", help="list report names")
    rep.add_argument("--profile", type=_profile, default="quick",
                     help="the profile whose records are read: " + ", ".join(profiles.PROFILES))
    rep.add_argument("--format", choices=("md", "json"), default="md", help="output format")
    rep.set_defaults(usage=rep.format_usage)

    ben = command("bench", help="time our models beside torch references (medians, ratios)",
                  description="Time training steps and long forward passes of our "
                  "models, interleaved with a torch reference (nn.RNN, nn.GRU) of the "
                  "same sizes; print medians and ratios ours / reference.")
    ben.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                     help="auto: CUDA when available")
    ben.add_argument("--format", choices=("md", "json"), default="md", help="output format")
    ben.add_argument("--repeat", type=_positive_int, default=5,
                     help="timed rounds; the median is reported")
    ben.add_argument("--only", nargs="+", metavar="NAME",
                     help="benchmark names (see --list); None: every benchmark but the "
                     "opt-in ones (minutes long, e.g. sweep_runs_per_hour)")
    ben.add_argument("--list", action="store_true", help="list benchmark names")
    ben.add_argument("--size", choices=("small", "full"), default="full",
                     help="small: batch 2, for tests (times mean nothing)")
    ben.add_argument("--threads", type=_positive_int, default=None,
                     help="torch intra-op threads; None: torch's own choice")
    ben.add_argument("--out", type=Path, default=None,
                     help="also write the JSON result here; None: do not")
    ben.add_argument("--record", action="store_true",
                     help="also store a run record under results/bench/ (the book's "
                     "benchmark chapter shows these)")

    from sst_core.sweep.runner import EXECUTORS

    swp = command("sweep", help="compute every missing run of an experiment (resumable)",
                  description=textwrap.fill(
                      "Compute every run of an experiment's grid that has no stored record. "
                      "Safe to kill and rerun: records are atomic, runs are claimed, a killed "
                      "worker's claims are recovered. The profile and the number of runs are "
                      "printed before anything starts.", 78) + "\n\nExperiments:\n"
                  + "\n".join(f"  {k}: {v}" for k, v in registry.SWEEPS.items()))
    swp.add_argument("experiment", type=_sweep_or_all, metavar="EXPERIMENT",
                     help=", ".join(registry.SWEEPS) + ", or all (every sweep but the staged "
                     "ones, " + ", ".join(registry.staged_sweeps()) + ", which no chapter reads "
                     "yet)")
    swp.add_argument("--profile", type=_profile, default="quick",
                     help="the sizes of the runs: " + ", ".join(profiles.PROFILES)
                     + " (quick trains for real: minutes to hours; standard: days, "
                     "resumable)")
    swp.add_argument("--workers", type=_workers, default="auto",
                     help="processes (local) or concurrent tasks (ray), each with cpu_count "
                     "// N torch threads; auto: one per core with 1 thread (fewer tasks than "
                     "cores: the cores shared out as threads), measured faster on 2 cores")
    swp.add_argument("--executor", choices=EXECUTORS, default="local",
                     help="local: a process pool on this machine; ray: Ray tasks")
    swp.add_argument("--address", default=None, help="ray: the cluster to join (ray://... or "
                     "host:port); None: a local Ray instance")
    swp.add_argument("--retry-failed", action="store_true", help="compute failed runs again")
    swp.add_argument("--retry-stale", action="store_true",
                     help="recompute records made by an older version of their code too "
                          "(after the runs that have no record)")
    swp.add_argument("--stack", type=_positive_int, default=None,
                     help="tracking runs trained as one stack; None: the profile's track_stack")
    swp.add_argument("--threads", type=_positive_int, default=None,
                     help="torch threads per worker; None: cpu_count // workers (auto: 1)")
    swp.add_argument("--no-wait", action="store_true",
                     help="leave the runs another running sweep holds to it (and the "
                     "experiment's later phases) instead of waiting for them: for two sweeps "
                     "side by side, each with --workers 1 --threads 1, in different orders")
    swp.add_argument("--stop-by", type=_stop_by, default=None, metavar="WHEN",
                     help="start no run that would end after WHEN (priced by the stored runs "
                     "most like it; such runs are deferred, not lost when a session ends): "
                     "+90m, +2h30m, HH:MM (the next such time) or 2026-12-05T01:30")

    sta = command("status", help="runs done, missing, failed and stale per experiment")
    sta.add_argument("--profile", type=_profile, default="quick",
                     help="the profile whose records are counted: " + ", ".join(profiles.PROFILES))
    sta.add_argument("--experiment", nargs="+", type=_sweep_name, default=None, metavar="NAME",
                     help="sweeps to count (" + ", ".join(registry.SWEEPS) + "); None: all")
    sta.add_argument("--format", choices=("md", "json"), default="md", help="output format")
    sta.add_argument("--committed-files", action="store_true",
                     help="print instead the stored files that belong in the repository (every "
                     "record, and the weights an analysis reads), one path per line, for "
                     "`git add -f`")
    sta.add_argument("--estimate", action="store_true",
                     help="also price the missing runs of each sweep from the stored runs "
                     "most like them, as `sst book --plan` does (reads every record of the "
                     "profile: seconds at standard)")

    lck = command("lock", help="accept a change to the code an experiment's runs reach: "
                  "recompute a sample, and update results/versions.lock if nothing changed",
                  description="Each experiment has a version (sst_core/experiments/registry.py); "
                  "results/versions.lock holds it with the fingerprints of the code its runs "
                  "reach, and a test fails when they no longer match. After a version bump this "
                  "writes the new version (its records are stale). Else it recomputes the "
                  "cheapest stored runs of each changed model and profile (--sample of them) "
                  "on this machine twice, with the code of the commit that last wrote the lock "
                  "and with the code as it is, compares every metric (floats to 1.5e-6, one "
                  "unit in the sixth decimal the records keep; timings not compared) and "
                  "updates the lock only if all agree; otherwise it prints the differences and "
                  "exits 1: then raise the version instead.")
    lck.add_argument("experiment", nargs="+", choices=list(registry.EXPERIMENTS),
                     metavar="EXPERIMENT",
                     help="one or more of: " + ", ".join(registry.EXPERIMENTS))
    lck.add_argument("--sample", type=_positive_int, default=1,
                     help="runs recomputed per changed model (the cheapest), and at least as "
                  "many per profile")

    gpu = command("gpu-check", help="CUDA results against CPU results, then the "
                  "benchmarks on CUDA (scripts/gpu_check.sh; never in CI)",
                  description="Compare every model's and fast op's output and "
                  "gradients on the device with the CPU, run the benchmarks on the "
                  "device, and store both as records under results/bench/.")
    gpu.add_argument("--device", default="cuda", help="the device to check")
    gpu.add_argument("--no-bench", action="store_true", help="only the comparisons")
    gpu.add_argument("--bench-size", choices=("small", "full"), default="full",
                     help="small: batch 2 (times mean nothing)")
    gpu.add_argument("--repeat", type=_positive_int, default=5,
                     help="timed rounds of the benchmarks; the median is reported")

    lra = command("lra", help="train the LRA tables on chosen tasks (e.g. your LRA files)",
                  description="Run the main table and/or the ablation of the chapter "
                  "'Frozen versus learned spectra on LRA' on the given tasks, resuming "
                  "from stored records, and print the tables. Tasks lra_listops, "
                  "lra_pathfinder, lra_imdb, lra_aan and lra_cifar read the LRA release from "
                  "--data-dir (or $SST_LRA_DATA).")
    lra.add_argument("--task", nargs="+", required=True, metavar="TASK",
                     help="required: " + ", ".join(configs.LRA_TASKS))
    lra.add_argument("--data-dir", type=Path, default=None,
                     help="folder holding the unpacked LRA release (lra_* tasks); None: "
                     "$SST_LRA_DATA")
    lra.add_argument("--profile", type=_profile, default="quick",
                     help="the sizes of the runs: " + ", ".join(profiles.PROFILES))
    lra.add_argument("--table", choices=("main", "ablation", "both"), default="both",
                     help="which table to train and print")
    lra.add_argument("--format", choices=("md", "json"), default="md", help="output format")
    return p


def _lra(args: argparse.Namespace) -> int:
    import dataclasses
    import os

    from sst_core.experiments import paper2
    from sst_core.experiments import runs as experiments_runs
    from sst_core.reports import lra as lra_reports

    unknown = [t for t in args.task if t not in configs.LRA_TASKS]
    if unknown:
        print(f"sst lra: unknown task(s) {unknown}; allowed: {', '.join(configs.LRA_TASKS)}",
              file=sys.stderr)
        return 2
    if args.data_dir is not None:
        if not args.data_dir.is_dir():
            print(f"sst lra: --data-dir {args.data_dir} is not a folder", file=sys.stderr)
            return 2
        os.environ["SST_LRA_DATA"] = str(args.data_dir.resolve())
    P = dataclasses.replace(profiles.get_profile(args.profile), lra_tasks=tuple(args.task))
    grids = {"main": paper2.lra_main_grid, "ablation": paper2.lra_ablation_grid}
    names = ["main", "ablation"] if args.table == "both" else [args.table]
    try:  # the grids hash the data files (their fingerprint is part of each run's id)
        cfgs = list(dict.fromkeys(c for name in names for c in grids[name](P)))
        experiments_runs.run_all(cfgs, desc="LRA")
    except ValueError as err:  # a missing or malformed data folder names what it expected
        print(f"sst lra: {err}", file=sys.stderr)
        return 2
    for name in names:
        table = (lra_reports.lra_main if name == "main" else lra_reports.lra_ablation)(P)
        print(table.to_json() if args.format == "json" else table.to_markdown())
    return 0


def _bench(args: argparse.Namespace, argv: list[str] | None = None) -> int:
    from sst_core.bench import harness as bench
    from sst_core.bench import records as bench_records

    if args.list:
        print("\n".join(bench.names()))
        for name in bench.opt_in_names():
            print(f"{name}  (not in the default run: --only {name})")
        return 0
    start = time.perf_counter()
    try:
        result = bench.run(args.only, device=args.device, size=args.size, repeat=args.repeat,
                           threads=args.threads)
    except ValueError as err:
        print(f"sst bench: {err}", file=sys.stderr)
        return 2
    print(bench.to_json(result) if args.format == "json" else bench.to_markdown(result))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(bench.to_json(result) + "\n")
    if args.record:
        command = "sst " + " ".join(sys.argv[1:] if argv is None else argv)
        path = bench_records.store(result, command, time.perf_counter() - start)
        print(f"record: {path}", file=sys.stderr)
    return 0


def _sweep(args: argparse.Namespace) -> int:
    from sst_core.sweep import runner

    names = [args.experiment]
    if args.experiment == "all":  # the sweeps a chapter reads; a staged one is named to run
        staged = registry.staged_sweeps()
        names = [name for name in registry.SWEEPS if name not in staged]
        if staged:
            print(f"sst sweep all: leaves out the staged sweeps {', '.join(staged)} (no chapter "
                  "reads them yet; each is many sessions of compute): name one to run it",
                  flush=True)
    for name in names:
        try:
            total, todo = runner.plan(name, args.profile, args.retry_failed, args.retry_stale)
            layout = ("workers auto: one per core, 1 thread each" if args.workers is None
                      else f"{args.workers} worker(s)")
            if args.threads is not None:
                layout += f", {args.threads} torch thread(s) each"
            if args.no_wait:
                layout += ", leaving runs another sweep holds to it"
            price = None
            if args.stop_by is not None:
                from datetime import datetime

                from sst_core.book.plan import price_table
                from sst_core.experiments.runs import share_until_saved

                costs = price_table(args.profile)

                def price(cfg, costs=costs):  # the seconds before its work is safe
                    seconds = costs.estimate_timed(args.profile, cfg)[0]
                    return None if seconds is None else seconds * share_until_saved(cfg)

                at = datetime.fromtimestamp(args.stop_by).astimezone()
                left = max(0.0, args.stop_by - time.time()) / 60
                layout += (f", starting no run that would end after "
                           f"{at:%Y-%m-%d %H:%M %Z} (in {left:.0f} min)")
            print(f"sst sweep {name}: profile {args.profile}, {total} runs, {todo} to compute "
                  f"(executor {args.executor}, {layout})", flush=True)
            result = runner.sweep(name, args.profile, workers=args.workers,
                                 executor=args.executor, address=args.address,
                                 retry_failed=args.retry_failed, retry_stale=args.retry_stale,
                                 stack=args.stack, threads=args.threads,
                                 wait=not args.no_wait, stop_by=args.stop_by, price=price,
                                 progress=lambda o: print(" ".join(f"{k}:{v}" for k, v in
                                                                   o.items()), flush=True),
                                 report=lambda msg: print(f"sst sweep: {msg}", file=sys.stderr,
                                                          flush=True))
        except ValueError as err:
            print(f"sst sweep: {err}", file=sys.stderr)
            return 2
        print(result.summary())
    return 0


def _status(args: argparse.Namespace) -> int:
    import dataclasses
    import json

    from sst_core.sweep import status as sweep_status

    if args.committed_files:
        for path in sweep_status.committed_files(args.profile):
            print(path)
        return 0
    rows = sweep_status.status(args.profile, args.experiment)
    for row in rows:
        for problem in row.problems:
            print(f"sst status: unreadable record {problem}", file=sys.stderr)
    for path in sweep_status.foreign_files(args.profile):
        print(f"sst status: {path} is not a file of any run of {args.profile}'s grids (a "
              "record no sweep reads, or something else); move it out of the results folder",
              file=sys.stderr)
    estimates = {}
    if args.estimate:
        from sst_core.book.plan import missing_estimate, price_table

        costs = price_table(args.profile)
        estimates = {r.experiment: missing_estimate(r.experiment, args.profile, costs)
                     for r in rows if r.missing}
    if args.format == "json":
        print(json.dumps([{**dataclasses.asdict(r), **({"missing_estimate": estimates.get(
            r.experiment)} if args.estimate else {})} for r in rows], indent=1))
    else:
        print(sweep_status.status_markdown(rows, args.profile))
        if args.estimate:
            from sst_core.book.plan import estimate_cell

            print("\n| experiment | missing | missing, estimated |\n|---|---:|---:|")
            for r in rows:
                if r.missing:
                    print(f"| {r.experiment} | {r.missing} | "
                          f"{estimate_cell(estimates[r.experiment], star='*')} |")
            if any(e["rough"] for e in estimates.values()):
                print("\n*: partly priced from runs of another width or model, so only "
                      "roughly (`sst book --plan` explains the pricing).")
    return 0


def _lock(args: argparse.Namespace) -> int:
    from sst_core.experiments import versions

    code = 0
    for name in args.experiment:
        try:
            result = versions.lock(name, sample=args.sample,
                                   report=lambda msg: print(f"sst lock: {msg}", file=sys.stderr,
                                                            flush=True))
        except (ValueError, RuntimeError) as err:
            print(f"sst lock: {err}", file=sys.stderr)
            return 2
        changed = ", ".join(result.changed)
        if result.action == "unchanged":
            print(f"{name}: the lock matches the code; nothing to do")
        elif result.action in ("added", "version"):
            print(f"{name}: version {registry.version(name)} written to the lock (nothing "
                  "recomputed; records of older versions are stale)")
        elif result.action == "locked":
            print(f"{name}: changed code ({changed}); {len(result.checked)} stored run(s) "
                  f"recomputed with the locked and the current code, every metric agrees "
                  f"(largest difference {result.largest_difference:.2g}): lock updated. "
                  f"This machine reproduces {result.reproduced} of those "
                  f"{len(result.checked)} stored records as they are.")
        else:
            print(f"{name}: changed code ({changed}); the recomputed runs differ from the "
                  f"stored ones, so the lock is unchanged. Raise the version of {name} in "
                  "sst_core/experiments/registry.py if the change is meant, then run sst lock "
                  "again.\n")
            print(versions.differences_markdown(result))
            code = 1
    return code


def _report(args: argparse.Namespace) -> int:
    import warnings

    from sst_core.reports import REPORTS, get_report
    from sst_core.store.records import RecordWarning

    if args.list:
        print("\n".join(sorted(REPORTS)))
        return 0
    if not args.name:
        print(args.usage().rstrip(), file=sys.stderr)
        print(f"sst report: a report name is required (or --list); allowed: "
              f"{', '.join(sorted(REPORTS))}", file=sys.stderr)
        return 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RecordWarning)
        try:
            table = get_report(args.name)(profiles.get_profile(args.profile))
        except ValueError as err:
            print(f"sst report: {err}", file=sys.stderr)
            return 2
    for w in caught:
        if issubclass(w.category, RecordWarning):
            print(f"sst report: warning: {w.message}", file=sys.stderr)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    print(table.to_json() if args.format == "json" else table.to_markdown())
    return 0


def _gpu_check(args: argparse.Namespace) -> int:
    from sst_core.bench import gpu_check
    from sst_core.bench import harness as bench
    from sst_core.bench import records as bench_records

    start = time.perf_counter()
    try:
        checks = gpu_check.compare_devices(args.device)
    except (ValueError, RuntimeError) as err:
        print(f"sst gpu-check: {err}", file=sys.stderr)
        return 2
    print(gpu_check.to_markdown(checks))
    path = gpu_check.store(checks, args.device, time.perf_counter() - start)
    print(f"record: {path}", file=sys.stderr)
    ok = all(c["ok"] for c in checks)
    if not args.no_bench:
        start = time.perf_counter()
        result = bench.run(device=args.device, size=args.bench_size, repeat=args.repeat)
        print(bench.to_markdown(result))
        path = bench_records.store(result, f"sst bench --device {args.device} --size {args.bench_size} "
                           f"--repeat {args.repeat}", time.perf_counter() - start)
        print(f"record: {path}", file=sys.stderr)
    return 0 if ok else 1


# commands that read or write the results folder (bench only with --record)
_RESULTS_COMMANDS = ("notebooks", "book", "report", "sweep", "status", "lock",
                     "gpu-check", "lra")


# torch's CPU allocator with transparent huge pages (read once, when torch first allocates):
# fresh memory otherwise page-faults, and training steps here run 1.5-2x slower
# (cpu-performance-notes.md). The Makefile sets it too; a user's own value wins.
THP_ENV = ("THP_MEM_ALLOC_ENABLE", "1")


def main(argv: list[str] | None = None) -> int:
    if "torch" not in sys.modules:  # (too late once torch has loaded)
        os.environ.setdefault(*THP_ENV)
    args = _parser().parse_args(argv)
    from sst_core.store.records import StoreError

    try:
        return _main(args, argv)
    except StoreError as err:  # a file of the store that cannot be written, named
        print(f"sst {args.command}: {err}", file=sys.stderr)
        return 1


def _main(args: argparse.Namespace, argv: list[str] | None) -> int:
    if args.command in _RESULTS_COMMANDS or getattr(args, "record", False):
        from sst_core.store.records import ResultsDirError, results_dir

        try:
            results_dir()
        except ResultsDirError as err:
            print(f"sst {args.command}: {err}", file=sys.stderr)
            return 2
    if args.command == "gpu-check":
        return _gpu_check(args)
    if args.command == "sweep":
        return _sweep(args)
    if args.command == "status":
        return _status(args)
    if args.command == "lock":
        return _lock(args)
    if args.command == "bench":
        return _bench(args, argv)
    if args.command == "lra":
        return _lra(args)
    if args.command == "report":
        return _report(args)

    from sst_core.book.runner import (
        BookError,
        BookUsageError,
        build_book,
        find_root,
        run_notebooks,
    )

    try:
        root = (args.root.resolve() if args.root else find_root())
        if args.command == "notebooks":
            runs = run_notebooks(root, args.profile, args.only)
            return 0 if all(r.ok for r in runs) else 1
        if args.save_timings:
            from sst_core.book.plan import save_timings
            from sst_core.book.runner import toc_notebooks

            try:
                path = save_timings(args.profile, toc_notebooks(root))
            except ValueError as err:
                raise BookUsageError(str(err)) from None
            print(f"sst book --save-timings: wrote {path}")
            return 0
        if args.plan:
            from sst_core.book.plan import book_plan, plan_text
            from sst_core.book.runner import toc_notebooks, toc_parts

            print(plan_text(book_plan(toc_notebooks(root), args.profile), args.profile,
                            toc_parts(root)))
            return 0
        build_book(root, args.profile)
        return 0
    except BookUsageError as err:  # a wrong name or folder: a usage error, like argparse's
        print(f"sst {args.command}: {err}", file=sys.stderr)
        return 2
    except (BookError, profiles.ConfigError) as err:
        print(f"sst {args.command}: {err}", file=sys.stderr)
        return 1
