"""SiFT, scale-invariant fine-tuning (He et al. 2021, section 3.3): virtual adversarial training (Miyato et
al. 2018; SMART, Jiang et al. 2020) on the normalised word embeddings.

A perturbation added to raw embeddings means little when their scale varies from word to word and from
model to model; SiFT adds it to the embeddings after standardising them (per token: zero mean, unit
variance), so ``sift.noise`` is its size relative to theirs whatever their scale. For a batch:

    clean      = the unit's outputs (logits) as trained
    delta      = N(0, noise^2) per value, clipped to +-2 noise
    delta     += step_size * g / max|g| per token  (``ascent_steps`` times; g: the gradient of the
                 divergence below with respect to delta, the clean outputs held fixed)
    perturbed  = the outputs with delta added to the standardised embeddings
    loss      += weight * mean symmetric KL(clean, perturbed)

The encoder exposes the hook (``BertEmbeddings.perturb``, models/bert.py); the divergence and its weight
live here, and a unit (classification, masked LM) calls :func:`sift_penalty` in its forward while training.
Defaults follow microsoft/DeBERTa's SiFT (init perturbation 1e-2, step 1e-4, one ascent step; its GLUE
scripts use a weight of 3 to 5). Unlike that code, the penalty is the symmetric KL itself (0 when the two
distributions agree; the reference adds two cross-entropies) and its gradient flows through both passes.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from warmstart.config import opt
from warmstart.errors import WarmstartError


@dataclass
class SiftConfig:
    weight: float = opt(
        0.0,
        "SiFT (DeBERTa): weight of the symmetric KL between the outputs on clean and on perturbed "
        "normalised embeddings, added to the loss while training; 0 = off (e.g. 3)",
    )
    noise: float = opt(0.01, "SiFT: std of the random perturbation, relative to the normalised embeddings")
    ascent_steps: int = opt(1, "SiFT: adversarial ascent steps on the perturbation (0: random noise only)")
    step_size: float = opt(1e-4, "SiFT: size of an ascent step (per token, in max norm)")

    def __post_init__(self):
        if self.weight < 0 or self.noise < 0 or self.step_size < 0 or self.ascent_steps < 0:
            raise WarmstartError(
                "sift.weight, sift.noise, sift.step_size and sift.ascent_steps cannot be negative",
                "e.g. sift.weight=3 sift.noise=0.01",
            )


def symmetric_kl(p_logits: torch.Tensor, q_logits: torch.Tensor) -> torch.Tensor:
    """KL(p || q) + KL(q || p) of the softmaxes over the last axis, one value per row: the sum of
    (p - q)(log p - log q), each term >= 0 (exp is monotonic), 0 when the rows agree."""
    lp, lq = F.log_softmax(p_logits.float(), -1), F.log_softmax(q_logits.float(), -1)
    return ((lp.exp() - lq.exp()) * (lp - lq)).sum(-1)


def bernoulli_symmetric_kl(p_logits: torch.Tensor, q_logits: torch.Tensor) -> torch.Tensor:
    """The symmetric KL of independent sigmoids (multi-label), averaged over the labels, one value per row."""
    two = lambda x: torch.stack([torch.zeros_like(x), x], -1)  # noqa: E731 - sigmoid(x) as a 2-way softmax
    return symmetric_kl(two(p_logits), two(q_logits)).mean(-1)


def squared(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Regression: the squared difference of the two predictions, one value per row."""
    return (p.float() - q.float()).pow(2).reshape(p.shape[0], -1).mean(-1)


def perturbable(encoder) -> bool:
    """Whether ``encoder`` exposes the perturbation hook on its normalised embeddings."""
    return hasattr(getattr(encoder, "embedding_module", None), "perturb")


@contextlib.contextmanager
def perturbed(encoder, hook):
    """Within: ``hook(standardised embeddings) -> perturbation`` is added to ``encoder``'s embeddings."""
    module = encoder.embedding_module
    module.perturb = hook
    try:
        yield
    finally:
        module.perturb = None


class Perturbation:
    """The hook SiFT sets: ``delta`` drawn at the first call, N(0, noise^2) clipped to +-2 noise, in the shape
    of the standardised embeddings (float32; a leaf that takes a gradient when ``grad``), then added."""

    def __init__(self, noise: float, grad: bool):
        self.noise, self.grad, self.delta = noise, grad, None

    def __call__(self, z: torch.Tensor) -> torch.Tensor:
        if self.delta is None:
            draw = torch.randn(z.shape, device=z.device).mul_(self.noise)
            self.delta = draw.clamp_(-2 * self.noise, 2 * self.noise).requires_grad_(self.grad)
        return self.delta.to(z.dtype)


def sift_penalty(encoder, outputs, clean: torch.Tensor, cfg: SiftConfig, divergence=symmetric_kl):
    """The mean divergence between ``clean`` (the unit's outputs on this batch, with their graph) and
    ``outputs()`` (the same computation again) with the standardised embeddings perturbed as the module
    docstring says. ``divergence(clean, perturbed)`` gives one value per row."""
    hook = Perturbation(cfg.noise, grad=cfg.ascent_steps > 0)
    for _ in range(cfg.ascent_steps):
        with perturbed(encoder, hook):
            ascent = divergence(clean.detach(), outputs()).sum()
        (grad,) = torch.autograd.grad(ascent, hook.delta)
        if not torch.isfinite(grad).all():
            break
        step = cfg.step_size * grad / (grad.abs().amax(-1, keepdim=True) + 1e-6)
        hook.delta = (hook.delta + step).detach().requires_grad_(True)
    hook.grad = False
    if hook.delta is not None:
        hook.delta = hook.delta.detach()
    with perturbed(encoder, hook):
        return divergence(clean, outputs()).mean()


def attach(unit, cfg: SiftConfig) -> None:
    """Give ``unit`` the SiFT settings when ``cfg.weight`` is above 0 (a unit then adds the penalty in its
    forward while training); refuse a unit or encoder that cannot take it."""
    if cfg.weight == 0:
        return
    if not getattr(type(unit), "takes_sift", False):
        raise WarmstartError(
            f"sift.weight applies to classification finetuning and mlm pretraining, not to "
            f"{type(unit).__name__}",
            "drop sift.weight (or use --task classification / --objective mlm)",
        )
    if not perturbable(unit.encoder):
        raise WarmstartError(
            "sift.weight needs an encoder whose embeddings take a perturbation (the bert family: BERT, "
            "RoBERTa, ALBERT, ELECTRA, DeBERTa)",
            "drop sift.weight for this model",
        )
    unit.sift = cfg


def sift_on(unit) -> bool:
    """Whether ``unit``'s forward adds the penalty now: SiFT attached, training, with autograd on."""
    return unit.sift is not None and unit.training and torch.is_grad_enabled()
