"""Private-prediction batches on a Ray cluster: N actors, each loads the LOCAL model once and decodes whole batches.

Install with ``pip install 'dpkit[scale]'``. Use from the command line
(``dpkit synth pp --executor ray --workers N [--ray-address ADDR]``) or from
Python::

    with RayExecutor(workers=4, address="auto") as executor:
        release = dpkit.methods.pp.synthesize(records, config, run, None, seed_sequence, executor=executor)

Without ``address`` a local cluster is started (and shut down by
:meth:`RayExecutor.close`); ``address`` joins an existing one
(``ray.init(address=...)``: ``"auto"`` on a cluster node, ``"ray://HOST:10001"``
through the Ray client). If Ray is already initialised in this process, that
connection is used as it is. Every node needs the same ``dpkit`` and model
weights (``dpkit prepare`` fills the model cache).

Privacy: the Ray cluster must lie INSIDE the data owner's trust boundary. The
rendered PRIVATE prompts travel from the driver to the workers through Ray's
object store and RPCs, and so does each batch's own seed node (in release mode
too), never the run's root: a worker (or an object spilled to a node's disk) can
regenerate at most the noise of the batches it was sent, nothing else. Ray
does not encrypt that traffic by default: on a network that is not the data
owner's own, enable Ray's TLS (set ``RAY_USE_TLS=1`` with ``RAY_TLS_SERVER_CERT``,
``RAY_TLS_SERVER_KEY`` and ``RAY_TLS_CA_CERT`` on every node and on the driver
before ``ray start`` / ``ray.init``), and restrict who can reach the cluster's
ports. The workers only run the local model (:func:`dpkit.models.lm.load_lm`, or
llama.cpp's :func:`~dpkit.privpred.llamacpp_engine.load_private_llamacpp` when the
driver decodes on llama.cpp; loaded by its public name, never pickled); API backends stay refused for
private prediction. What comes back to the driver is each batch's released
tokens only (:meth:`~dpkit.privpred.decode.BatchResult.to_record`), and the
driver alone writes the run and the release.

Failures: a worker process that dies is restarted by Ray (``max_restarts``) and
its batch is retried on it (``max_task_retries``); the ledger was charged once,
for the whole layout, before any batch was sent, and a retry is never charged
again. A worker that keeps dying raises :class:`WorkerFailure` (a
:class:`~dpkit.backends.base.BackendError`: the CLI keeps the run and exits 1;
rerunning the command resumes it, skipping the finished batches).

Fault injection for tests: with the environment variable ``DPKIT_RAY_CRASH_ONCE``
set to a file path on the driver, the first worker to start a batch creates that
file and kills its own process (``os._exit``), once per path.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import resource
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np

from dpkit import runtime
from dpkit.backends.base import BackendError
from dpkit.models.lm import BUNDLED_LM, LocalLM, load_lm
from dpkit.privpred.jobs import BatchJob, decode_job
from dpkit.privpred.llamacpp_engine import is_llamacpp, load_private_llamacpp
from dpkit.validate import ParameterError, check_int, check_positive

CRASH_ONCE_VARIABLE = "DPKIT_RAY_CRASH_ONCE"


class WorkerFailure(BackendError):
    """A Ray worker died more often than ``max_restarts`` allows; the run is kept and can be resumed."""


def ray_available() -> bool:
    """Whether the optional ``ray`` package is installed."""
    return importlib.util.find_spec("ray") is not None


def _ray():
    """The ``ray`` module: the one place this module imports the optional dependency (on first use)."""
    import ray

    return ray


def model_spec(lm):
    """The public name a worker loads ``lm`` by (None = the bundled PyTorch model; ``("llamacpp", path or None)``
    for llama.cpp, :mod:`dpkit.privpred.llamacpp_engine`); ParameterError if it has none."""
    if is_llamacpp(lm):
        return ("llamacpp", lm.spec)
    if not isinstance(lm, LocalLM):
        raise ParameterError("model", lm, "a Ray worker loads the model by its name: give None, 'local', a "
                             "LocalLM from dpkit.models.load_lm or the local backend")
    if lm.name == BUNDLED_LM:
        return None
    path = Path(str(lm.name))
    return str(path.resolve()) if path.exists() else str(lm.name)  # a local folder, whatever a worker's cwd


class DecodeWorker:
    """One Ray actor's state: the local model, loaded once when the actor starts (or restarts)."""

    def __init__(self, model, device: str | None, threads: int):
        runtime.setup(threads)
        if isinstance(model, tuple):  # ("llamacpp", path or None): the worker's CPUs are its llama.cpp threads
            os.environ["DPKIT_THREADS"] = str(threads)
            self.lm = load_private_llamacpp(model[1])
        else:
            self.lm = load_lm(model, device)
        self.batches = 0

    def decode(self, job: BatchJob, settings) -> dict:
        marker = os.environ.get(CRASH_ONCE_VARIABLE)
        if marker and self.batches == 0:
            try:
                os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                pass
            else:
                os._exit(1)  # the injected crash: this process dies in the middle of its first batch
        self.batches += 1
        return decode_job(self.lm, job, settings)

    def peak_rss_mb(self) -> float:
        """This worker process's peak resident memory, in MiB."""
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class RayExecutor:
    """Decodes jobs on ``workers`` Ray actors; results come back in completion order, each job once.

    ``threads_per_worker`` CPUs (torch threads) and ``gpus_per_worker`` GPUs are
    requested per actor (``device`` None lets each worker pick CUDA when it has
    one). ``in_flight`` jobs are queued per worker so that none waits for the
    driver. ``init_options`` go to ``ray.init`` (e.g. ``_temp_dir``).
    """

    name = "ray"

    def __init__(self, workers: int = 2, address: str | None = None, *, threads_per_worker: int = 1,
                 gpus_per_worker: float = 0.0, device: str | None = None, max_restarts: int = 3,
                 in_flight: int = 2, init_options: dict | None = None):
        self.workers = check_int("workers", workers, minimum=1)
        self.address = address
        self.threads_per_worker = check_int("threads_per_worker", threads_per_worker, minimum=1)
        self.gpus_per_worker = check_positive("gpus_per_worker", gpus_per_worker, allow_zero=True)
        self.device = device
        self.max_restarts = check_int("max_restarts", max_restarts, minimum=0)
        self.in_flight = check_int("in_flight", in_flight, minimum=1)
        self.init_options = dict(init_options or {})
        if not ray_available():
            raise ParameterError("executor", "ray", "needs the optional Ray dependency: pip install 'dpkit[scale]'")
        self._actors: list = []
        self._spec: object = ()
        self._started = False

    # ------------------------------------------------------------ cluster
    def _connect(self):
        ray = _ray()
        if not ray.is_initialized():
            options = {"include_dashboard": False, "log_to_driver": False, "logging_level": "ERROR",
                       **self.init_options}
            if self.address is not None:
                ray.init(address=self.address, **options)
            else:
                options.setdefault("num_cpus", self.workers * self.threads_per_worker)
                ray.init(**options)
            self._started = True
        return ray

    def _ensure_actors(self, ray, spec) -> None:
        if self._actors and self._spec == spec:
            return
        self._kill_actors()
        env = {CRASH_ONCE_VARIABLE: os.environ[CRASH_ONCE_VARIABLE]} if os.environ.get(CRASH_ONCE_VARIABLE) else {}
        worker = ray.remote(DecodeWorker).options(
            num_cpus=self.threads_per_worker, num_gpus=self.gpus_per_worker, max_restarts=self.max_restarts,
            max_task_retries=self.max_restarts, runtime_env={"env_vars": env} if env else None)
        self._actors = [worker.remote(spec, self.device, self.threads_per_worker) for _ in range(self.workers)]
        self._spec = spec

    def _kill_actors(self) -> None:
        if self._actors:
            ray = _ray()
            for actor in self._actors:
                ray.kill(actor)
        self._actors = []
        self._spec = ()

    # ------------------------------------------------------------ work
    def decode(self, lm, jobs: Iterable[BatchJob], settings) -> Iterator[tuple[BatchJob, dict]]:
        """Send each job to a worker (the model named by ``lm``); yield ``(job, record)`` as they finish.

        A task carries its job (with the batch's own seed node) and the public
        settings: nothing else of the run's randomness reaches the cluster."""
        jobs = iter(jobs)
        first = next(jobs, None)
        if first is None:  # nothing left to decode (a fully resumed run): no cluster, no model
            return
        spec = model_spec(lm)
        ray = self._connect()
        self._ensure_actors(ray, spec)
        settings_ref = ray.put(settings)
        queue = itertools.chain([first], jobs)
        running: dict = {}

        def submit(worker: int) -> None:
            job = next(queue, None)
            if job is not None:
                running[self._actors[worker].decode.remote(job, settings_ref)] = (job, worker)

        for _ in range(self.in_flight):
            for worker in range(len(self._actors)):
                submit(worker)
        while running:
            ready, _ = ray.wait(list(running), num_returns=1)
            job, worker = running.pop(ready[0])
            try:
                record = ray.get(ready[0])
            except ray.exceptions.RayActorError as error:
                raise WorkerFailure(f"Ray worker {worker} died more than max_restarts={self.max_restarts} times "
                                    f"(last on batch {job.batch_id}): {error}") from None
            yield job, record
            submit(worker)

    def start(self, lm=None) -> "RayExecutor":
        """Connect and start the workers now, each loading the model named by ``lm`` (None = the bundled one);
        returns when every worker has loaded it (e.g. to leave start-up out of a timing)."""

        ray = self._connect()
        self._ensure_actors(ray, None if lm is None else model_spec(lm))
        ray.get([actor.peak_rss_mb.remote() for actor in self._actors])
        return self

    def peak_rss_mb(self) -> list[float]:
        """Each live worker's peak resident memory in MiB (empty before the first :meth:`decode`)."""
        if not self._actors:
            return []
        return [float(x) for x in _ray().get([actor.peak_rss_mb.remote() for actor in self._actors])]

    def close(self) -> None:
        """Stop the workers; shut Ray down if this executor started it."""
        self._kill_actors()
        if self._started:
            _ray().shutdown()
            self._started = False

    def __enter__(self) -> "RayExecutor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
