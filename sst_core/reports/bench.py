"""The benchmark chapter's tables, from the records ``sst bench --record`` and
``sst gpu-check`` store under ``results/bench/`` (never by timing anything here)."""
from __future__ import annotations

import re
import statistics
from typing import Any, Iterable, Sequence

from sst_core.reports import Table
from sst_core.spec.names import OP_NAMES, PHI_NAMES, TASK_NAMES, model_name, typeset_symbols

# (title, name prefix, what the ratio compares) of each section, in the chapter's order
SECTIONS = (
    ("Dense recurrences against torch's fused RNN and GRU", ("tanh_rnn_", "state_gated_rnn_"),
     "ours / torch (nn.RNN for the tanh RNN, nn.GRU for the state-gated RNN)"),
    ("Diagonal affine scan, forward and backward", ("diag_scan_",),
     "linear_scan / per-step autograd loop"),
    ("The scans' two paths on this device, forward and backward", ("scan_paths_",),
     "the device's own path (C loops on the CPU, the parallel chunked scan on CUDA) / "
     "the other path"),
    ("Selective scan's C loops against its torch path, forward and backward",
     ("selective_scan_mamba_", "selective_scan_negative_mamba_", "selective_scan_dispatch_"),
     "selective_scan's C loops / its torch (chunked) path; dispatch rows: the loops' parts "
     "on torch's thread team, on 1 or 2 threads (t1, t2)"),
    ("Selective scan against public CPU implementations, forward and backward",
     ("selective_scan_vs_",), "selective_scan / the public implementation (anchor column)"),
    ("Many models at once", ("stacked_train_",),
     "one stacked step of K models / K sequential steps"),
    ("Stack or not: what the sweep decides from (one thread, the standard profile's sizes)",
     ("stack_or_not_",),
     "one stacked step of K models / K sequential steps of the same models (below 1 the "
     "sweep stacks the model)"),
    ("S4D kernel and FFT convolution, forward and backward", ("s4d_kernel_",),
     "chunked Vandermonde kernel / the published S4D kernel's formula"),
    ("S4D classifier training step (paper 2's LRA model)", ("s4d_classifier_train_",),
     "our S4DModel / the same model built as the standalone s4d.py and example.py"),
    ("Cost of the semi-affine correction (chapter: a semi-affine repair)", ("semi_affine_",),
     "semi-affine Negative Mamba / the affine original"),
    ("Throughput of every Table 2 model (quick-profile sizes, and training steps at d_model "
     "64 with the roofline goal; no anchor)", ("throughput_",), ""),
)


def latest(records: list[dict[str, Any]], device: str, full: bool = True) -> dict[str, Any] | None:
    """The newest record made on ``device`` ("cpu" or "cuda"), or None. ``full``: only
    records of the whole benchmark (a run with ``--only`` times a few rows and is read by
    the chapter that needs those rows, not shown as the benchmark)."""
    found = [r for r in records if str(r["device"]).split(":")[0] == device
             and not (full and "--only" in str(r.get("command", "")).split())]
    return found[-1] if found else None


def provenance(record: dict[str, Any]) -> str:
    """One line: where, when, with what code and which command a record was made."""
    hw, st = record["hardware"], record["settings"]
    load = hw.get("load_avg_1m")
    where = (f"{hw['cpu_model']}, {hw['cpu_count']} logical cores" if hw["device"] == "cpu"
             else f"{hw['device_name']} (host: {hw['cpu_model']}, {hw['cpu_count']} logical cores)")
    return (f"{where}; "
            f"torch {hw['torch_version']}, {hw['torch_threads']} threads; "
            + (f"CPU scan: {hw['scan_loops'].split(':')[0]}; " if "scan_loops" in hw else "")
            + f"size {st['size']}, median of {st['repeat']} interleaved rounds; "
            f"load average {'n/a' if load is None else f'{load:.2f}'} at start; "
            f"commit {_commit(record['git_commit'])}, {record['created_utc']}; "
            f"`{record['command']}`; wall time {record['wall_time_s']:.0f} s")


def _commit(commit: str) -> str:
    """A record's commit, shortened, saying when the tree had uncommitted changes."""
    dirty = commit.endswith("+dirty")
    return commit.removesuffix("+dirty")[:10] + (" with uncommitted changes" if dirty else "")


# The sizes a row's name shows, in this order and under these symbols (the chapter's
# prose says what they mean); a size not named here or in _UNNAMED_SIZES is shown under its
# own name, so that no size is dropped unseen.
SIZE_SYMBOLS = {"length": "L", "batch": "b", "d": "d", "d_model": "d_model", "d_state": "N",
                "N": "N", "H": "H", "E": "E", "channels": "channels", "layers": "layers",
                "models": "K", "rank": "rank", "threads": "threads"}
# sizes a row's name leaves out: the task's alphabet and classes (the same in every row),
# and what its subject already names (the model, phi, real or complex, the S4D preset)
_UNNAMED_SIZES = {"n_tokens", "n_classes", "model", "phi", "dtype", "decoder", "norm",
                  "prenorm"}
KIND_NAMES = {"train": "training step", "eval": "evaluation"}


def sizes_text(sizes: dict[str, Any], keys: Iterable[str] | None = None) -> str:
    """A row's sizes as its name shows them: ``L = 1000, b = 250, d = 64``
    (:data:`SIZE_SYMBOLS`; no-break spaces about each "=", so that a line never breaks
    inside a size); ``keys``: only these sizes."""
    wanted = set(sizes) if keys is None else set(keys)
    order = [k for k in SIZE_SYMBOLS if k in sizes] + [k for k in sizes if k not in SIZE_SYMBOLS]
    return ", ".join(f"{SIZE_SYMBOLS.get(k, k)}\u00a0=\u00a0{sizes[k]}" for k in order
                     if k in wanted and k not in _UNNAMED_SIZES)  # a size never split


def subject(entry: dict[str, Any]) -> str:
    """What a benchmark row times, in the book's names (:mod:`sst_core.spec.names`): the
    model, or the operation with its variant, and for a model whether it is a training
    step or an evaluation. Read from the entry's fields: ``model`` (or ``sweep_model``),
    whose first word is the code name of the model or operation the case timed (a stacked
    step: ``mamba x16, stacked``; an S4D classifier: ``S4DModel (listops preset)``),
    ``kind``, ``sizes`` and, for a comparison with a public implementation, ``anchor``."""
    code = str(entry.get("sweep_model") or entry["model"])
    head = re.split(r"[\s\[,(+]", code, maxsplit=1)[0]
    sizes = entry["sizes"]
    if head in OP_NAMES:  # an operation: forward and backward (the tables' captions say)
        name = OP_NAMES[head]
        if "dtype" in sizes:
            name += ", complex" if "complex" in str(sizes["dtype"]) else ", real"
        if "model" in sizes:
            name += f", {model_name(str(sizes['model']))}"
        if "threads" in sizes:
            name += ", on torch's threads"
        repo = str(entry.get("anchor") or "").split(" ")[0]
        if "/" in repo:  # a public implementation, named by its repository
            name += f", against {repo}"
        return name
    preset = re.fullmatch(r"S4DModel \((\w+) preset\)", code)
    if preset:
        name = f"S4D classifier, {TASK_NAMES.get(preset[1], preset[1])}"
    else:
        name = model_name(head)
        if "phi" in sizes:
            name += f" with φ = {PHI_NAMES.get(sizes['phi'], sizes['phi'])}"
        if "models" in sizes:
            name += ", stacked"
    return f"{name}, {KIND_NAMES.get(entry['kind'], entry['kind'])}"


def row_label(entry: dict[str, Any], keys: Iterable[str] | None = None) -> str:
    """A benchmark row's name for readers: :func:`subject`, then its sizes
    (:func:`sizes_text`; ``keys``: only these), e.g. "State-gated RNN, evaluation,
    L = 1000, b = 250, d = 64". The code name that reruns it (``sst bench --only NAME``)
    stays in the entry's ``name``."""
    sizes = sizes_text(entry["sizes"], keys)
    return subject(entry) + (f", {sizes}" if sizes else "")


def short_labels(entries: Sequence[dict[str, Any]]) -> list[str]:
    """:func:`row_label` of each of ``entries`` with only the sizes that tell it apart from
    the other entries of the same subject (none where its subject is its own), for a
    figure's axis or a list in a caption."""
    by_subject: dict[str, list[dict[str, Any]]] = {}
    for e in entries:
        by_subject.setdefault(subject(e), []).append(e)
    keys = {s: {k for e in group for k in e["sizes"]
                if len({repr(g["sizes"].get(k)) for g in group}) > 1}
            for s, group in by_subject.items()}
    return [row_label(e, keys[subject(e)]) for e in entries]


def name_column(entries: Sequence[dict[str, Any]]) -> tuple[str, list[str]]:
    """A table's first column: its header, "benchmark" with the sizes every row shares
    (said once), and each row's :func:`row_label` with the sizes left (the papers'
    symbols typeset, as the header's are), which shows on hover the command that times the
    row again."""
    shared = {k: v for k, v in entries[0]["sizes"].items()
              if all(k in e["sizes"] and repr(e["sizes"][k]) == repr(v) for e in entries)
              } if entries else {}
    common = sizes_text(shared)
    cells = [f'<span title="sst bench --only {e["name"]}">'
             f'{typeset_symbols(row_label(e, set(e["sizes"]) - set(shared)))}</span>'
             for e in entries]
    return "benchmark" + (f" ({common})" if common else ""), cells


def _ms(x: float | None) -> str:
    return "" if x is None else f"{1e3 * x:,.2f}"


def section_table(record: dict[str, Any], title: str, prefixes: tuple[str, ...],
                  compares: str) -> Table | None:
    """The entries of one section as a table (None when the record has none): each row
    named for readers (:func:`row_label`, its sizes included), its times, and the columns
    of what the section measures besides. The limits of its training steps are in
    :func:`limits_table`, so that a table fits a page, and so are the rows with the
    roofline goal, whole (their time is the limits table's first number)."""
    entries = [e for e in record["entries"] if e["name"].startswith(prefixes)
               and e.get("roofline_target") is None]
    if not entries:
        return None
    extra: list[str] = []
    if any("bandwidth_share" in e for e in entries):
        extra = ["GB/s", f"share of copy (goal {BANDWIDTH_GOAL:.0%})"]
    if any("memory_ratio" in e for e in entries):
        extra = ["peak MB", "ref peak MB", "memory ratio"]
    if any("ceiling_ratio" in e for e in entries):
        extra = ["one model ms", "ceiling"]
    anchored = any(e["anchor_s"] is not None for e in entries)
    header, names = name_column(entries)
    columns = ([header, "ours ms", "ref ms", "ratio", "target"] if anchored
               else [header, "ms", "tokens/s"]) + extra
    rows = []
    for e, name in zip(entries, names):
        if anchored:
            target = "" if e["target"] is None else f"<= {e['target']:.3g}: {e['status']}"
            row = [name, _ms(e["ours_s"]), _ms(e["anchor_s"]),
                   "" if e["ratio"] is None else f"{e['ratio']:.2f}", target]
        else:
            row = [name, _ms(e["ours_s"]),
                   "" if e["tokens_per_s"] is None else f"{e['tokens_per_s']:,.0f}"]
        if "bandwidth_share" in e:
            row += [f"{e['achieved_bandwidth'] / 1e9:.2f}", f"{e['bandwidth_share']:.0%}"]
        elif "ceiling_ratio" in e:
            row += [_ms(e["one_model_s"]), f"{e['ceiling_ratio']:.2f}"]
        elif "memory_ratio" in e:
            row += [f"{e['ours_peak_bytes'] / 1e6:,.1f}", f"{e['anchor_peak_bytes'] / 1e6:,.1f}",
                    f"{e['memory_ratio']:.2f} (<= {e['memory_target']:g}, "
                    f"{e['memory_status']})"]
        else:
            row += [""] * len(extra)
        rows.append(row)
    note = (f"ratio = {compares}. " if compares else "") + SIZES_NOTE
    if extra and extra[-1] == "ceiling":
        note += (" one model ms: one model's training step on all K b sequences at once; "
                 "ceiling = that / the K sequential steps: the stack's arithmetic on the "
                 "same kernels with one set of weights, a bound on stacking with this "
                 "implementation's kernels, not on the machine.")
    return Table(title, columns, rows, note=note, data=entries)


# the diagonal scan's goal besides its time target: a share of the measured copy bandwidth
BANDWIDTH_GOAL = 0.40


def side_goals(record: dict[str, Any]) -> dict[str, int]:
    """The goals of ``record`` that are not time ratios, so not in :func:`targets`: how
    many entries have a peak-memory target and meet it (``memory_met`` of
    ``memory_goals``), and how many report a bandwidth share and reach
    :data:`BANDWIDTH_GOAL` (``bandwidth_met`` of ``bandwidth_goals``)."""
    mem = [e for e in record["entries"] if e.get("memory_status") is not None]
    bw = [e for e in record["entries"] if e.get("bandwidth_share") is not None]
    return {"memory_met": sum(e["memory_status"] == "meets" for e in mem),
            "memory_goals": len(mem),
            "bandwidth_met": sum(e["bandwidth_share"] >= BANDWIDTH_GOAL for e in bw),
            "bandwidth_goals": len(bw)}


SIZES_NOTE = ("Sizes: L length, b batch, d or d_model model width, N state size, H "
              "channels of an S4D layer, E Mamba's expanded width, K models.")
LIMIT_COLUMNS = ["benchmark", "ms", "GFLOP/s", "flop limit ms", "byte limit ms", "bound",
                 "x limit"]


def limits_table(record: dict[str, Any], goal: bool) -> Table | None:
    """How far each training step of ``record`` is from its limits (the entries that
    carry them, :mod:`sst_core.bench.roofline`): its time, GFLOP/s, the flop and byte
    limits, the larger one (bound) and time over it (x limit). ``goal``: the steps with
    the roofline goal (every Table 2 model at d_model 64), else every other step. None
    when there are none."""
    entries = [e for e in record["entries"] if "roofline_ratio" in e
               and (e.get("roofline_target") is not None) == goal]
    if not entries:
        return None
    header, names = name_column(entries)
    rows = [[name, _ms(e["ours_s"])] + _roofline_cells(e) for e, name in zip(entries, names)]
    title = ("How far each Table 2 model's training step is from its limits" if goal else
             "How far the other training steps are from their limits")
    return Table(title, [header] + LIMIT_COLUMNS[1:], rows,
                 note=limits_note(entries) + " " + SIZES_NOTE, data=entries)


def limits_note(entries: list[dict[str, Any]]) -> str:
    """What the limit columns of ``entries`` mean, by the count their record used
    (:mod:`sst_core.bench.roofline`: ``limit_method``)."""
    if any(e.get("limit_method") == "shapes" for e in entries):
        return ("GFLOP/s: flops of one training step (matrix products by FlopCounterMode, "
                "one per element of pointwise ops and reductions) per second; flop limit: "
                "the step's matrix products at the rates measured at their own shapes, the "
                "rest of its arithmetic at the large float32 matmul's rate; byte limit: the "
                "bytes the fast path moves (every op's inputs and outputs, the C loops' "
                "arrays once) at the copy bandwidth; bound: the larger limit; x limit: time "
                "/ that limit (goal, where shown: <= 5).")
    return ("This record predates the present count: its flop limit takes every flop at the "
            "large float32 matmul's rate, and its byte limit counts the torch reference "
            "path's tensors (every op's inputs and outputs with the C loops off), which the "
            "fast path does not move; x limit: time / the larger limit.")


def _roofline_cells(e: dict[str, Any]) -> list[str]:
    if "roofline_ratio" not in e:
        return ["", "", "", "", ""]
    ratio = "" if e["roofline_ratio"] is None else f"{e['roofline_ratio']:.1f}"
    if e.get("roofline_target") is not None:
        ratio += f" (<= {e['roofline_target']:g}: {e['roofline_status']})"
    return [f"{e['gflops_per_s'] or 0:.2f}", _ms(e["compute_s"]), _ms(e["memory_s"]),
            e["bound"], ratio]


def limit_rows(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows with the roofline goal (the Table 2 models at d_model 64): model, time,
    both limits, the bound, x limit, and whether the record profiled the step."""
    return [{"name": e["name"], "model": e["model"], "ours_s": e["ours_s"],
             "compute_s": e["compute_s"], "memory_s": e["memory_s"], "bound": e["bound"],
             "ratio": e["roofline_ratio"], "target": e["roofline_target"],
             "method": e.get("limit_method", "peak"), "profiled": "profile" in e}
            for e in record["entries"] if e.get("roofline_target") is not None
            and e.get("roofline_ratio") is not None]


def profile_table(record: dict[str, Any], top: int = 5, every: bool = False) -> Table | None:
    """For every goal row beyond its goal (x limit above the target) that the record
    profiled (``every``: every goal row it profiled): the operations with the most self
    time in one step, their share of it and their milliseconds. None when there are none
    (every model within its goal, or a record made before the profile)."""
    rows, data = [], []
    for e in record["entries"]:
        target, ratio = e.get("roofline_target"), e.get("roofline_ratio")
        if target is None or ratio is None or (ratio <= target and not every) \
                or "profile" not in e:
            continue
        for i, p in enumerate(e["profile"][:top]):
            rows.append([model_name(e["model"]) if i == 0 else "",
                         f"{ratio:.1f}" if i == 0 else "",
                         p["op"], f"{p['share']:.0%}", _ms(p["self_s"])])
            data.append({"name": e["name"], "model": e["model"], "ratio": ratio, **p})
    if not rows:
        return None
    return Table("Where a training step's time goes" + ("" if every else
                 ", for the models beyond 5x their limit"),
                 ["model", "x limit", "operation", "share", "ms"], rows,
                 note="one training step under torch.profiler (after one untimed step): the "
                 f"{top} operations with the most self time, and their share of the summed "
                 "self times; native ...: the C loops (their calls, timed as regions). The "
                 "profiler's own overhead makes these milliseconds larger than the step's.",
                 data=data)


def bench_tables(record: dict[str, Any]) -> list[Table]:
    """Every section of a record that has entries."""
    out = [section_table(record, *s) for s in SECTIONS]
    return [t for t in out if t is not None]


def stacking_bound(record: dict[str, Any]) -> dict[str, Any] | None:
    """Numbers for the stacked rows' ceiling column (one model on all K b sequences at
    once): K, b, the ceiling ratios' range, how many models' ceilings are above the
    target, and the GFLOP/s that one-model step reaches (the stacked step's flops, the
    same arithmetic, over its time) against the machine's matmul peak: the ceiling bounds
    stacking with these kernels, not what the CPU allows. None for a record made before
    the ceiling was measured."""
    rows = [e for e in record["entries"] if "ceiling_ratio" in e]
    if not rows:
        return None
    rates = [e["flops"] / e["one_model_s"] / 1e9 for e in rows if e.get("flops")]
    peak = (record.get("hardware", {}).get("roofline") or {}).get("matmul_flops_per_s")
    return {"K": rows[0]["sizes"]["models"], "batch": rows[0]["sizes"]["batch"],
            "models": len(rows), "target": rows[0]["target"],
            "ceiling_min": min(e["ceiling_ratio"] for e in rows),
            "ceiling_max": max(e["ceiling_ratio"] for e in rows),
            "above_target": sum(e["ceiling_ratio"] > e["target"] for e in rows),
            "one_model_gflops_min": min(rates) if rates else None,
            "one_model_gflops_max": max(rates) if rates else None,
            "matmul_peak_gflops": None if peak is None else peak / 1e9}


def other_machine(records: list[dict[str, Any]], record: dict[str, Any]
                  ) -> dict[str, Any] | None:
    """The newest full record (:func:`latest`) made on the same kind of device as
    ``record`` but another CPU model, or None."""
    device = str(record["device"]).split(":")[0]
    model = record["hardware"]["cpu_model"]
    return latest([r for r in records if r["hardware"]["cpu_model"] != model], device)


def across_machines(record: dict[str, Any], other: dict[str, Any],
                    spread: float = 1.5) -> Table:
    """The rows that both records time, where ours takes more than ``spread`` times as long
    on one machine as on the other (time on ``record``'s machine / on ``other``'s), and in
    the note the median of that ratio over every shared row."""
    theirs = {e["name"]: e for e in other["entries"]}
    shared = [(e, theirs[e["name"]]) for e in record["entries"] if e["name"] in theirs]
    ratios = [e["ours_s"] / o["ours_s"] for e, o in shared]
    here, there = record["hardware"]["cpu_model"], other["hardware"]["cpu_model"]
    kept = [(e, o, r) for (e, o), r in zip(shared, ratios) if not 1 / spread <= r <= spread]
    header, names = name_column([e for e, _, _ in kept])
    rows = [[name, f"{r:.2f}", _ms(e["ours_s"]), _ms(o["ours_s"])]
            for (e, o, r), name in zip(kept, names)]
    data = [{"name": e["name"], "ours_s": e["ours_s"], "other_s": o["ours_s"], "ratio": r}
            for e, o, r in kept]
    overall = (f"over all {len(shared)} shared rows the median ratio is "
               f"{statistics.median(ratios):.2f}" if ratios else "the records share no row")
    note = (f"ms on {here} (record of {record['created_utc'][:10]}) and on {there} (record "
            f"of {other['created_utc'][:10]}); ratio = the first / the second. Shown: the rows "
            f"outside {1 / spread:.2f}-{spread:g}; {overall}.")
    return Table(f"The same rows on two machines: {here} against {there}",
                 [header, "ratio", f"ms, {here}", f"ms, {there}"], rows,
                 note=note, data=data)


def targets(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The entries that have a target: name (the code name), label (for readers, with the
    sizes that tell it apart: :func:`short_labels`), ratio, target, status."""
    entries = [e for e in record["entries"] if e["target"] is not None]
    return [{"name": e["name"], "label": label, "ratio": e["ratio"], "target": e["target"],
             "status": e["status"]} for e, label in zip(entries, short_labels(entries))]


def gpu_check_table(record: dict[str, Any]) -> Table:
    rows = [[c["check"], f"{c['max_abs_diff_output']:.2e}", f"{c['max_abs_diff_grad']:.2e}",
             "yes" if c["ok"] else "NO"] for c in record["checks"]]
    return Table(f"CUDA against CPU ({record['hardware']['device_name']}, "
                 f"{record['created_utc']})",
                 ["check", "max abs diff, output", "max abs diff, gradients", "within tolerance"],
                 rows, note=f"tolerance: |cuda - cpu| <= {record['rtol']:g} max|cpu| + "
                 f"{record['atol']:g}", data=record["checks"])


def targets_table(record: dict[str, Any]) -> Table:
    """Every entry of ``record`` that has a target, in one table: its name for readers
    (:func:`row_label`), the ratio of our time to the reference's and the target with its
    status, and the two times."""
    entries = [e for e in record["entries"] if e.get("target") is not None]
    header, names = name_column(entries)
    rows = [[name, f"{e['ratio']:.2f}", f"<= {e['target']:.3g}: {e['status']}",
             _ms(e["ours_s"]), _ms(e["anchor_s"])] for e, name in zip(entries, names)]
    return Table(f"Every comparison with a target ({record['device']})",
                 [header] + TARGET_COLUMNS[1:], rows,
                 note="ratio = ours / reference. " + SIZES_NOTE, data=targets(record))


TARGET_COLUMNS = ["benchmark", "ratio", "target", "ours ms", "ref ms"]


SWEEP_BEFORE_AFTER = "sweep_standard_before_after"  # the entry :func:`sweep_throughput` reads


def _and(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if len(names) < 2:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def round_ratios(entry: dict[str, Any]) -> list[float]:
    """Per round of a before / after entry, after's wall time over before's."""
    return [a / b for a, b in zip(entry["ours_samples_s"], entry["anchor_samples_s"])]


def stack_choice_table(choice: dict[tuple[str, int | None], dict[str, Any]],
                       standard_width: int) -> Table:
    """What the sweep decides from now (:func:`sst_core.sweep.stacking.newest_rows`): per
    model and d_model, the newest stack-or-not row's ratio, whether the sweep stacks the
    model there (ratio below 1) and when the row was made; d_model "—" for a row that names
    no width (it holds at every width)."""
    rows, data = [], []
    for (model, width), c in sorted(choice.items(), key=lambda kv: (
            kv[0][1] not in (None, standard_width), kv[0][1] or 0, model_name(kv[0][0]))):
        stacks = c["ratio"] < 1
        rows.append([model_name(model), "—" if width is None else str(width),
                     f"{c['ratio']:.2f}", "stacks" if stacks else "one run at a time",
                     str(c["created_utc"])[:10]])
        data.append({"model": model, "d_model": width, "ratio": c["ratio"], "stacks": stacks,
                     "created_utc": c["created_utc"]})
    return Table("Where the sweep stacks now", ["model", "d_model", "ratio", "the sweep",
                                                  "row made"], rows, data=data)


def paper_table2_counts() -> dict[str, Any]:
    """The size of Table 2's grid at the paper profile, from the code's registries: the
    models, groups, depths, state sizes per model (a width for the RNNs), schedules,
    learning rates and seeds, and the runs in all (``t2_*``; a count that differs between
    models reads as its values joined by "or")."""
    from sst_core.experiments import paper1
    from sst_core.spec.profiles import get_profile

    P = get_profile("paper")
    sizes = sorted({len(paper1.d_state_grid(P, m)) for m in paper1.TABLE2_MODELS})
    return {"t2_models": len(paper1.TABLE2_MODELS), "t2_groups": len(paper1.TABLE2_GROUPS),
            "t2_depths": len(P.track_depths), "t2_sizes": " or ".join(map(str, sizes)),
            "t2_schedules": len(P.track_schedules), "t2_lrs": len(P.track_lrs),
            "t2_seeds": len(P.track_seeds), "t2_runs": f"{len(paper1.table2_grid(P)):,}"}


def sweep_throughput(records: list[dict[str, Any]], device: str = "cpu"
                     ) -> tuple[Table, dict[str, Any]] | None:
    """The sweep's runs per hour before and after its per-model stacking choice and the
    flushing of denormals: the newest ``full``-size entry ``sweep_standard_before_after``
    (:func:`sst_core.bench.cases_sweep.sweep_standard_before_after`) in the records of
    ``device``, of a whole benchmark or of ``sst bench --only``; None without one. The
    table has a column per side; the dict its numbers (``after_over_before``: the ratio of
    the median wall times, ``rounds``, ``runs``, ``width``: the sample's d_model, ``load``:
    the load average at the record's start, ``alone``: the sample's models trained one run
    at a time after, by their papers' names, and ``alone_keys`` their (model, d_model))."""
    from sst_core.spec.names import model_name
    from sst_core.spec.profiles import get_profile

    found = [(r, e) for r in records if str(r["device"]).split(":")[0] == device
             and r["settings"]["size"] == "full"
             for e in r["entries"] if e["name"] == SWEEP_BEFORE_AFTER]
    if not found:
        return None
    record, e = found[-1]
    # the sample's width (records before it was stored: the standard grid's, as sampled)
    width = e["sizes"].get("d_model", get_profile("standard").track_d_model)
    alone_keys = sorted({(m, d) for m, d in (e.get("unstacked_models") or []) if d == width})
    alone = sorted({model_name(m) for m, _ in alone_keys})
    models = e["sizes"].get("models", "?")
    rows = [["models trained alone", f"0 of {models}", f"{len(alone)} of {models}"],
            ["denormals", "kept", "flushed"],
            ["rounds, min", ", ".join(f"{t / 60:.1f}" for t in e["anchor_samples_s"]),
             ", ".join(f"{t / 60:.1f}" for t in e["ours_samples_s"])],
            ["median, min", f"{e['anchor_s'] / 60:.1f}", f"{e['ours_s'] / 60:.1f}"],
            ["runs per hour", f"{e['anchor_runs_per_hour']:.1f}", f"{e['runs_per_hour']:.1f}"]]
    note = (f"{e['sizes']['runs']} runs: {e.get('sample', '')}; K = {e['sizes']['stack']} "
            f"per stack, {e['repeat']} round(s) of before then after, each a fresh sweep.")
    load = record["hardware"].get("load_avg_1m")
    numbers = {"after_over_before": e["ours_s"] / e["anchor_s"], "rounds": e["repeat"],
               "width": width,
               "alone_keys": alone_keys,
               "runs": e["sizes"]["runs"], "load": load, "alone": alone}
    return (Table("The sweep before and after: runs per hour of a fixed standard sample",
                  ["", "before", "after"], rows, note=note, data=[e]), numbers)


# the glue name (``bench_<key>``) of each section's table in the chapter, in SECTIONS' order
SECTION_KEYS = ("dense", "diag_scan", "scan_paths", "selective", "selective_vs", "stacked", "stack_or_not",
                "s4d_kernel", "s4d_classifier", "semi_affine", "throughput")
# the one row of a CUDA table while no check or benchmark has run on CUDA
NO_CUDA = "not run: no CUDA record stored"
MACHINE_SPREAD = 1.5  # the chapter's table of two machines keeps the rows outside 1/x to x
PROVENANCE_FIELDS = ("machine", "torch", "CPU scan", "size and rounds", "load at start",
                     "commit", "made", "command", "wall time")


def provenance_fields(record: dict[str, Any]) -> list[str]:
    """:func:`provenance` as the values of :data:`PROVENANCE_FIELDS`."""
    hw, st = record["hardware"], record["settings"]
    load = hw.get("load_avg_1m")
    where = (f"{hw['cpu_model']}, {hw['cpu_count']} logical cores" if hw["device"] == "cpu"
             else f"{hw['device_name']} (host: {hw['cpu_model']}, {hw['cpu_count']} cores)")
    return [where, f"{hw['torch_version']}, {hw['torch_threads']} threads",
            hw["scan_loops"].split(":")[0] if "scan_loops" in hw else "—",
            f"{st['size']}, median of {st['repeat']} interleaved rounds",
            "—" if load is None else f"{load:.2f}", _commit(record["git_commit"]),
            record["created_utc"], f"`{record['command']}`", f"{record['wall_time_s']:.0f} s"]


def chapter_items(records: list[dict[str, Any]], checks: list[dict[str, Any]]
                  ) -> dict[str, Any]:
    """What the benchmark chapter glues, by name, from the benchmark ``records`` and the GPU
    checks ``checks`` (:func:`sst_core.bench.records.load_records`): the grid of each
    section of the newest full CPU record (``bench_<key>``, :data:`SECTION_KEYS`), of the
    per-step profile of every goal row (``bench_profile``), of the training steps' limits
    (``bench_limits``: the goal rows, ``bench_limits_other``: the rest, :func:`limits_table`),
    of the rows that differ on
    another CPU model (``bench_machines``), of the newest GPU check and the newest CUDA
    record's comparisons with a target (``bench_cuda_check``, ``bench_cuda``), and of the
    records' provenance (``bench_provenance``: a column per record shown); and the numbers
    the prose cites (targets met, the stacking ceiling, the sweep's stacking choice, the
    limits, the two machines). A table the records cannot fill is glued with its header
    only (the CUDA tables with one row, :data:`NO_CUDA`), a number as "n/a"."""
    cpu, cuda = latest(records, "cpu"), latest(records, "cuda")
    other = other_machine(records, cpu) if cpu is not None else None
    sections = {s[0]: section_table(cpu, *s) if cpu is not None else None for s in SECTIONS}
    anchored = TARGET_COLUMNS
    out: dict[str, Any] = {f"bench_{key}": (t or Table("", anchored, [])).grid()
                           for key, t in zip(SECTION_KEYS, sections.values())}
    for key, goal in (("bench_limits", True), ("bench_limits_other", False)):
        limits = limits_table(cpu, goal) if cpu is not None else None
        out[key] = (limits or Table("", LIMIT_COLUMNS, [])).grid()
    profile = profile_table(cpu, top=3, every=True) if cpu is not None else None
    out["bench_profile"] = (profile or Table("", ["model", "x limit", "operation", "share",
                                                  "ms"], [])).grid()
    machines = across_machines(cpu, other, MACHINE_SPREAD) if other is not None else None
    out["bench_machines"] = (machines or Table("", ["benchmark", "ratio", "ms", "ms"],
                                               [])).grid()
    # no record on CUDA yet: one row that says so, rather than a header alone
    check_cols = ["check", "max abs diff, output", "max abs diff, gradients",
                  "within tolerance"]
    out["bench_cuda_check"] = (gpu_check_table(checks[-1]) if checks else Table(
        "", check_cols, [[NO_CUDA] + ["—"] * (len(check_cols) - 1)])).grid()
    out["bench_cuda"] = (targets_table(cuda) if cuda is not None else Table(
        "", anchored, [[NO_CUDA] + ["—"] * (len(anchored) - 1)])).grid()
    shown = [(label, r) for label, r in (("newest CPU record", cpu), ("other CPU model", other),
                                         ("newest CUDA record", cuda)) if r is not None]
    out["bench_provenance"] = Table("", [""] + [label for label, _ in shown], [
        [field] + [provenance_fields(r)[i] for _, r in shown]
        for i, field in enumerate(PROVENANCE_FIELDS)]).grid()
    na = "n/a"
    goals = targets(cpu) if cpu is not None else []
    out |= {"bench_met": sum(r["status"] == "meets" for r in goals), "bench_goals": len(goals),
            "bench_missed": "; ".join(r["label"] for r in goals if r["status"] == "misses")
            or "none"}
    side = side_goals(cpu) if cpu is not None else {}
    out |= {f"bench_{k}": side.get(k, na) for k in ("memory_met", "memory_goals",
                                                    "bandwidth_met", "bandwidth_goals")}
    out["bench_bandwidth_goal"] = f"{BANDWIDTH_GOAL:.0%}"
    bound = stacking_bound(cpu) if cpu is not None else None
    out |= {"stack_K": na, "stack_b": na, "stack_ceiling": na, "stack_above": na,
            "stack_models": na, "stack_gflops": na, "stack_peak": na} if bound is None else {
        "stack_K": bound["K"], "stack_b": bound["batch"],
        "stack_ceiling": f"{bound['ceiling_min']:.2f} to {bound['ceiling_max']:.2f}",
        "stack_above": bound["above_target"], "stack_models": bound["models"],
        "stack_gflops": na if bound["one_model_gflops_min"] is None else
        f"{bound['one_model_gflops_min']:.0f} to {bound['one_model_gflops_max']:.0f}",
        "stack_peak": na if bound["matmul_peak_gflops"] is None
        else f"{bound['matmul_peak_gflops']:.0f}"}
    from sst_core.spec.names import model_name
    from sst_core.spec.profiles import get_profile
    from sst_core.sweep.stacking import newest_rows

    # what the sweep decides from now: the newest row per model and width, of a whole
    # benchmark or of a few of its rows (`sst bench --only ...`)
    choice = newest_rows([(str(r.get("created_utc", "")), r) for r in records], "cpu")
    standard_width = get_profile("standard").track_d_model

    def label(key: tuple[str, int | None]) -> str:  # a row at another width says its width
        name = model_name(key[0])
        return name if key[1] in (None, standard_width) else f"{name} at d_model {key[1]}"
    out |= {"stack_yes": ", ".join(label(k) for k, c in choice.items() if c["ratio"] < 1)
            or na,
            "stack_no": ", ".join(label(k) for k, c in choice.items() if c["ratio"] >= 1)
            or "none",
            "bench_stack_choice": stack_choice_table(choice, standard_width).grid()}
    sweep = sweep_throughput(records)
    out["bench_sweep"] = (sweep[0] if sweep else Table("", ["", "before", "after"], [])).grid()
    out |= {"sweep_ratio": na, "sweep_rounds": na, "sweep_runs": na, "sweep_load": na,
            "sweep_alone": na} if sweep is None else {
        "sweep_ratio": f"{sweep[1]['after_over_before']:.2f}",
        "sweep_rounds": f"{sweep[1]['rounds']} round" + ("s" if sweep[1]["rounds"] > 1 else ""),
        "sweep_runs": sweep[1]["runs"],
        "sweep_load": na if sweep[1]["load"] is None else f"{sweep[1]['load']:.2f}",
        "sweep_alone": _and(sweep[1]["alone"]) or "no model"}
    # what the rows of the sample's width promised for the models it trains alone
    promised = [choice[k]["ratio"] for k in (sweep[1]["alone_keys"] if sweep else ())
                if k in choice]
    out["sweep_alone_rows"] = na if not promised else (
        f"{min(promised):.2f} to {max(promised):.2f}" if len(promised) > 1
        else f"{promised[0]:.2f}")
    out["sweep_alone_gain"] = na if not promised else f"{1 - 1 / max(promised):.0%}"
    out["sweep_width"] = na if sweep is None else sweep[1]["width"]
    ratios = round_ratios(sweep[0].data[0]) if sweep else []
    out |= {"sweep_round_slower": sum(r > 1 for r in ratios) if ratios else na,
            "sweep_round_faster": sum(r < 1 for r in ratios) if ratios else na,
            "sweep_round_range": na if not ratios else (
                f"{min(ratios):.3f} to {max(ratios):.3f}" if len(ratios) > 1
                else f"{ratios[0]:.3f}")}
    rows = [r for r in (limit_rows(cpu) if cpu is not None else []) if r["method"] == "shapes"]
    out |= {"limit_within": sum(r["ratio"] <= r["target"] for r in rows),
            "limit_rows": len(rows),
            "limit_range": na if not rows else
            f"{min(r['ratio'] for r in rows):.1f} to {max(r['ratio'] for r in rows):.1f}",
            "limit_compute_bound": sum(r["bound"] == "compute" for r in rows)}
    ratios = [] if other is None else [e["ours_s"] / o["ours_s"] for e in cpu["entries"]
                                       for o in other["entries"] if o["name"] == e["name"]]
    out |= {"machine_here": cpu["hardware"]["cpu_model"] if cpu is not None else na,
            "machine_there": other["hardware"]["cpu_model"] if other is not None else na,
            "machine_shared": len(ratios), "machine_spread": f"{1 / MACHINE_SPREAD:.2f} to "
                                                              f"{MACHINE_SPREAD:g}",
            "machine_median": f"{statistics.median(ratios):.2f}" if ratios else na}
    return out
