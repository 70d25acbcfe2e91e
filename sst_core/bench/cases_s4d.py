"""Benchmark cases of paper 2's S4D classifier: one training step of ours against the same
model built the way ``state-spaces/s4``'s standalone ``models/s4/s4d.py`` and ``example.py``
build it (the anchor, :class:`AnchorS4DModel`, written here from the published algorithm).

The anchor, per layer, on the channels-first ``(b, H, L)`` activations of ``example.py``:

- kernel as ``S4DKernel.forward`` of ``s4d.py``: ``dtA = dt Lambda`` ``(H, N/2)``, the complex
  Vandermonde tensor ``exp(dtA[..., None] * arange(L))`` ``(H, N/2, L)`` materialised,
  ``C' = C (exp(dtA) - 1) / Lambda`` and ``K = 2 Re einsum(C', V)``; bidirectional as the S4
  layer's FFT convolution: ``2 * channels`` kernels sharing the spectrum, ``K = pad(K0, (0, L))
  + pad(flip(K1), (L, 0))``;
- ``y = irfft(rfft(u, 2L) rfft(K, 2L), 2L)[..., :L] + D u``, every transform differentiated
  by autograd;
- GELU (dropout off), ``Conv1d(H * channels, 2H, 1)`` and ``GLU(dim=-2)`` (``s4d.py``'s output
  linear; ``postact=None``: ``Conv1d(H * channels, H, 1)``);
- around it ``example.py``'s residual block ``x = z + x`` with the norm before (pre-norm,
  plus a final norm, as ``state-spaces/s4``'s sequence model) or after (post-norm):
  ``LayerNorm`` through transposes as ``example.py`` does it, ``BatchNorm1d`` directly on
  ``(b, H, L)`` (the layout it expects); the decoder pools (mean over the valid positions)
  or reads the last valid position, then ``Linear(H, n_classes)``.

:func:`anchor_from` copies the weights of one of our :class:`~sst_core.models.s4.S4DModel`
into an anchor, so both compute the same function (``tests/test_bench_s4d.py`` checks logits
and gradients): the comparison is like for like.

A *training step* is what ``sst_core.training.lra.train_lra`` does per batch: forward,
cross-entropy, backward, AdamW with the spectrum (``log_dt``, the real and imaginary parts of
Lambda) in its own group (``ssm_lr``, no weight decay) and the rest at ``lr`` and
``weight_decay`` (``LRAConfig``'s defaults; no gradient clipping, as there). The sizes are
CPU-scale versions of the LRA task presets (``sst_core.experiments.paper2.LRA_TASK_SETTINGS``):
ListOps (tokens, post-norm, batch norm, pool), Pathfinder (pixels, pre-norm, batch norm, the
last position) and digits (pixels, post-norm, layer norm, pool), bidirectional, N = 64.

Two sets of cases: :data:`CLASSIFIER_CASES`, the issue's example sizes (H 64-128, 2 layers,
fixed since the first benchmark record, so that records compare across commits), and
:func:`profile_cases`, the sizes the ``standard`` profile actually trains
(:meth:`~sst_core.spec.profiles.Profile.lra_model_size` per task, its batch, the ListOps
length band, the digits image side, the Pathfinder image), read from the profile so that
they follow it when it is resized.
"""
from __future__ import annotations

from functools import partial
from typing import Any, Callable

import torch
from torch import nn
from torch.nn import functional as F

from sst_core.bench.harness import (
    SEED,
    Context,
    make_entry,
    register,
    time_side_by_side,
)
from sst_core.bench.roofline import count_work

__all__ = ["AnchorS4DKernel", "AnchorS4D", "AnchorS4DModel", "anchor_from", "train_step",
           "CLASSIFIER_CASES", "CLASSIFIER_TARGET", "TASK_IO", "profile_cases"]

CLASSIFIER_TARGET = 0.5  # ours / anchor for a training step, at most: 2x faster (issue 18)


class AnchorS4DKernel(nn.Module):
    """``s4d.py``'s kernel with ``channels`` output kernels sharing one spectrum.

    Parameters as there: ``log_dt`` (H,), ``log_A_real`` and ``A_imag`` (H, N/2) (Lambda =
    -exp(log_A_real) + i A_imag), ``C`` (channels, H, N/2, 2) (the real view of a complex C).
    """

    def __init__(self, H: int, N: int, channels: int):
        super().__init__()
        self.log_dt = nn.Parameter(torch.zeros(H))
        self.log_A_real = nn.Parameter(torch.zeros(H, N // 2))
        self.A_imag = nn.Parameter(torch.zeros(H, N // 2))
        self.C = nn.Parameter(torch.zeros(channels, H, N // 2, 2))

    def forward(self, L: int) -> torch.Tensor:
        dt = torch.exp(self.log_dt)  # (H,)
        C = torch.view_as_complex(self.C)  # (channels, H, N/2)
        A = -torch.exp(self.log_A_real) + 1j * self.A_imag  # (H, N/2)
        dtA = A * dt.unsqueeze(-1)  # (H, N/2)
        V = dtA.unsqueeze(-1) * torch.arange(L, device=A.device)  # (H, N/2, L)
        C = C * (torch.exp(dtA) - 1.0) / A  # (channels, H, N/2)
        return 2 * torch.einsum("chn,hnl->chl", C, torch.exp(V)).real  # (channels, H, L)


class AnchorS4D(nn.Module):
    """``s4d.py``'s ``S4D`` layer (transposed: ``(b, H, L) -> (b, H, L)``), bidirectional as
    the S4 layer's FFT convolution."""

    def __init__(self, H: int, N: int, bidirectional: bool, postact: str | None):
        super().__init__()
        self.H, self.bidirectional = H, bidirectional
        self.D = nn.Parameter(torch.zeros(H))
        self.kernel = AnchorS4DKernel(H, N, 2 if bidirectional else 1)
        self.activation = nn.GELU()
        if postact == "glu":
            self.output_linear = nn.Sequential(nn.Conv1d(H, 2 * H, kernel_size=1), nn.GLU(dim=-2))
        else:
            self.output_linear = nn.Sequential(nn.Conv1d(H, H, kernel_size=1))

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        L = u.size(-1)
        k = self.kernel(L)  # (channels, H, L)
        if self.bidirectional:
            k0, k1 = k[0], k[1]
            k = F.pad(k0, (0, L)) + F.pad(k1.flip(-1), (L, 0))  # (H, 2L)
        else:
            k = k[0]  # (H, L)
        k_f = torch.fft.rfft(k, n=2 * L)  # (H, L+1)
        u_f = torch.fft.rfft(u, n=2 * L)  # (b, H, L+1)
        y = torch.fft.irfft(u_f * k_f, n=2 * L)[..., :L]  # (b, H, L)
        y = y + u * self.D.unsqueeze(-1)
        y = self.activation(y)  # dropout off
        return self.output_linear(y)  # (b, H, L)


class AnchorS4DModel(nn.Module):
    """``example.py``'s ``S4Model`` with the options of our LRA classifier: ``forward(x,
    lengths=None) -> logits (b, n_classes)``; ``x`` token indices ``(b, L)`` (``embedding``)
    or inputs ``(b, L)`` / ``(b, L, d_input)`` (``linear``)."""

    def __init__(self, d_input: int, n_classes: int, *, H: int, N: int, n_layers: int,
                 encoder: str, prenorm: bool, norm: str, decoder: str, bidirectional: bool,
                 postact: str | None = "glu"):
        super().__init__()
        if decoder not in ("pool", "last"):
            raise ValueError(f"the anchor has the pool and last decoders, not {decoder!r}")
        self.prenorm, self.norm_kind, self.decoder_kind = prenorm, norm, decoder
        self.encoder_kind = encoder
        self.encoder = nn.Embedding(d_input, H) if encoder == "embedding" else nn.Linear(d_input, H)
        self.layers = nn.ModuleList(AnchorS4D(H, N, bidirectional, postact)
                                    for _ in range(n_layers))
        make = (lambda: nn.BatchNorm1d(H)) if norm == "batch" else (lambda: nn.LayerNorm(H))
        self.norms = nn.ModuleList(make() for _ in range(n_layers))
        self.final_norm = make() if prenorm else None
        self.decoder = nn.Linear(H, n_classes)

    def _norm(self, norm: nn.Module, x: torch.Tensor) -> torch.Tensor:
        if self.norm_kind == "layer":  # example.py: over the features, through transposes
            return norm(x.transpose(-1, -2)).transpose(-1, -2)
        return norm(x)  # BatchNorm1d reads (b, H, L)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        if self.encoder_kind == "linear" and x.dim() == 2:
            x = x.unsqueeze(-1)  # (b, L, 1)
        x = self.encoder(x)  # (b, L, H)
        x = x.transpose(-1, -2)  # (b, H, L)
        for layer, norm in zip(self.layers, self.norms):
            z = x
            if self.prenorm:
                z = self._norm(norm, z)
            z = layer(z)
            x = z + x
            if not self.prenorm:
                x = self._norm(norm, x)
        if self.final_norm is not None:
            x = self._norm(self.final_norm, x)
        x = x.transpose(-1, -2)  # (b, L, H)
        b, L, _ = x.shape
        if self.decoder_kind == "pool":
            if lengths is None:
                z = x.mean(dim=1)
            else:
                mask = (torch.arange(L, device=x.device) < lengths[:, None]).to(x.dtype)
                z = (x * mask[..., None]).sum(1) / lengths[:, None].to(x.dtype)
        else:
            z = x[:, -1] if lengths is None else x[torch.arange(b, device=x.device), lengths - 1]
        return self.decoder(z)  # (b, n_classes)


def anchor_from(model: nn.Module) -> AnchorS4DModel:
    """An anchor computing the same function as our ``S4DModel`` ``model``, with its weights
    copied (same dtype and device). Needs one kernel channel per direction (the LRA models)
    and the pool or last decoder."""
    if model.decoder_kind not in ("pool", "last"):
        raise ValueError(f"the anchor has the pool and last decoders, not {model.decoder_kind!r}")
    first = model.layers[0]
    if first.channels != 1:
        raise ValueError("the anchor has one kernel channel per direction (channels=1)")
    kernel = first.kernel
    norm = model.norms[0].kind
    postact = "glu" if isinstance(first.postact, nn.GLU) else None
    anchor = AnchorS4DModel(model.d_input, model.decoder.out_features, H=model.H, N=kernel.N,
                            n_layers=len(model.layers), encoder=model.encoder_kind,
                            prenorm=model.prenorm, norm=norm, decoder=model.decoder_kind,
                            bidirectional=first.bidirectional, postact=postact)
    p = next(model.parameters())
    anchor = anchor.to(device=p.device, dtype=p.dtype)
    with torch.no_grad():
        anchor.encoder.load_state_dict(model.encoder.state_dict())
        anchor.decoder.load_state_dict(model.decoder.state_dict())
        for a, ours in zip(anchor.layers, model.layers):
            k = ours.kernel
            a.kernel.log_dt.copy_(k.log_dt)
            a.kernel.log_A_real.copy_(k.log_neg_real)
            a.kernel.A_imag.copy_(k.imag)
            a.kernel.C.copy_(k.C)
            a.D.copy_(ours.D[0])
            conv = a.output_linear[0]
            conv.weight.copy_(ours.output_linear.weight[..., None])
            conv.bias.copy_(ours.output_linear.bias)
        for a, ours in zip(anchor.norms, model.norms):
            a.load_state_dict(ours.norm.state_dict())
        if anchor.final_norm is not None:
            anchor.final_norm.load_state_dict(model.final_norm.norm.state_dict())
    if kernel.freeze_spectrum:  # a frozen spectrum trains in neither
        for a in anchor.layers:
            for t in (a.kernel.log_dt, a.kernel.log_A_real, a.kernel.A_imag):
                t.requires_grad_(False)
    return anchor


ANCHOR_SPECTRUM = ("log_dt", "log_A_real", "A_imag")


def anchor_groups(anchor: AnchorS4DModel, lr: float, weight_decay: float, ssm_lr: float
                  ) -> list[dict[str, Any]]:
    """The anchor's AdamW groups, as ``optimizer_groups`` builds ours (and ``example.py``'s
    ``setup_optimizer`` the published one): the spectrum at ``ssm_lr`` without weight
    decay, the rest at ``lr`` and ``weight_decay``."""
    main, ssm = [], []
    for name, p in anchor.named_parameters():
        if p.requires_grad:
            (ssm if name.rsplit(".", 1)[-1] in ANCHOR_SPECTRUM else main).append(p)
    groups = [{"name": "main", "params": main, "lr": lr, "weight_decay": weight_decay}]
    if ssm:
        groups.append({"name": "ssm", "params": ssm, "lr": ssm_lr, "weight_decay": 0.0})
    return groups


def train_step(model: nn.Module, groups: list[dict[str, Any]], x: torch.Tensor,
               lengths: torch.Tensor, y: torch.Tensor, lr: float, weight_decay: float,
               grad_clip: float) -> Callable[[], None]:
    """One call = one step of ``train_lra``'s loop on fixed data (module doc)."""
    from sst_core.training.tracking import optimizer_step

    model.train()
    opt = torch.optim.AdamW(groups, lr=lr, weight_decay=weight_decay)
    loss_fn = nn.CrossEntropyLoss()

    def step() -> None:
        loss = loss_fn(model(x, lengths=lengths), y)
        optimizer_step(loss, model, opt, grad_clip, "bench", {})

    return step


# the input side of each task: tokens (vocabulary d_input) or pixels, and its classes
TASK_IO: dict[str, dict[str, Any]] = {
    "listops": dict(d_input=18, n_classes=10, encoder="embedding"),
    "pathfinder": dict(d_input=1, n_classes=2, encoder="linear"),
    "digits": dict(d_input=1, n_classes=10, encoder="linear"),
}


CLASSIFIER_N = 64


CLASSIFIER_LAYERS = 2


# name suffix -> (task preset, its input side, L, H, layers); the full batch and the small
# one per case below. N = 64, 2 layers (the quick profile's depth), bidirectional.
CLASSIFIER_CASES: dict[str, dict[str, Any]] = {
    "listops_L1024_H64": dict(task="listops", **TASK_IO["listops"], L=1024, H=64,
                              layers=CLASSIFIER_LAYERS, batch=32),
    "pathfinder_L1024_H128": dict(task="pathfinder", **TASK_IO["pathfinder"], L=1024, H=128,
                                  layers=CLASSIFIER_LAYERS, batch=32),
    "digits_L256_H128": dict(task="digits", **TASK_IO["digits"], L=256, H=128,
                             layers=CLASSIFIER_LAYERS, batch=64),
}


PROFILE_CASES_OF = "standard"  # the profile whose LRA sizes profile_cases reads


def profile_cases(profile: str = PROFILE_CASES_OF) -> dict[str, dict[str, Any]]:
    """The classifier the profile trains on each of its LRA tasks and probe tasks, keyed
    ``{profile}_{task}_L{L}_H{H}``: its model size (``lra_model_size``), batch
    (``lra_batch``) and longest sequence (ListOps: ``lra_listops_max_len``, the band's top;
    digits: ``lra_image_side`` squared; Pathfinder: ``LRAConfig.pathfinder_size`` squared,
    which no profile changes)."""
    from sst_core.spec.configs import LRAConfig
    from sst_core.spec.profiles import get_profile

    P = get_profile(profile)
    side = LRAConfig.__dataclass_fields__["pathfinder_size"].default
    longest = {"listops": P.lra_listops_max_len, "digits": P.lra_image_side ** 2,
               "pathfinder": side ** 2}
    cases = {}
    for task in dict.fromkeys(P.lra_tasks + P.lra_probe_tasks):
        H, layers = P.lra_model_size(task)
        L = longest[task]
        cases[f"{profile}_{task}_L{L}_H{H}"] = dict(task=task, **TASK_IO[task], L=L, H=H,
                                                    layers=layers, batch=P.lra_batch)
    return cases


SMALL_BATCH = 2


def _classifier_data(case: dict[str, Any], batch: int, device: torch.device
                     ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Fixed-seed inputs, valid lengths and labels: tokens with lengths in [L/4, L]
    (ListOps) or pixels at full length."""
    g = torch.Generator().manual_seed(SEED)
    L = case["L"]
    if case["encoder"] == "embedding":
        x = torch.randint(case["d_input"], (batch, L), generator=g)
        lengths = torch.randint(L // 4, L + 1, (batch,), generator=g)
    else:
        x = torch.randn(batch, L, generator=g)
        lengths = torch.full((batch,), L)
    y = torch.randint(case["n_classes"], (batch,), generator=g)
    return x.to(device), lengths.to(device), y.to(device)


def classifier_models(case: dict[str, Any], device: torch.device):
    """Ours (as ``train_lra`` builds it, with the task's preset) and the anchor with the
    same weights."""
    from sst_core.experiments.paper2 import LRA_TASK_SETTINGS
    from sst_core.models.s4 import S4DModel
    from sst_core.spec.configs import LRAConfig

    preset = LRA_TASK_SETTINGS.get(case["task"], {})
    fields = LRAConfig.__dataclass_fields__
    opts = {k: preset.get(k, fields[k].default) for k in
            ("prenorm", "norm", "decoder", "bidirectional", "disc", "dt_min",
             "dt_max", "lr", "ssm_lr", "weight_decay", "grad_clip")}
    torch.manual_seed(SEED)
    ours = S4DModel(case["d_input"], case["n_classes"], H=case["H"], N=CLASSIFIER_N,
                    n_layers=case["layers"], encoder=case["encoder"],
                    prenorm=opts["prenorm"], norm=opts["norm"], decoder=opts["decoder"],
                    bidirectional=opts["bidirectional"], init="inv", disc=opts["disc"],
                    dt_min=opts["dt_min"], dt_max=opts["dt_max"], seed=SEED).to(device)
    return ours, anchor_from(ours), opts


def classifier_train(ctx: Context, *, name: str, case: dict[str, Any]) -> list[dict[str, Any]]:
    """One ``train_lra`` step of our S4D classifier against the anchor (module doc)."""
    from sst_core.models.s4 import optimizer_groups

    batch = case["batch"] if ctx.size == "full" else SMALL_BATCH
    ours, anchor, o = classifier_models(case, ctx.device)
    x, lengths, y = _classifier_data(case, batch, ctx.device)
    f_ours = train_step(ours, optimizer_groups(ours, o["lr"], o["weight_decay"], o["ssm_lr"]),
                        x, lengths, y, o["lr"], o["weight_decay"], o["grad_clip"])
    f_anchor = train_step(anchor, anchor_groups(anchor, o["lr"], o["weight_decay"], o["ssm_lr"]),
                          x, lengths, y, o["lr"], o["weight_decay"], o["grad_clip"])
    t_ours, t_anchor = time_side_by_side([f_ours, f_anchor], ctx.repeat, ctx.sizes.warmup,
                                         ctx.device)
    sizes = {"batch": batch, "length": case["L"], "H": case["H"], "N": CLASSIFIER_N,
             "layers": case["layers"], "norm": o["norm"],
             "prenorm": "yes" if o["prenorm"] else "no", "decoder": o["decoder"],
             "n_classes": case["n_classes"]}
    return [make_entry(name, "train", f"S4DModel ({case['task']} preset)", ctx, sizes,
                       t_ours, t_anchor,
                       "state-spaces/s4 standalone s4d.py + example.py (materialised "
                       "Vandermonde kernel, autograd FFT convolution)", CLASSIFIER_TARGET,
                       work=count_work(f_ours))]


for _suffix, _case in {**CLASSIFIER_CASES, **profile_cases()}.items():
    _name = f"s4d_classifier_train_{_suffix}"
    register(_name)(partial(classifier_train, name=_name, case=_case))


del _suffix, _case, _name
