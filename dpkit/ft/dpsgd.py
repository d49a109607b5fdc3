"""DP-SGD on the adapters: Poisson-sampled batches, per-record clipping, Gaussian noise on the sum.

One step ``t`` of :func:`train` (Abadi et al. 2016, {cite}`abadi2016deep`):

1. **Poisson sampling, done here.** Every record joins the step's batch
   independently with probability ``sample_rate`` (q), drawn from the run's
   seed node ``(1, t)``. q and the number of steps T are PUBLIC configuration;
   nothing derives them from the number of records. (Opacus's ``DPDataLoader``
   sets q = 1 / the number of batches of a loader over the data, a function of
   the private row count: it is not used.) The batch's size is random and may be 0.
2. **Per-record gradients** of each record's loss (the mean negative
   log-likelihood of its text given its public prefix) with respect to the
   LoRA weights, by Opacus's ``GradSampleModule`` hooks; the batch
   is processed in micro-batches of ``micro_batch`` records (memory only: the
   sum below does not depend on how it is cut).
3. **Clipping and the sum**: each record's gradient (all adapter weights
   together) is scaled to L2 norm at most ``clip_norm`` (C) and the clipped
   gradients are summed, by Opacus's ``DPOptimizer``
   (its ``signal_skip_step`` accumulates the micro-batches into one sum).
   Under add/remove of one record the sum moves by at most C in L2.
4. **Noise**: N(0, (sigma C)^2) on every coordinate of the sum, once per step,
   drawn by DPOptimizer from a ``torch.Generator`` seeded with 64 bits of the
   run's seed node ``(2, t)`` (fresh OS entropy in a release). The noise is
   floating-point: ``torch.normal`` in float32, with Opacus's ``secure_mode``
   (each coordinate the sum of four draws, halved: the mitigation of
   Holohan and Braghin 2021 against the floating-point attacks on a single
   Gaussian draw). It is not an exact sampler; the privacy report says so.
5. **The update**: the noisy sum divided by the PUBLIC ``expected_batch_size``
   (never by the realised batch size, which is private), then one Adam step.
   Everything after the noisy sum is post-processing.

The whole run is the Poisson-subsampled Gaussian mechanism composed over T
steps, accounted once by :mod:`dpkit.ft.accounting` and charged once, before the
first step (:mod:`dpkit.methods.ft`).

Checkpoints: after every ``checkpoint_every`` steps and after the last one,
``on_checkpoint(step, state)`` receives the adapter weights, Adam's state and
the step counter; :func:`train` resumes from such a state. Step ``t`` draws only
from the nodes ``(1, t)`` and ``(2, t)``, so a resumed seeded run is the same run.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
from opacus import GradSampleModule
from opacus.optimizers import DPOptimizer

from dpkit.seeds import child, generator
from dpkit.validate import ParameterError, check_int, check_positive


@dataclass(frozen=True)
class StepPlan:
    """The public schedule of one DP-SGD run."""

    sample_rate: float
    steps: int
    noise_multiplier: float
    clip_norm: float
    expected_batch_size: float
    learning_rate: float
    micro_batch: int = 32
    checkpoint_every: int = 4

    def __post_init__(self):
        if not 0 < float(self.sample_rate) <= 1:
            raise ParameterError("sample_rate", self.sample_rate, "must be in (0, 1]")
        check_int("steps", self.steps, minimum=1)
        check_positive("noise_multiplier", self.noise_multiplier)
        check_positive("clip_norm", self.clip_norm)
        check_positive("expected_batch_size", self.expected_batch_size)
        check_positive("learning_rate", self.learning_rate)
        check_int("micro_batch", self.micro_batch, minimum=1)
        check_int("checkpoint_every", self.checkpoint_every, minimum=1)


def poisson_batch(seed_sequence: np.random.SeedSequence, step: int, n_records: int, sample_rate: float) -> np.ndarray:
    """The indices of the records in step ``step``'s batch: each joins independently with probability q."""
    return np.flatnonzero(generator(seed_sequence, 1, step).random(n_records) < sample_rate)


def noise_seed(seed_sequence: np.random.SeedSequence, step: int) -> int:
    """64 bits from the node ``(2, step)`` for the step's ``torch.Generator`` (fresh entropy in a release)."""
    words = child(seed_sequence, 2, step).generate_state(2, dtype=np.uint32)
    return int((int(words[0]) << 32 | int(words[1])) & ((1 << 63) - 1))


def _optimizer(top, plan: StepPlan, noise: torch.Generator):
    params = [p for p in top.parameters() if p.requires_grad]
    base = torch.optim.Adam(params, lr=plan.learning_rate)
    optimizer = DPOptimizer(base, noise_multiplier=plan.noise_multiplier, max_grad_norm=plan.clip_norm,
                            expected_batch_size=None, loss_reduction="sum", generator=noise, secure_mode=True)

    def divide(opt) -> None:  # the noisy sum over the PUBLIC expected batch size (Opacus's hook runs after noise)
        for p in opt.params:
            p.grad.div_(plan.expected_batch_size)

    optimizer.attach_step_hook(divide)
    return optimizer, params


def train(top: torch.nn.Module, states: torch.Tensor, next_ids: torch.Tensor, weights: torch.Tensor,
          plan: StepPlan, seed_sequence: np.random.SeedSequence, *, start: dict | None = None,
          on_checkpoint: Callable[[int, dict], None] | None = None,
          on_step: Callable[[int], None] | None = None) -> dict:
    """Run the DP-SGD steps of ``plan`` on ``top`` (a :class:`~dpkit.ft.adapters.TopLayers`); returns the final state.

    ``states`` (n, L, hidden): the lower layers' output per record; ``next_ids`` (n, L) the next tokens;
    ``weights`` (n, L) each position's share of its record's loss. ``start``: a state from
    ``on_checkpoint`` to resume from (``step``, ``adapter``, ``optimizer``).
    """
    n = int(states.shape[0])
    noise = torch.Generator()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # Opacus warns about secure_mode without torchcsprng: we seed it ourselves
        module = GradSampleModule(top, loss_reduction="sum")
        optimizer, params = _optimizer(top, plan, noise)
    step = 0
    if start is not None:
        step = check_int("step", start["step"], minimum=0)
        top.load_adapter_state(start["adapter"])
        optimizer.original_optimizer.load_state_dict(start["optimizer"])
    top.train()
    while step < plan.steps:
        batch = poisson_batch(seed_sequence, step, n, plan.sample_rate)
        noise.manual_seed(noise_seed(seed_sequence, step))
        chunks = [batch[i:i + plan.micro_batch] for i in range(0, len(batch), plan.micro_batch)]
        if not chunks:  # an empty Poisson batch: the sum is zero, the noise is still drawn and applied
            for p in params:
                p.grad_sample = torch.zeros((0, *p.shape), dtype=p.dtype)
            optimizer.step()
        for k, chunk in enumerate(chunks):
            index = torch.from_numpy(chunk)
            length = int((weights[index] > 0).nonzero()[:, 1].max()) + 1
            loss = module(states[index, :length], next_ids[index, :length], weights[index, :length]).sum()
            with warnings.catch_warnings():  # the inputs are precomputed states: no input needs a gradient
                warnings.filterwarnings("ignore", message="Full backward hook is firing", category=UserWarning)
                loss.backward()
            if k < len(chunks) - 1:
                optimizer.signal_skip_step(do_skip=True)   # clip and add to the running sum; no noise yet
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        optimizer.zero_grad(set_to_none=True)
        step += 1
        if on_step is not None:
            on_step(step)
        if on_checkpoint is not None and (step % plan.checkpoint_every == 0 or step == plan.steps):
            on_checkpoint(step, {"step": step, "adapter": top.adapter_state(),
                                 "optimizer": optimizer.original_optimizer.state_dict()})
    top.eval()
    module._close()
    return {"step": step, "adapter": top.adapter_state(), "optimizer": optimizer.original_optimizer.state_dict()}
