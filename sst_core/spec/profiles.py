"""Profiles: every size the book uses.

A *profile* decides every size in the book:

- ``smoke``: every code path runs (CI); the numbers are meaningless and labelled so.
- ``quick``: real but reduced runs that fit a laptop CPU.
- ``standard``: the papers' protocols on a grid sized for a 2-core machine (planned at 12
  hours for paper 1 and 7 for paper 2; measured, each several times that: the README and
  ``sst status`` give the figures), a sweep over several sessions; its records are
  committed under ``results/standard/``, so the book renders them without training.
- ``paper``: the published protocol as far as it is known (GPU recommended).

Which profile values a notebook's papermill parameters may override, and the ``best``
choice per chapter, live in :mod:`sst_core.book.params`.
"""
from __future__ import annotations

from dataclasses import dataclass

PROFILE_NAMES = ("smoke", "quick", "standard", "paper")
# characters per line of a chapter's first output (a code cell's output shows about 85)
@dataclass(frozen=True)
class Profile:
    """Every size the book uses, for one profile.

    Fields are grouped by chapter; later chapters add their own.
    """

    name: str
    description: str
    seed: int
    # -- "Groups and state tracking" (notebooks/p1_groups.py)
    n_words: int  # words sampled per group for the order-sensitivity statistics
    word_length: int  # length of those words
    # -- "Memory function" (notebooks/p2_memory.py)
    mem_N: int  # state size N (real dimension: both members of each conjugate pair)
    mem_T: int  # horizon T of the memory function (the task's sequence length)
    mem_sim_T: int  # length of the white-noise simulation that checks the formula
    mem_gd_steps: int  # gradient-descent steps on the readout in the worked example
    # -- "Tables 2 and 3" (notebooks/p1_table2.py, p1_table3.py): group-tracking training
    track_depths: tuple[int, ...]  # numbers of layers (the paper's L1 / L2)
    track_d_model: int  # residual width of the Mamba / AUSSM / attention families
    # the width the pilots of the runs that never reach length 60 decided on (issue 59):
    # Table 2's and Figure 4's grids computed again with those families this wide (the
    # RNN family has no residual stream; its runs are the same); sst_core.experiments.paper1
    track_d_model_wide: int
    track_d_states: tuple[int, ...]  # d_state grid: N of the SSM / attention families
    track_rnn_widths: tuple[int, ...]  # d_state grid of the RNN family (its hidden width)
    track_lrs: tuple[float, ...]  # learning-rate grid
    track_schedules: tuple[str, ...]  # learning-rate schedules (sst_core.spec.configs.SCHEDULES)
    track_seeds: tuple[int, ...]  # seeds per grid cell
    track_batch: int  # words per training step
    track_max_steps: int  # training steps at most
    track_steps_per_epoch: int  # steps that make one curriculum "epoch"
    track_patience: int  # epochs at >= 95% before the length doubles
    track_post_steps: int  # steps at length 60 after the curriculum passes it (the budget)
    track_heldout_every: int  # steps between held-out checks at 60
    track_heldout_samples: int  # fresh held-out words per check
    track_plateau_steps: int  # stop as not learning after this many steps at one length (0: off)
    track_eval_lengths: tuple[int, ...]  # evaluation lengths (m_p is one of them)
    track_eval_samples: int  # held-out words per evaluation length
    track_stack: int  # runs differing only in seed / lr trained at once (sst_core.training.stacked)
    # the width ablation of Table 2 (m_p against d_model; empty: none at this profile)
    width_d_models: tuple[int, ...]  # d_model values
    width_seeds: tuple[int, ...]  # seeds per width (learning rates: track_lrs)
    # -- "Error control" (notebooks/p1_theory.py, p1_diagnostics.py): diagnostics of trained trackers
    diag_samples: int  # words whose hidden states estimate the centroids c_g(t), R, M, q
    diag_rollout: int  # length of those words (the paper: 1000)
    diag_perturb_steps: int  # steps followed after the perturbation at t0 (at most diag_rollout)
    diag_n_perturb: int  # words perturbed (at most diag_samples)
    diag_n_preserving: int  # state-preserving words s of Theorem 1 whose return maps are checked
    fig4_lrs: tuple[float, ...]  # extra learning rates of the affine S3 sweep behind Figure 4
    fig4_seeds: tuple[int, ...]  # seeds of that sweep
    # seeds added to the cells (model, depth) of that sweep in which some stored run passes
    # the training length, so that enough runs qualify for Figure 4
    # (sst_core.experiments.paper1.figure4_growth_runs); empty: the sweep does not grow
    fig4_growth_seeds: tuple[int, ...]
    # seeds of further held-out word samples on which Figure 4's diagnostics are repeated
    # (the spread of T_cross and q over word samples; empty: none)
    diag_resample_seeds: tuple[int, ...]
    # -- "Beyond the papers" (notebooks/beyond_*.py): the grid of the new training runs, a
    # subset of Table 2's axes (depths, sizes, schedules; learning rates and seeds as Table 2)
    beyond_depths: tuple[int, ...]
    beyond_d_states: tuple[int, ...]
    beyond_rnn_widths: tuple[int, ...]
    beyond_schedules: tuple[str, ...]
    # -- "Frozen versus learned spectra on LRA" (notebooks/p2_lra.py): S4D classifiers
    lra_tasks: tuple[str, ...]  # tasks of the chapter (generated stand-ins unless data is given)
    lra_H: int  # channels H of every layer
    lra_N: int  # state size N (real dimension)
    lra_layers: int  # S4D blocks
    lra_epochs: int  # passes over the training set
    lra_batch: int  # sequences per step
    lra_n_train: int  # generated training examples per task (val and test: a quarter each)
    lra_seeds: tuple[int, ...]  # seeds per cell of the main table (the paper: 6)
    lra_ablation_seeds: tuple[int, ...]  # seeds per cell of the ablation
    lra_listops_max_len: int  # ListOps length band is [max_len / 4, max_len]
    lra_image_side: int  # digits images are resized to side x side pixels
    lra_mf_T: int  # horizon of the supremum memory function
    lra_pathfinder_difficulty: str  # LRA's contour-length preset: easy | intermediate | hard
    # learnability probes: learned S4D-Inv, the first two seeds, lra_n_train examples. For a
    # task outside lra_tasks (its full grid does not fit the profile's budget) that is all
    # the profile runs of it; for a task with its own size (lra_task_n_train) it shows what
    # the common size reaches
    lra_probe_tasks: tuple[str, ...]
    # data probes: learned S4D-Inv, first seed, on these tasks with lra_data_probe_factor x
    # lra_n_train training examples (does more data lift a task that overfits its set?)
    lra_data_probe_tasks: tuple[str, ...]
    lra_data_probe_factor: int
    # the memory-horizon task of the same chapter (delayed recall at lag tau; seeds: lra_seeds)
    horizon_taus: tuple[int, ...]  # delays tau of the label, short to long
    horizon_N: int  # state size N (real dimension)
    horizon_H: int  # channels H
    horizon_steps: int  # training steps, each on a fresh batch
    horizon_batch: int  # sequences per step
    horizon_n_test: int  # test sequences (the chance band's width follows from it)
    horizon_seeds: tuple[int, ...]  # seeds per cell
    # why this profile was chosen, when the book was asked for the best one (`best`)
    chosen_because: str = ""
    # (task, training examples) for the tasks that need more than lra_n_train to be learned
    lra_task_n_train: tuple[tuple[str, int], ...] = ()
    # (task, H) and (task, layers) for the tasks that need a larger model than lra_H x
    # lra_layers to be learned
    lra_task_H: tuple[tuple[str, int], ...] = ()
    lra_task_layers: tuple[tuple[str, int], ...] = ()

    def lra_train_size(self, task: str) -> int:
        """The generated training examples of an LRA stand-in task at this profile."""
        return dict(self.lra_task_n_train).get(task, self.lra_n_train)

    def lra_model_size(self, task: str) -> tuple[int, int]:
        """The channels H and the S4D blocks of the classifier of ``task`` at this profile."""
        return (dict(self.lra_task_H).get(task, self.lra_H),
                dict(self.lra_task_layers).get(task, self.lra_layers))

    def scale(self, *knobs: str) -> str:
        """A one-line statement of the scale, for figure captions and table notes."""
        shown = ", ".join(f"{k}={_shown(getattr(self, k))}" for k in knobs
                          if getattr(self, k) != ())  # an empty setting has nothing to say
        note = " (numbers are meaningless at this scale)" if self.name == "smoke" else ""
        return f"profile `{self.name}`" + (f": {shown}" if shown else "") + note


def _shown(value):
    """A profile value as a scale line shows it: pairs as ``{a: 1, b: 2}``."""
    if isinstance(value, tuple) and value and all(
            isinstance(v, tuple) and len(v) == 2 for v in value):
        return "{" + ", ".join(f"{k}: {v}" for k, v in value) + "}"
    return value


PROFILES: dict[str, Profile] = {
    "smoke": Profile(
        name="smoke",
        description="every code path runs in about a minute per notebook on 2 CPU cores",
        seed=0,
        n_words=256,
        word_length=16,
        mem_N=16,
        mem_T=256,
        mem_sim_T=4_000,
        mem_gd_steps=200,
        track_depths=(1,),
        track_d_model=8,
        track_d_model_wide=16,
        track_d_states=(8,),
        track_rnn_widths=(8,),
        track_lrs=(0.001,),
        track_schedules=("constant",),
        track_seeds=(0,),
        track_batch=16,
        track_max_steps=3,
        track_steps_per_epoch=1,
        track_patience=1,
        track_post_steps=5,
        track_heldout_every=2,
        track_heldout_samples=16,
        track_plateau_steps=0,
        track_eval_lengths=(60, 100),
        track_eval_samples=16,
        track_stack=4,
        width_d_models=(8, 16),
        width_seeds=(0,),
        diag_samples=32,
        diag_rollout=100,
        diag_perturb_steps=20,
        diag_n_perturb=16,
        diag_n_preserving=2,
        fig4_lrs=(0.001,),
        fig4_seeds=(0,),
        fig4_growth_seeds=(),
        diag_resample_seeds=(1,),
        beyond_depths=(1,),
        beyond_d_states=(8,),
        beyond_rnn_widths=(8,),
        beyond_schedules=("constant",),
        lra_tasks=("listops", "pathfinder", "digits"),
        lra_H=8,
        lra_N=4,
        lra_layers=1,
        lra_epochs=1,
        lra_batch=8,
        lra_n_train=32,
        lra_seeds=(0,),
        lra_ablation_seeds=(0,),
        lra_listops_max_len=60,
        lra_image_side=8,
        lra_mf_T=64,
        lra_pathfinder_difficulty="hard",
        lra_probe_tasks=(),
        lra_data_probe_tasks=("pathfinder",),
        lra_data_probe_factor=2,
        horizon_taus=(4, 16),
        horizon_N=4,
        horizon_H=4,
        horizon_steps=5,
        horizon_batch=8,
        horizon_n_test=32,
        horizon_seeds=(0,),
    ),
    "quick": Profile(
        name="quick",
        description=("real but reduced runs on a laptop CPU: the two papers' chapters in about an "
                     "hour, the 'Beyond the papers' part several hours more"),
        seed=0,
        n_words=4096,
        word_length=60,
        mem_N=64,
        mem_T=1024,
        mem_sim_T=50_000,
        mem_gd_steps=3_000,
        track_depths=(1,),
        track_d_model=16,
        track_d_model_wide=64,
        track_d_states=(16,),
        track_rnn_widths=(64,),
        track_lrs=(0.01,),
        track_schedules=("constant",),
        track_seeds=(0,),
        track_batch=64,
        track_max_steps=3000,
        track_steps_per_epoch=20,
        track_patience=2,
        track_post_steps=600,
        track_heldout_every=50,
        track_heldout_samples=256,
        track_plateau_steps=0,
        track_eval_lengths=(60,) + tuple(range(100, 1001, 100)),
        track_eval_samples=128,
        track_stack=16,
        width_d_models=(),
        width_seeds=(),
        diag_samples=512,
        diag_rollout=1000,
        diag_perturb_steps=200,
        diag_n_perturb=128,
        diag_n_preserving=8,
        fig4_lrs=(0.003, 0.01, 0.03),
        fig4_seeds=(0,),
        fig4_growth_seeds=(),
        diag_resample_seeds=(),
        beyond_depths=(1,),
        beyond_d_states=(16,),
        beyond_rnn_widths=(64,),
        beyond_schedules=("constant",),
        lra_tasks=("listops", "pathfinder", "digits"),
        lra_H=32,
        lra_N=16,
        lra_layers=2,
        lra_epochs=5,
        lra_batch=32,
        lra_n_train=512,
        lra_seeds=(0, 1, 2),
        lra_ablation_seeds=(0,),
        lra_listops_max_len=256,
        lra_image_side=16,
        lra_mf_T=256,
        lra_pathfinder_difficulty="hard",
        lra_probe_tasks=(),
        lra_data_probe_tasks=(),
        lra_data_probe_factor=1,
        horizon_taus=(10, 100, 300, 1000),
        horizon_N=32,
        horizon_H=16,
        horizon_steps=400,
        horizon_batch=32,
        horizon_n_test=512,
        horizon_seeds=(0, 1, 2),
    ),
    "standard": Profile(
        name="standard",
        # no hours here: a chapter prints this line, and the compute its records took is
        # counted from them (the status page, `sst status`); the README gives the figures
        description=("the papers' protocols on a grid sized for a 2-core CPU, run over several "
                     "sessions as a resumable sweep; records committed under results/standard/"),
        seed=0,
        n_words=16_384,
        word_length=100,
        mem_N=64,
        mem_T=2048,
        mem_sim_T=100_000,
        mem_gd_steps=5_000,
        track_depths=(1, 2),
        track_d_model=32,
        track_d_model_wide=128,
        track_d_states=(16, 32),
        track_rnn_widths=(32, 64),
        track_lrs=(0.001, 0.003),
        track_schedules=("constant", "cosine"),
        track_seeds=(0, 1, 2),
        track_batch=64,
        track_max_steps=6000,
        track_steps_per_epoch=25,
        track_patience=2,
        track_post_steps=2000,
        track_heldout_every=100,
        track_heldout_samples=512,
        # off: in the first standard stack a tanh RNN on C2 spent 2,100 steps at length 60
        # before passing it, and its cosine twin was cut by a 3,000-step plateau rule, so
        # the rule could not be shown never to cut a late learner; a stack trains until its
        # slowest member ends anyway, so the rule saved little
        track_plateau_steps=0,
        track_eval_lengths=(60,) + tuple(range(100, 1001, 100)),
        track_eval_samples=256,
        track_stack=12,
        # d_model 128 left to `paper`: its AUSSM and Mamba-3 steps cost 4-5x those at 64
        # (0.26 and 0.20 s per model and step), about 12 h for its 72 runs alone
        width_d_models=(16, 32, 64),
        width_seeds=(0, 1, 2),
        diag_samples=2048,
        diag_rollout=1000,
        diag_perturb_steps=200,
        diag_n_perturb=128,
        diag_n_preserving=8,
        fig4_lrs=(0.001, 0.003),
        fig4_seeds=(0, 1, 2),
        fig4_growth_seeds=(3, 4, 5),
        diag_resample_seeds=(1,),
        beyond_depths=(1,),
        beyond_d_states=(16,),
        beyond_rnn_widths=(64,),
        beyond_schedules=("constant",),
        # Sized for the budget, paper 2 within 8 hours of this machine (two
        # single-threaded workers). The first standard grid (4 layers of H = 64, ListOps,
        # Pathfinder and digits in both tables) needed about 90 h: a Pathfinder run alone
        # took 1.5 h. Measured here on 2026-12-05 (train_lra outside the sweep, learned
        # S4D-Inv, seed 0, one thread beside a sweep): with 2 layers of H = 32, ListOps on
        # 16,384 examples reached test 0.405 (chance 0.159; 8 min; on 8,192 0.351, flat
        # from the third epoch), digits 0.978 (chance 0.117; 2 min), Pathfinder on 32,768
        # images only 0.595 (chance 0.505; 39 min), where 4 layers of H = 64 reached 0.77
        # (the first data probe, 1.5 h). So ListOps and digits make the tables at the
        # small size, and Pathfinder runs as a probe only, at the size that learns it: 42
        # runs of it would take about 63 h here
        lra_tasks=("listops", "digits"),
        lra_task_n_train=(("pathfinder", 32768),),
        lra_task_H=(("pathfinder", 64),),
        lra_task_layers=(("pathfinder", 4),),
        lra_H=32,
        lra_N=64,
        lra_layers=2,
        lra_epochs=10,
        lra_batch=32,
        lra_n_train=16384,
        lra_seeds=(0, 1, 2, 3, 4, 5),
        lra_ablation_seeds=(0, 1, 2),
        lra_listops_max_len=512,
        lra_image_side=24,
        lra_mf_T=1024,
        lra_pathfinder_difficulty="easy",
        lra_probe_tasks=("pathfinder",),
        # data probe (2 x 16,384 examples): with 4 layers of H = 64 on 8,192 examples the
        # S4D-Inv and S4D-Lin ListOps runs fit their set better than the unstructured ones
        # (train loss about 1.0 against 1.4) and scored below the real-axis and step
        # spectra; on 4 x 8,192 S4D-Inv reached 0.55. Does more data lift it here?
        lra_data_probe_tasks=("listops",),
        lra_data_probe_factor=2,
        horizon_taus=(10, 30, 100, 300, 1000, 2000),
        horizon_N=64,
        horizon_H=16,
        horizon_steps=1000,
        horizon_batch=32,
        horizon_n_test=1024,
        horizon_seeds=(0, 1, 2),
    ),
    "paper": Profile(
        name="paper",
        description="the published protocol as far as it is known; GPU recommended",
        seed=0,
        n_words=100_000,
        word_length=1000,
        mem_N=64,
        mem_T=4096,
        mem_sim_T=200_000,
        mem_gd_steps=20_000,
        track_depths=(1, 2),
        track_d_model=64,
        track_d_model_wide=128,
        track_d_states=(32, 64, 128),
        track_rnn_widths=(32, 64, 128),
        track_lrs=(0.0001, 0.0005, 0.001),
        track_schedules=("constant", "cosine"),
        track_seeds=(0, 1, 2),
        track_batch=256,
        track_max_steps=20_000,
        track_steps_per_epoch=100,
        track_patience=5,
        track_post_steps=5000,
        track_heldout_every=100,
        track_heldout_samples=1000,
        track_plateau_steps=0,
        track_eval_lengths=(60,) + tuple(range(100, 1001, 100)),
        track_eval_samples=1000,
        track_stack=16,
        width_d_models=(32, 64, 128, 256),
        width_seeds=(0, 1, 2),
        diag_samples=2048,
        diag_rollout=1000,
        diag_perturb_steps=200,
        diag_n_perturb=128,
        diag_n_preserving=8,
        fig4_lrs=(0.0001, 0.0005, 0.001),
        fig4_seeds=(0, 1, 2),
        fig4_growth_seeds=(),
        diag_resample_seeds=(1,),
        beyond_depths=(1, 2),
        beyond_d_states=(32, 64, 128),
        beyond_rnn_widths=(32, 64, 128),
        beyond_schedules=("constant", "cosine"),
        lra_tasks=("listops", "pathfinder", "digits"),
        lra_H=256,
        lra_N=64,
        lra_layers=6,
        lra_epochs=200,
        lra_batch=64,
        lra_n_train=96_000,
        lra_seeds=(0, 1, 2, 3, 4, 5),
        lra_ablation_seeds=(0, 1, 2, 3, 4, 5),
        lra_listops_max_len=2000,
        lra_image_side=32,
        lra_mf_T=4096,
        lra_pathfinder_difficulty="hard",
        lra_probe_tasks=(),
        lra_data_probe_tasks=(),
        lra_data_probe_factor=1,
        horizon_taus=(10, 30, 100, 300, 1000, 2000, 4000),
        horizon_N=64,
        horizon_H=64,
        horizon_steps=5000,
        horizon_batch=64,
        horizon_n_test=2048,
        horizon_seeds=(0, 1, 2, 3, 4, 5),
    ),
}


class ConfigError(ValueError):
    """An unknown profile, notebook or parameter, or a wrongly typed value."""


def get_profile(name: str) -> Profile:
    if name not in PROFILES:
        raise ConfigError(f"unknown profile {name!r}; allowed: {', '.join(PROFILES)}")
    return PROFILES[name]
