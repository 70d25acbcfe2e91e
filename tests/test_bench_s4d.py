"""The S4D classifier benchmark's anchor (``sst_core.bench.cases_s4d``): the published
standalone S4D built around our model's weights computes the same function as our model, so
the benchmark compares like for like."""
import pytest
import torch

from sst_core.bench import cases_s4d
from sst_core.bench.cases_s4d import anchor_from, anchor_groups
from sst_core.models.s4 import S4DModel, optimizer_groups

pytestmark = pytest.mark.usefixtures("one_thread")

# the LRA task presets (sst_core.experiments.paper2.LRA_TASK_SETTINGS), and a few more
VARIANTS = [
    dict(encoder="embedding", prenorm=False, norm="batch", decoder="pool"),  # ListOps
    dict(encoder="linear", prenorm=True, norm="batch", decoder="last"),  # Pathfinder
    dict(encoder="linear", prenorm=False, norm="layer", decoder="pool"),  # digits
    dict(encoder="embedding", prenorm=True, norm="layer", decoder="last", bidirectional=False),
    dict(encoder="linear", prenorm=True, norm="batch", decoder="pool", postact=None),
]


def pair(freeze_spectrum=False, **kw):
    """Ours (float64, trained a little so nothing is at its initial value) and the anchor."""
    args = dict(H=6, N=8, n_layers=2, bidirectional=True, seed=3)
    args.update(kw)
    d_input = 7 if args["encoder"] == "embedding" else 1
    torch.manual_seed(0)
    ours = S4DModel(d_input, 3, freeze_spectrum=freeze_spectrum, **args).double()
    with torch.no_grad():  # BatchNorm and LayerNorm weights away from 1 and 0
        for name, p in ours.named_parameters():
            if "norm" in name:
                p.add_(0.3 * torch.randn_like(p))
    return ours, anchor_from(ours)


def batch(encoder, b=5, L=33, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = (torch.randint(7, (b, L), generator=g) if encoder == "embedding"
         else torch.randn(b, L, generator=g, dtype=torch.float64))
    lengths = torch.randint(L // 3, L + 1, (b,), generator=g)
    return x, lengths, torch.randint(3, (b,), generator=g)


@pytest.mark.parametrize("kw", VARIANTS, ids=lambda kw: "-".join(f"{v}" for v in kw.values()))
def test_anchor_computes_our_function_and_gradients(kw):
    ours, anchor = pair(**kw)
    x, lengths, y = batch(kw["encoder"])
    for mode in ("train", "eval"):
        ours.train(mode == "train")
        anchor.train(mode == "train")
        for lens in (None, lengths):
            a, b = ours(x, lengths=lens), anchor(x, lengths=lens)
            torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
            ga = torch.autograd.grad(torch.nn.functional.cross_entropy(a, y), ours.parameters())
            gb = torch.autograd.grad(torch.nn.functional.cross_entropy(b, y),
                                     anchor.parameters())
            assert len(ga) == len(gb)  # the same parameters, in the same order
            for (name, _), u, v in zip(ours.named_parameters(), ga, gb):
                torch.testing.assert_close(u.reshape(v.shape), v, rtol=1e-9, atol=1e-12,
                                           msg=lambda m: f"{mode} {name}: {m}")
    # BatchNorm's running statistics were updated alike
    for p, q in zip(ours.norms, anchor.norms):
        for name, buf in q.named_buffers():
            torch.testing.assert_close(getattr(p.norm, name), buf)


@pytest.mark.parametrize("freeze_spectrum", [False, True])
@pytest.mark.parametrize("variant", [0, 2])
def test_training_steps_stay_together(freeze_spectrum, variant):
    """Three ``train_step`` calls of each (AdamW, the spectrum in its own group): the same
    weights afterwards, so the optimisers and their groups are the same too. (Not with
    pre-norm batch norm: there the encoder's bias only shifts what the next BatchNorm
    removes, its gradient is rounding noise, which AdamW's first steps scale up to +-lr.)"""
    kw = VARIANTS[variant]
    ours, anchor = pair(freeze_spectrum=freeze_spectrum, **kw)
    x, lengths, y = batch(kw["encoder"])
    lr, wd, ssm_lr = 0.01, 0.05, 0.001
    g_ours = optimizer_groups(ours, lr, wd, ssm_lr)
    g_anchor = anchor_groups(anchor, lr, wd, ssm_lr)
    assert [(g["name"], g["lr"], g["weight_decay"], len(g["params"])) for g in g_ours] == \
        [(g["name"], g["lr"], g["weight_decay"], len(g["params"])) for g in g_anchor]
    assert len(g_ours) == (1 if freeze_spectrum else 2)
    steps = [cases_s4d.train_step(m, g, x, lengths, y, lr, wd, 0.0)
             for m, g in ((ours, g_ours), (anchor, g_anchor))]
    for _ in range(3):
        for step in steps:
            step()
    trained = [q for q in anchor.parameters() if q.requires_grad]
    assert len(trained) == len(list(ours.parameters()))
    for (name, p), q in zip(ours.named_parameters(), trained):
        torch.testing.assert_close(p.detach().reshape(q.shape), q.detach(), rtol=1e-8,
                                   atol=1e-10, msg=lambda m: f"{name}: {m}")
    a = [t for t in anchor.parameters() if not t.requires_grad]
    assert len(a) == (3 * 2 if freeze_spectrum else 0)


def test_bench_cases_build_the_task_presets():
    """Every registered case: ours as train_lra builds it (the task preset's options) and an
    anchor with the same logits, at a small width (float32)."""
    for suffix, case in {**cases_s4d.CLASSIFIER_CASES, **cases_s4d.profile_cases()}.items():
        small = dict(case, H=8, L=24)
        ours, anchor, opts = cases_s4d.classifier_models(small, torch.device("cpu"))
        from sst_core.experiments.paper2 import LRA_TASK_SETTINGS

        preset = LRA_TASK_SETTINGS.get(case["task"], {})
        assert ours.prenorm == preset.get("prenorm", True)
        assert ours.norms[0].kind == preset.get("norm", "batch") == opts["norm"]
        assert ours.decoder_kind == preset.get("decoder", "pool")
        assert ours.layers[0].bidirectional and ours.layers[0].kernel.N == 64
        assert len(ours.layers) == case["layers"]
        x, lengths, _ = cases_s4d._classifier_data(small, 3, torch.device("cpu"))
        torch.testing.assert_close(ours(x, lengths=lengths), anchor(x, lengths=lengths),
                                   rtol=1e-4, atol=1e-5, msg=lambda m: f"{suffix}: {m}")


def test_anchor_needs_one_channel_per_direction_and_a_pooling_decoder():
    torch.manual_seed(0)
    with pytest.raises(ValueError, match="retrieval"):
        anchor_from(S4DModel(5, 2, H=4, N=4, n_layers=1, decoder="retrieval"))
    model = S4DModel(5, 2, H=4, N=4, n_layers=1)
    model.layers[0].channels = 2
    with pytest.raises(ValueError, match="channels=1"):
        anchor_from(model)


def test_profile_cases_are_the_sizes_the_profile_trains():
    """The cases of a profile follow its LRA fields: each task of the grid and each probe
    task at its own model size, the profile's batch and the task's longest sequence."""
    from sst_core.spec.profiles import get_profile

    for name in ("quick", "standard"):
        P = get_profile(name)
        cases = cases_s4d.profile_cases(name)
        assert [c["task"] for c in cases.values()] == list(dict.fromkeys(P.lra_tasks
                                                                          + P.lra_probe_tasks))
        for suffix, case in cases.items():
            assert (case["H"], case["layers"]) == P.lra_model_size(case["task"])
            assert case["batch"] == P.lra_batch
            assert suffix == f"{name}_{case['task']}_L{case['L']}_H{case['H']}"
            assert case["L"] == {"listops": P.lra_listops_max_len,
                                 "digits": P.lra_image_side ** 2,
                                 "pathfinder": 32 ** 2}[case["task"]]
    std = cases_s4d.profile_cases("standard")
    assert std["standard_pathfinder_L1024_H64"]["layers"] == 4
    assert std["standard_listops_L512_H32"]["layers"] == 2
