"""Who decodes the batches of a private-prediction run: this process, or workers of a Ray cluster.

The driver (:func:`dpkit.privpred.pipeline.generate_synthetic`) turns the
public batch layout into :class:`~dpkit.privpred.jobs.BatchJob` items -- one per batch index still
missing from the run, each carrying its rendered private prompts and its
label's public prompt -- and hands them to an executor. The executor yields
``(job, record)`` pairs as batches finish, in any order; the driver alone writes
them into the run (``run.append``, under the run folder's lock) and assembles
the release in the order of the public layout.

Why the executor does not change the output: batch ``b`` of label ``l`` is
decoded by :func:`~dpkit.privpred.jobs.decode_job` with the generator of its own seed node, the
sealed node ``(l + 1, b)`` of the run's root (:func:`dpkit.seeds.batch_sequence`),
whoever runs it. The job carries that node and nothing else of the run's
randomness: the root never leaves the driver (a sealed node is a one-way hash
of the root and the batch index, so neither the root nor another batch's node
can be computed from it).
In reproducible mode the same seed therefore gives the same release with any
executor and any number of workers, on the same model weights, torch build and
hardware (and torch thread count: CPU kernels may round differently with
another number of threads).

Why it does not change the guarantee: the layout's batches are disjoint and
the ledger is charged ONCE for the whole layout (parallel composition) before
any job is made; a retried or resumed batch is one more draw of the same batch's
mechanism of which only one output is ever written (see
:mod:`dpkit.privpred.pipeline`). The executor choice is therefore not part of
the run's configuration: a run started with one executor may be resumed with
another.

:class:`LocalExecutor` (the default) decodes in this process.
:class:`~dpkit.privpred.ray_executor.RayExecutor` fans the jobs out to Ray
actors (the optional ``[scale]`` dependency); :func:`make_executor` builds
either from the CLI's flags.
"""

from __future__ import annotations

from typing import Iterable, Iterator, Protocol

from dpkit.privpred.jobs import BatchJob, decode_job
from dpkit.privpred import ray_executor
from dpkit.validate import ParameterError, check_int

EXECUTORS = ("local", "ray")


class Executor(Protocol):
    """Decodes jobs and yields ``(job, record)`` as each batch finishes (any order, each job once)."""

    name: str

    def decode(self, lm, jobs: Iterable[BatchJob], settings) -> Iterator[tuple[BatchJob, dict]]: ...


class LocalExecutor:
    """Today's behaviour: the jobs are decoded one after the other, in this process, on ``lm``."""

    name = "local"

    def decode(self, lm, jobs: Iterable[BatchJob], settings) -> Iterator[tuple[BatchJob, dict]]:
        for job in jobs:
            yield job, decode_job(lm, job, settings)

    def close(self) -> None:
        """Nothing to release (present so that every executor can be closed alike)."""

    def __enter__(self) -> "LocalExecutor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def check_executor(executor) -> object:
    """``executor`` if it is one (None -> a :class:`LocalExecutor`); ParameterError otherwise."""
    if executor is None:
        return LocalExecutor()
    if not callable(getattr(executor, "decode", None)):
        raise ParameterError("executor", executor, "must be None (local), a LocalExecutor or a RayExecutor")
    return executor


def make_executor(name: str, workers: int | None = None, address: str | None = None, *,
                  flags: bool = False):
    """The executor called ``name`` (``local`` or ``ray``), validated.

    ``workers`` (Ray only; default 2) actors each load the model once;
    ``address`` (Ray only) is an existing cluster's address for ``ray.init``;
    None starts a local cluster. With ``flags=True`` errors name the CLI flags
    (``--executor``, ``--workers``, ``--ray-address``) instead of the parameters.
    """
    names = {"executor": "--executor" if flags else "executor", "workers": "--workers" if flags else "workers",
             "address": "--ray-address" if flags else "address"}
    if name not in EXECUTORS:
        raise ParameterError(names["executor"], name, f"must be one of {', '.join(EXECUTORS)}")
    if workers is not None:
        check_int(names["workers"], workers, minimum=1)
    if name == "local":
        for key, value in (("workers", workers), ("address", address)):
            if value is not None:
                raise ParameterError(names[key], value, f"applies to {names['executor']} ray only")
        return LocalExecutor()
    if address is not None and (not isinstance(address, str) or not address.strip()):
        raise ParameterError(names["address"], address, "must be a Ray cluster address such as 'auto' or "
                             "'ray://HOST:10001'")
    if not ray_executor.ray_available():
        raise ParameterError(names["executor"], name, "needs the optional Ray dependency: "
                             "pip install 'dpkit[scale]'")
    return ray_executor.RayExecutor(workers=2 if workers is None else workers, address=address)
