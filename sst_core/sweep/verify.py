"""``sst verify-stale``: recompute a sample of a sweep's stale records under the current
code and, when every metric agrees, record that their code gives the same results
(:mod:`sst_core.store.equivalence`), so that the rest need not be computed again.

Stale records are grouped by the code hash they hold (one group per earlier version of
the code). For each group, the runs checked are the ones named (``run_ids``) or else the
``sample`` cheapest ``ok`` runs of the group (their stored compute), so that a check
costs minutes; each is computed again alone, in a scratch results folder (the stored
record is never touched), with the torch thread count its record names. A group is
*verified* when every run checked agrees (:func:`~sst_core.store.equivalence.compare_metrics`;
the first run that disagrees ends the group's check);
then, with ``write=True``, one ledger entry maps its hash to the current one, listing
the runs checked and the largest difference seen. A group with any disagreement gets no
entry: its records stay stale, and ``sst sweep --retry-stale`` computes them again.

A stacked tracking run is computed alone here, so its ``stacked`` metrics differ from the
record's and such a group cannot be verified this way: recompute it.

``--same-build`` (:func:`verify_same_build`) needs no recomputation, for one kind of change
only: the block of the selective scan's C source compiled for targets without AVX-512
(:data:`~sst_core.ops.native_selective.NO_AVX512_BLOCK`). A group is shown to hold when

1. its code, computed from the current code with that block taken out
   (:func:`~sst_core.ops.native_selective.avx512_source`), has the hash its records hold,
   or the hash that a ledger entry from theirs leads to: so that block is the only change
   since; and
2. every record was made on a CPU with AVX-512 (its ``host``), where the block is not
   compiled and the library is the one built before it; a record from before records
   named their CPU counts only if it is older than every record of the results folder
   made on a CPU without AVX-512 (the CPU cannot be read from it, so that is the
   evidence, and the entry says how many rest on it).

The entry then says so (``"evidence": "same build"``) instead of listing recomputed runs.
The records checked and counted are all those of the experiment and profile that hold a
stale group's code hash (the entry makes them all current), not only the sweep's.
"""
from __future__ import annotations

import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

from sst_core.experiments import runs
from sst_core.experiments.registry import code_hash, is_stale_record, sweep_configs
from sst_core.spec.configs import config_dict, config_hash
from sst_core.spec.profiles import get_profile
from sst_core.store import equivalence
from sst_core.store.provenance import git_commit, record_simd
from sst_core.store.records import (
    artifact_path,
    iter_records,
    load_record,
    project_root,
    record_path,
    results_dir,
    results_dir_at,
    run_compute_s,
)

__all__ = ["Check", "Group", "stale_groups", "verify_stale", "groups_markdown", "SameBuild",
           "verify_same_build", "same_build_markdown", "AVX512"]

AVX512 = "avx512f"  # the CPU flag (sst_core.store.provenance's host "simd") that drops the block


@dataclass
class Check:
    run_id: str
    compute_s: float  # the stored record's compute
    problems: list[str] = field(default_factory=list)  # empty: every metric agrees
    largest_difference: float = 0.0
    recompute_s: float = 0.0


@dataclass
class Group:
    experiment: str
    made_by: str  # the code hash the group's records hold
    current: str
    run_ids: list[str]  # every stale record of the group
    checks: list[Check] = field(default_factory=list)
    ledger: Path | None = None  # where the entry was written

    @property
    def verified(self) -> bool:
        return bool(self.checks) and not any(c.problems for c in self.checks)


def stale_groups(sweep: str, profile: str, root: Path | None = None
                 ) -> tuple[dict[str, Any], dict[tuple[str, str], list[dict[str, Any]]]]:
    """The sweep's configs by run id, and its stale records with a code hash, grouped by
    (experiment, that hash)."""
    P = get_profile(profile)
    cfgs = {config_hash(c): c for c in sweep_configs(sweep, P)}
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for cfg in cfgs.values():
        path = record_path(cfg, root)
        if not path.exists():
            continue
        record = load_record(path)
        if record.get("code_hash") is not None and is_stale_record(record):
            groups[record["experiment"], record["code_hash"]].append(record)
    return cfgs, dict(groups)


def verify_stale(sweep: str, profile: str, *, sample: int = 2, run_ids: Sequence[str] = (),
                 made_by: str | None = None, write: bool = True, root: Path | None = None,
                 report: Callable[[str], None] = lambda msg: None) -> list[Group]:
    """Check the stale records of ``sweep`` under ``profile`` (see the module docstring);
    ``made_by``: only the group of that code hash. Returns the groups checked."""
    if sample < 1 and not run_ids:
        raise ValueError(f"sample={sample!r}: check at least one run (sample >= 1 or run ids)")
    cfgs, groups = stale_groups(sweep, profile, root)
    if made_by is not None:
        if all(h != made_by for _, h in groups):
            raise ValueError(f"no stale record of {sweep} ({profile}) holds code hash {made_by!r}; "
                             f"the stale ones hold: {', '.join(sorted({h for _, h in groups})) or 'none'}")
        groups = {k: v for k, v in groups.items() if k[1] == made_by}
    unknown = [r for r in run_ids if not any(rec["run_id"] == r for g in groups.values() for rec in g)]
    if unknown:
        raise ValueError(f"run id(s) {', '.join(unknown)} name no stale record of {sweep} "
                         f"({profile})" + (f" made by {made_by}" if made_by else ""))
    if run_ids:  # only the groups of the runs named, never a sample of the others
        groups = {k: v for k, v in groups.items() if any(r["run_id"] in run_ids for r in v)}
    out = []
    for (experiment, old), records in sorted(groups.items()):
        current = code_hash(experiment, records[0]["config"])
        group = Group(experiment, old, current, sorted(r["run_id"] for r in records))
        chosen = ([r for r in records if r["run_id"] in run_ids] if run_ids else
                  sorted((r for r in records if r["status"] == "ok"), key=run_compute_s)[:sample])
        for record in chosen:
            report(f"{experiment}: recomputing {record['run_id']} (made by {old}; stored "
                   f"compute {run_compute_s(record):.0f} s)")
            check = _check(cfgs[record["run_id"]], record, current, root or results_dir())
            group.checks.append(check)
            report(f"{experiment}: {record['run_id']}: " + (
                f"agrees (largest difference {check.largest_difference:.2g})"
                if not check.problems else f"{len(check.problems)} difference(s): "
                + "; ".join(check.problems[:3])))
            if check.problems:  # the group stays stale whatever the other runs give
                break
        if group.verified and write:
            entry = _entry(group, sweep, profile, sample, run_ids)
            group.ledger = equivalence.add_entry(entry, root)
        out.append(group)
    return out


def _check(cfg: Any, record: dict[str, Any], current: str, stored: Path) -> Check:
    import torch  # (only when a run is computed: the CLI stays quick to start)

    check = Check(record["run_id"], run_compute_s(record))
    threads = (record.get("host") or {}).get("torch_threads")
    before = torch.get_num_threads()
    if threads:
        torch.set_num_threads(int(threads))
    start = time.perf_counter()
    try:
        # the scratch folder is the results folder of the whole recompute, so that nothing
        # it writes (a record, weights, an LRA run's resume state) lands beside the stored
        # records
        with tempfile.TemporaryDirectory(prefix="sst-verify-") as scratch, \
                results_dir_at(scratch):
            stage_tracker(cfg, stored, Path(scratch))
            new = runs.run(cfg, root=Path(scratch))
    finally:
        torch.set_num_threads(before)
    check.recompute_s = time.perf_counter() - start
    if new.get("code_hash") != current:
        check.problems.append(f"the recomputed run holds code hash {new.get('code_hash')!r}, "
                              f"not the current {current!r} (source edited meanwhile?)")
    if new["config"] != config_dict(cfg) or record["config"] != config_dict(cfg):
        check.problems.append("the config differs from the stored record's")
    if new["status"] != record["status"]:
        check.problems.append(f"status {record['status']} -> {new['status']} ({new.get('reason')})")
    problems, check.largest_difference = equivalence.compare_metrics(
        record["metrics"], new["metrics"])
    check.problems += problems
    return check


def stage_tracker(cfg: Any, stored: Path, scratch: Path) -> None:
    """An analysis (a config with a ``run``: the trained tracker it reads) recomputed in
    ``scratch`` reads that tracker's stored record and weights: copied there from the
    results folder ``stored`` (copies, so the recompute cannot touch the originals). A
    training run has nothing to stage; a tracker that is not stored is left for the
    analysis to name (``TrackerMissing``)."""
    import shutil

    run = getattr(cfg, "run", None)
    if run is None:
        return
    for src, dst in ((record_path(run, stored), record_path(run, scratch)),
                     (artifact_path(run, ".pt", stored), artifact_path(run, ".pt", scratch))):
        if src.is_file():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)


def _entry(group: Group, sweep: str, profile: str, sample: int, run_ids: Sequence[str]
           ) -> dict[str, Any]:
    command = f"sst verify-stale {sweep} --profile {profile} --made-by {group.made_by} " + (
        " ".join(f"--run {r}" for r in run_ids) if run_ids else f"--sample {sample}")
    return {
        "experiment": group.experiment, "from": group.made_by, "to": group.current,
        "profile": profile, "tolerance": equivalence.TOLERANCE,
        "runs": [{"run_id": c.run_id, "compute_s": round(c.compute_s, 1),
                  "largest_difference": c.largest_difference} for c in group.checks],
        "records": len(group.run_ids), **_made_by_command(command),
    }


def _made_by_command(command: str) -> dict[str, str]:
    """What every ledger entry says of how it was written: the command, the commit, when."""
    return {"command": command, "git_commit": git_commit(project_root() or Path.cwd()),
            "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds")}


def groups_markdown(groups: list[Group]) -> str:
    if not groups:
        return "no stale records with a code hash: nothing to verify"
    lines = ["| experiment | made by | current | stale records | runs checked | agree | "
             "largest difference | verdict |", "|---|---|---|---:|---|---|---:|---|"]
    for g in groups:
        agree = sum(not c.problems for c in g.checks)
        largest = max((c.largest_difference for c in g.checks), default=0.0)
        verdict = ("verified: recorded in " + str(g.ledger) if g.ledger else
                   "verified (not written)" if g.verified else "stale: recompute them")
        lines.append(f"| {g.experiment} | {g.made_by} | {g.current} | {len(g.run_ids)} | "
                     f"{', '.join(c.run_id for c in g.checks)} | {agree} of {len(g.checks)} | "
                     f"{largest:.2g} | {verdict} |")
    for g in groups:
        for c in g.checks:
            for p in c.problems:
                lines.append(f"- {g.experiment} {c.run_id}: {p}")
    return "\n".join(lines)


# -- the same build ---------------------------------------------------------------------------

@dataclass
class SameBuild:
    experiment: str
    made_by: str  # the code hash the group's records hold
    current: str
    run_ids: list[str]
    before: str  # the current code's hash with the block for targets without AVX-512 taken out
    via: dict[str, Any] | None = None  # the ledger entry made_by -> before, if not equal
    hosts: Counter[str] = field(default_factory=Counter)  # AVX512 / "unknown" -> records
    problems: list[str] = field(default_factory=list)
    ledger: Path | None = None

    @property
    def verified(self) -> bool:
        return not self.problems


def first_without_avx512(root: Path | None = None) -> str | None:
    """The creation time (ISO) of the oldest record under ``root`` (every profile and
    experiment) made on a CPU that names its flags without AVX-512; None if there is none."""
    from sst_core.experiments.registry import EXPERIMENTS
    from sst_core.spec.profiles import PROFILES

    times = [r["created_utc"] for prof in PROFILES for exp in EXPERIMENTS
             for r in iter_records(exp, prof, root)
             if r.get("created_utc") and (f := record_simd(r)) is not None and AVX512 not in f]
    return min(times, key=datetime.fromisoformat) if times else None


def verify_same_build(sweep: str, profile: str, *, write: bool = True,
                      root: Path | None = None) -> list[SameBuild]:
    """Check the stale records of ``sweep`` under ``profile`` for the one change that an
    AVX-512 CPU does not compile (see the module docstring); with ``write``, one ledger
    entry per group that holds. Returns the groups."""
    from sst_core.ops import native_selective

    contents = {native_selective.CODE_FILE_NODE:
                native_selective.avx512_source(native_selective.SOURCE.read_bytes())}
    _, groups = stale_groups(sweep, profile, root)
    cutoff = first_without_avx512(root)
    out = []
    by_hash: dict[str, dict[str, list[dict[str, Any]]]] = {}  # experiment -> hash -> records
    for (experiment, old), records in sorted(groups.items()):
        if experiment not in by_hash:
            by_hash[experiment] = defaultdict(list)
            for r in iter_records(experiment, profile, root):
                by_hash[experiment][r.get("code_hash")].append(r)
        # the entry will count every record of this hash, not only the sweep's: check them all
        records = by_hash[experiment][old]
        config = records[0]["config"]
        group = SameBuild(experiment, old, code_hash(experiment, config),
                          sorted(r["run_id"] for r in records),
                          code_hash(experiment, config, contents=contents))
        if group.before != old:
            group.via = next((e for e in equivalence.load_ledger(root)
                              if e["experiment"] == experiment and e["profile"] == profile
                              and e["from"] == old and e["to"] == group.before), None)
            if group.via is None:
                group.problems.append(
                    f"the current code without the block hashes to {group.before}, not "
                    f"{old} (nor does a ledger entry lead there): more than the block changed")
        for r in records:
            flags = record_simd(r)
            if flags is None:
                made = r.get("created_utc")
                if cutoff is None or (made and datetime.fromisoformat(made)
                                      < datetime.fromisoformat(cutoff)):
                    group.hosts["unknown"] += 1
                else:
                    group.problems.append(f"{r['run_id']}: no CPU named, made {made}, not "
                                          f"before the first record without AVX-512 ({cutoff})")
            elif AVX512 in flags:
                group.hosts[AVX512] += 1
            else:
                group.problems.append(f"{r['run_id']}: made on a CPU without AVX-512 "
                                      f"({', '.join(flags) or 'no flags named'})")
        if group.verified and write:
            entry = _same_build_entry(group, sweep, profile, cutoff)
            group.ledger = equivalence.add_entry(entry, root)
        out.append(group)
    return out


def _same_build_entry(group: SameBuild, sweep: str, profile: str, cutoff: str | None
                      ) -> dict[str, Any]:
    return {
        "experiment": group.experiment, "from": group.made_by, "to": group.current,
        "profile": profile, "evidence": "same build", "before": group.before,
        "via": None if group.via is None else {k: group.via.get(k) for k in (
            "from", "to", "command", "created_utc")},
        "hosts": dict(sorted(group.hosts.items())), "unknown_host_before": cutoff,
        "runs": [], "records": len(group.run_ids),
        **_made_by_command(f"sst verify-stale {sweep} --profile {profile} --same-build"),
    }


def same_build_markdown(groups: list[SameBuild]) -> str:
    if not groups:
        return "no stale records with a code hash: nothing to verify"
    lines = ["| experiment | made by | current | stale records | code without the block | "
             "CPUs | verdict |", "|---|---|---|---:|---|---|---|"]
    for g in groups:
        code = g.before + ("" if g.via is None else f" (ledger: {g.made_by} -> {g.before})")
        hosts = ", ".join(f"{k} {v}" for k, v in sorted(g.hosts.items()))
        verdict = ("same build: recorded in " + str(g.ledger) if g.ledger else
                   "same build (not written)" if g.verified else "stale: recompute them")
        lines.append(f"| {g.experiment} | {g.made_by} | {g.current} | {len(g.run_ids)} | "
                     f"{code} | {hosts} | {verdict} |")
    for g in groups:
        for p in g.problems[:5]:
            lines.append(f"- {g.experiment} {g.made_by}: {p}")
        if len(g.problems) > 5:
            lines.append(f"- {g.experiment} {g.made_by}: {len(g.problems) - 5} more")
    return "\n".join(lines)
