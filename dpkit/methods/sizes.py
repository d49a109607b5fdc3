"""Sizes that cannot run are refused from public facts, before anything is charged or written.

:func:`check_release_sizes` is called by :func:`dpkit.methods.planning.release_plan`,
which both ``--plan`` and a run call before the run folder exists and before
the first charge. Each check reads only the configuration and public data
(the public vocabulary, the embedder's width, the public triple bank, the
local model's tokenizer and context) and the machine's available memory
(:func:`dpkit.validate.available_memory`), never the private input.
Where the run makes a check of its own, the plan calls that same function
(one owner), so the plan refuses every value the run refuses.
A refusal is a :class:`~dpkit.validate.ParameterError` naming the parameter.

What is checked (each check is the one the method would otherwise meet after
its first charge, or as an out-of-memory crash, or deep in the accountant):

* every method: the budget ``--epsilon`` at most :data:`dpkit.validate.MAX_EPSILON` (above it
  a guarantee says nothing, and the accountant's ``rho = epsilon**2 / 2`` overflows
  near 1e154: the error would name an internal ``rhos[0]``). ``release_plan`` is
  the planning step of ``dpkit synth``, so the flag is named;
* then the method's own ``check_sizes`` (:class:`~dpkit.methods.record.Method`),
  declared in its module: DP-KPS's ``N`` against the public vocabulary and its
  arrays against memory (:func:`dpkit.methods.kps.check_sizes`), private
  prediction's public prompts against the local model's context
  (:func:`dpkit.methods.pp.check_sizes`), DP-ST's ``k`` against the public
  triples (:func:`dpkit.methods.dpst.check_sizes`).
"""

from __future__ import annotations

from typing import Sequence

from dpkit.methods.registry import get_method
from dpkit.validate import check_epsilon_cap


def check_release_sizes(method_name: str, config, n_labels: int, *, labels: Sequence[str] | None = None,
                        backend=None) -> None:
    """ParameterError when a size of ``config`` cannot run (see the module docstring).

    ``labels``: the public label set (private prediction renders a prompt per label; None: unlabelled);
    ``backend``: the run's backend (private prediction checks its prompts on the local model the run will
    decode with; a backend a method cannot use is refused by name before this, in
    :func:`dpkit.methods.request.check_backend`).
    """
    check_epsilon_cap("--epsilon", config.epsilon)
    method = get_method(method_name)
    if method.check_sizes is not None:
        method.check_sizes(config, n_labels, labels=labels, backend=backend)
