"""Table of the chapter "Groups and state tracking"."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from sst_core.experiments import paper1
from sst_core.groups import Group
from sst_core.reports import Table, stored_record
from sst_core.spec.profiles import Profile


def groups_table(P: Profile, root: Path | None = None) -> Table:
    """Order sensitivity of C2, C6 and S3 under both token vocabularies: the measurements
    first, then each group's order and vocabulary (which a chapter may leave out with
    ``split(2, 6)[0]``, having shown them already)."""
    cols = ["group", "tokens", "abelian", "non-commuting pairs", "words changed by one swap",
            "TV from uniform at the end", "order", "vocabulary"]
    rows, data, ids = [], [], []
    for cfg in paper1.order_sensitivity_grid(P):
        rec = stored_record(cfg, root)
        if rec is None or rec["status"] != "ok":
            status = "missing" if rec is None else f"failed: {rec['reason']}"
            rows.append([cfg.group, cfg.tokens] + [status] + [""] * (len(cols) - 3))
            data.append({"group": cfg.group, "tokens": cfg.tokens,
                         "status": "missing" if rec is None else "failed",
                         "reason": None if rec is None else rec["reason"]})
            continue
        m = rec["metrics"]
        rows.append([cfg.group, cfg.tokens, "yes" if m["abelian"] else "no",
                     m["noncommuting_pairs"], m["swap_changes"], m["tv_uniform"][-1],
                     m["order"], " ".join(m["vocabulary"])])
        data.append({"group": cfg.group, "tokens": cfg.tokens, "status": "ok", "reason": None,
                     "order": m["order"], "abelian": m["abelian"],
                     "vocabulary": list(m["vocabulary"]),
                     "noncommuting_pairs": m["noncommuting_pairs"],
                     "swap_changes": m["swap_changes"], "tv_uniform_end": m["tv_uniform"][-1]})
        ids.append(rec["run_id"])
    note = (f"{P.n_words} words of length {P.word_length} per row. Swap share and TV are "
            "estimated from the sampled words; the non-commuting share is exact.")
    return Table("Order sensitivity of the chapter's groups", cols, rows, note, ids, data)


def word_table(group: Group, tokens: Sequence[int], states: Sequence[int]) -> Table:
    """One word of ``group`` (element indices ``tokens``) and its running products
    (``states``, as :func:`sst_core.tasks.tracking.sample` returns them), one row per
    position: the token read and the state after it, by the elements' names."""
    if len(tokens) != len(states):
        raise ValueError(f"{len(tokens)} tokens but {len(states)} states: a word has one "
                         "state per token")
    rows = [[t + 1, f"`{group.elements[x]}`", f"`{group.elements[g]}`"]
            for t, (x, g) in enumerate(zip(tokens, states))]
    data = [{"t": t + 1, "token": group.elements[x], "state": group.elements[g]}
            for t, (x, g) in enumerate(zip(tokens, states))]
    return Table(f"A word of {group.name} and its running products",
                 ["t", "token $x_t$", "state $g_t$"], rows, "", [], data)
