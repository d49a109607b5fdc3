"""``dpkit experiment compare``: the method comparison at a size preset, one JSON per cell, resumable.

A *cell* is one (data set, method, epsilon, seed). For each cell the command
makes one release with the method's own ``synthesize``
(:data:`dpkit.methods.METHODS`, the code ``dpkit synth`` runs), scores it with the
project's classifier on the data set's real test texts, and writes
``<out>/<dataset>__<method>__eps-<epsilon>__seed-<seed>.json`` at once
(atomically). Next to the methods, the cell ``real`` (epsilon ``inf``) scores
real training texts of the same size and records the majority class.

Every JSON carries its provenance: git commit, machine (platform, CPU count),
runtime (the local model's runtime, torch and llama.cpp versions), model, the
preset's sizes, the release's wall time, dpkit's version, a SHA-256 digest
of its own content, and a ``seal``: HMAC-SHA-256 of that content under the
writing user's results key (:func:`results_key`, in the dpkit cache, never in
the folder) with the key's public id.

What that checks, exactly: anyone can check the digest (accidental damage);
only the user who wrote a cell can check its seal, which an edit that
recomputes the digest breaks; and the cache records which cells each key
sealed (:func:`register_sealed`), so removing a seal, or changing its key id,
does not turn a cell this user sealed into an unsealed one. The committed ``results/compare`` cells were
sealed on the machine that made them (or not sealed: written before seals), so
for everyone else they are checked for accidental corruption only; their
authenticity is the repository's history, not dpkit's.

Resume: the command takes a lock on ``<out>`` (one writer; a second one is
refused, exit 2) and skips every cell whose JSON exists and verifies (parses,
names the same cell, preset and sizes, digest and seal intact). A stored cell
that fails its digest or seal is refused (exit 2, naming the file) and made
again only with ``--recompute-failed``, which names each such cell; a cell
written at other sizes or with another model is made again. A crash loses at
most the cell in progress; rerunning the same command continues.

Nothing written here is a differentially private release: each cell is a seeded
teaching run (its mechanisms calibrated to its epsilon, its seed fixed and stored)
and another run on the same training records, so neither a cell nor the grid has a
guarantee (see the comparison chapter). Every cell says so in its ``note``
(:data:`~dpkit.experiments.cells.TEACHING_RUN`). It is a measurement on public
benchmark data. Each cell stores its synthetic texts and their measures
(:mod:`dpkit.textmetrics`); a command-line run makes again a stored cell that lacks
its texts (cells written before they were kept).

Seeds: every preset but ``smoke`` and ``model-probe`` takes 5 seeds, so that a
claim such as "rises with epsilon" rests on paired same-seed differences with a
t interval (:func:`dpkit.experiments.stored.paired_difference`). ``--datasets``
runs one data set of a preset at a time: the ``full`` preset at 5 seeds does not fit
2 hours on the 2-core machine, one data set of it does (``make results``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
import platform
import re
import subprocess
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterator, Sequence

from dpkit.experiments.cells import TEACHING_RUN, LocalCells, package_version
from dpkit.experiments.compare import METHOD_NAMES, VARIANT_ROWS, Sizes
from dpkit.io import atomic_write_bytes
from dpkit.models.named import check_local_model
from dpkit.runs import lock
from dpkit.runs.codec import digest, keyed_digest
from dpkit.runtime import cache_dir
from dpkit.validate import ParameterError

REAL = "real"  # the real-data reference cell: real training texts of the same size (epsilon inf)
#: The reference that reads no record (``--methods ...,label_only``): the bundled model prompted with the document
#: type and the label alone (dpkit.experiments.label_only), one cell per data set and seed at epsilon inf.
LABEL_ONLY = "label_only"
PROVENANCE_KEYS = ("git_commit", "machine", "runtime", "model", "dpkit_version", "created")


@dataclass(frozen=True)
class Preset:
    """Public sizes of one comparison run (the same for every cell)."""

    name: str
    datasets: tuple[str, ...]
    epsilons: tuple[float, ...]
    seeds: tuple[int, ...]
    sizes: Sizes
    max_per_class: int            # records read per label, split into private training and test texts
    test_fraction: float
    n_bootstrap: int = 200
    smoke: bool = False
    methods: tuple[str, ...] = METHOD_NAMES
    estimate: str = ""            # wall time on the 2-core CPU machine: measured where it says so, else an ESTIMATE

    def cells(self) -> Iterator[tuple[str, str, float, int]]:
        """Seed by seed, every data set within a seed: a sweep stopped early holds whole seeds."""
        for seed in self.seeds:
            for dataset in self.datasets:
                yield dataset, REAL, math.inf, seed
                if LABEL_ONLY in self.methods:  # data-independent: one cell, whatever the epsilon
                    yield dataset, LABEL_ONLY, math.inf, seed
                for epsilon in self.epsilons:
                    for method in self.methods:
                        if method != LABEL_ONLY:
                            yield dataset, method, epsilon, seed

    def public_sizes(self) -> dict:
        sizes = {key: value for key, value in asdict(self.sizes).items()
                 if not (key in LATER_SIZES and value == LATER_SIZES[key])}
        return {"sizes": sizes, "max_per_class": self.max_per_class,
                "test_fraction": self.test_fraction, "n_bootstrap": self.n_bootstrap, "smoke": self.smoke}


#: The holdout preset's small sizes with every method as `dpkit synth` runs it: DP-ST's topic variant with its rewrite
#: and label share 0.3, private prediction's no-repeat rule (the held-out presets since the sixth set, the epsilon grid).
AS_SYNTH_SMALL = Sizes(per_class=8, max_new_tokens=40, pp_per_class=2, pp_max_new_tokens=24, dpst_reconstruct=True,
                       dpst_variant="topic", dpst_label_share=0.3, pp_no_repeat_ngram=3)

#: Fields of :class:`~dpkit.experiments.compare.Sizes` added after cells were stored, with the value every
#: earlier cell was made at: a cell's stored sizes name such a field only when a preset sets another value, so
#: the cells stored before it keep verifying (they were made at exactly that value).
LATER_SIZES = {"dpst_variant": "document", "pp_no_repeat_ngram": 0}

#: The seeds of every preset but smoke and model-probe: paired same-seed comparisons need more than 3.
SEEDS = (0, 1, 2, 3, 4)

PRESETS: dict[str, Preset] = {
    "smoke": Preset("smoke", ("rotten_tomatoes",), (4.0,), (0,), Sizes.smoke(), max_per_class=12,
                    test_fraction=0.5, n_bootstrap=50, smoke=True,
                    estimate="about a minute (one data set, one epsilon, one seed, tiny sizes; 29 s measured on 2 busy cores)"),
    "book": Preset("book", ("rotten_tomatoes", "health_tweets"), (1.0, 4.0, 16.0, math.inf), SEEDS,
                   Sizes(per_class=8, max_new_tokens=16), max_per_class=100, test_fraction=0.5,
                   estimate="ESTIMATE, not measured: shorter than medium (100 records per label read, 8 texts of "
                            "16 tokens per label, private prediction's batches of about 6 prompts) though with four "
                            "epsilons"),
    # What fits this 2-core machine in under an hour while other work shares it: the realistic data sizes
    # (1,000 private training records and 200 test texts per label, two data sets, epsilon 1, 4 and infinity,
    # 3 seeds), with far fewer and shorter synthetic texts than the full preset: 10 texts of 32 tokens per
    # label for DP-KPS and DP-ST, 4 texts of 16 tokens per label for private prediction (which reads the
    # 4 x 8 records per label its batches hold). Measured before choosing, at load average 5 to 13: one DP-KPS
    # release at 25 x 48 took 56 s on an idle machine and one at 20 x 32 had not finished after 10 minutes
    # under load; private prediction's 20 texts x 32 tokens (PyTorch) took over 6 minutes. The run itself
    # took about 42 minutes at 3 seeds (see results/README.md); 5 seeds take 5/3 of it.
    "medium": Preset("medium", ("rotten_tomatoes", "health_tweets"), (1.0, 4.0, math.inf), SEEDS,
                     Sizes(per_class=10, max_new_tokens=32, pp_per_class=4, pp_max_new_tokens=16),
                     max_per_class=1200, test_fraction=200 / 1200,
                     estimate="ESTIMATE from the measured 3-seed run (42 minutes on the shared 2-core CPU, load "
                              "average 6-17): about 70 minutes at 5 seeds"),
    # One data set, one pair of epsilons, 5 seeds, the medium preset's data sizes with fewer, shorter texts: the
    # smallest run whose "rises with epsilon" is a paired same-seed comparison (epsilon 1 against 8, the issue's
    # target epsilon). At 10 texts of 32 tokens per label it took 151 s per DP-KPS and 175 s per private-prediction
    # release at load average 13 (about 70 minutes in all), so it writes 6 texts of 24 tokens per label (3 of 16
    # for private prediction).
    "paired-small": Preset("paired-small", ("health_tweets",), (1.0, 8.0), SEEDS,
                           Sizes(per_class=6, max_new_tokens=24, pp_per_class=3, pp_max_new_tokens=16),
                           max_per_class=1200, test_fraction=200 / 1200,
                           estimate="ESTIMATE: about 35 minutes on the 2-core CPU at load average 13 (35 cells); "
                                    "see results/README.md for the stored run"),
    # The realistic sizes: 1,000 private training records and 200 test texts per label, 50 synthetic
    # texts of 48 tokens per label for every method, epsilon 1, 4 and infinity, 3 seeds, 2 data sets. DP-KPS reads
    # all 1,000 records per label; DP-ST privatizes the 50 it releases; private prediction reads the 50 x 8 = 400
    # records per label its batches hold (expected batch size s = 8). Probed before choosing, on the idle machine
    # with llama.cpp (2 threads): one private-prediction text of 48 tokens costs 3.7 s at s = 8 and 7.0 s at s = 20,
    # so s = 20 (1,000 records per label) would take about twice s = 8's private-prediction time and does not fit
    # 2 hours beside DP-KPS. Measured run (commit 9566ae0, idle machine, load about 1.5): 114 min of cell wall
    # time, of which private prediction 93 min (its token cap binds at epsilon 4 at 48 tokens, so epsilon 4 and
    # infinity are decodings of their own), DP-KPS 20 min, DP-ST 1 min. That run had 3 seeds; the preset now
    # takes 5, which does not fit 2 hours: run one data set at a time (--datasets; `make results`).
    "full": Preset("full", ("rotten_tomatoes", "health_tweets"), (1.0, 4.0, math.inf), SEEDS,
                   Sizes(per_class=50, max_new_tokens=48), max_per_class=1200, test_fraction=200 / 1200,
                   estimate="ESTIMATE from the measured 3-seed run (1 hour 54 minutes on the idle 2-core CPU, "
                            "llama.cpp, 2 threads): about 3 hours 10 minutes at 5 seeds, about 1 hour 35 minutes per "
                            "data set (--datasets)"),
    # The check on data nobody tuned on (issue 33, data/HOLDOUT.md): the held-out House of Commons speeches beside two
    # tuning sets, at the target epsilon 8, 5 seeds, every method in the data's voice and DP-ST with its LLM
    # rewrite. 8 texts of 40 tokens per label (private prediction: 2 of 24 tokens, s = 8). A 4-cell probe on the
    # speeches (2 texts of 12 tokens per label) took 116 s, 60 s of it private prediction's prefill of long speeches.
    "holdout": Preset("holdout", ("commons_speeches", "medical", "health_tweets"), (8.0,), SEEDS,
                      Sizes(per_class=8, max_new_tokens=40, pp_per_class=2, pp_max_new_tokens=24,
                            dpst_reconstruct=True),
                      max_per_class=1200, test_fraction=200 / 1200,
                      estimate="ESTIMATE, not measured: about 50 minutes on the idle 2-core CPU (15 data-set seeds of "
                               "2 to 5 minutes each)"),
    # The third held-out set (data/HOLDOUT.md, chosen 26 Nov 2026 before that session's tuning): questions people
    # asked online, finance (FiQA) against medication (MedicationQA), a topic that real data separates at 0.98-1.00
    # even at 8 questions per label; the holdout preset's sizes, so the two tables compare.
    "holdout-questions": Preset("holdout-questions", ("online_questions",), (8.0,), SEEDS,
                                Sizes(per_class=8, max_new_tokens=40, pp_per_class=2, pp_max_new_tokens=24,
                                      dpst_reconstruct=True),
                                max_per_class=1200, test_fraction=0.2,
                                estimate="ESTIMATE, not measured: about 8 minutes on the idle 2-core CPU (5 data-set "
                                         "seeds of short questions)"),
    # The fourth held-out set (data/HOLDOUT.md, chosen 27 Nov 2026 before that session's tuning): descriptions of
    # everyday situations, activity (HellaSwag) against social (Social IQa); real data 0.97-0.98 at 8 per label. The
    # holdout preset's sizes, so the tables compare.
    "holdout-situations": Preset("holdout-situations", ("everyday_situations",), (8.0,), SEEDS,
                                 Sizes(per_class=8, max_new_tokens=40, pp_per_class=2, pp_max_new_tokens=24,
                                       dpst_reconstruct=True),
                                 max_per_class=1200, test_fraction=200 / 1200,
                                 estimate="ESTIMATE, not measured: about 8 minutes on the idle 2-core CPU (5 data-set "
                                          "seeds of short descriptions)"),
    # DP-ST's topic variant (dpkit.dpst.topic, the default of `dpkit synth dpst` since 27 Nov 2026) at the holdout
    # preset's sizes, with `dpkit synth dpst`'s label share: DP-ST alone on the two tuning sets of the holdout preset
    # (whose stored DP-ST cells are the document variant's), and on the fourth held-out set.
    "holdout-topic": Preset("holdout-topic", ("medical", "health_tweets"), (8.0,), SEEDS,
                            Sizes(per_class=8, max_new_tokens=40, pp_per_class=2, pp_max_new_tokens=24,
                                  dpst_reconstruct=True, dpst_variant="topic", dpst_label_share=0.3),
                            max_per_class=1200, test_fraction=200 / 1200, methods=("dpst",),
                            estimate="ESTIMATE, not measured: a few minutes (10 data-set seeds of 16 rewrites)"),
    "holdout-situations-topic": Preset("holdout-situations-topic", ("everyday_situations",), (8.0,), SEEDS,
                                       Sizes(per_class=8, max_new_tokens=40, pp_per_class=2, pp_max_new_tokens=24,
                                             dpst_reconstruct=True, dpst_variant="topic", dpst_label_share=0.3),
                                       max_per_class=1200, test_fraction=200 / 1200, methods=("dpst",),
                                       estimate="ESTIMATE, not measured: a few minutes (5 data-set seeds of 16 "
                                                "rewrites)"),
    # The fifth held-out set (data/HOLDOUT.md, chosen 27 Nov 2026 before the topic variant got its defaults): short
    # problems, arithmetic (ASDiv) against practical (PIQA); real data 0.96-0.99 at 8 per label. The holdout
    # preset's sizes, every method, DP-ST as `dpkit synth dpst` runs it (topic variant, label share 0.3).
    "holdout-problems": Preset("holdout-problems", ("everyday_problems",), (8.0,), SEEDS,
                               Sizes(per_class=8, max_new_tokens=40, pp_per_class=2, pp_max_new_tokens=24,
                                     dpst_reconstruct=True, dpst_variant="topic", dpst_label_share=0.3),
                               max_per_class=1200, test_fraction=200 / 1200,
                               estimate="ESTIMATE, not measured: about 8 minutes on the idle 2-core CPU (5 data-set "
                                        "seeds of short problems)"),
    # The sixth held-out set (data/HOLDOUT.md, chosen 27 Nov 2026 before private prediction's no-repeat rule): short
    # questions, everyday (CommonsenseQA) against encyclopedic (BoolQ); real data 0.91-0.93 at 8 per label. The
    # holdout preset's sizes, every method as `dpkit synth` runs it (DP-ST topic variant, no-repeat rule on).
    "holdout-general": Preset("holdout-general", ("general_questions",), (8.0,), SEEDS,
                              AS_SYNTH_SMALL, max_per_class=1200, test_fraction=200 / 1200,
                              estimate="measured: 2 min 53 s on the idle 2-core CPU (5 data-set seeds of short "
                                       "questions)"),
    # The privacy-utility trade-off at today's defaults: every method as `dpkit synth` runs it (DP-ST's topic variant
    # with its rewrite, private prediction's no-repeat rule), on the two tuning sets whose labels real data learns,
    # epsilon 1, 4, 8 and infinity, 5 seeds paired across epsilon, 8 texts per label for every method (private
    # prediction's of 24 tokens, for time). The stored full and paired-small runs were made before the voice rules.
    "epsilon-grid": Preset("epsilon-grid", ("health_tweets", "medical"), (1.0, 4.0, 8.0, math.inf), SEEDS,
                           replace(AS_SYNTH_SMALL, pp_per_class=0),  # 8 texts per label for every method
                           max_per_class=1200, test_fraction=200 / 1200,
                           estimate="measured: 31 minutes on the idle 2-core CPU (private prediction decodes once for "
                                    "epsilon 4, 8 and infinity: its cap binds only at epsilon 1)"),
    # The seventh held-out set (data/HOLDOUT.md, chosen 27 Nov 2026 to test private prediction's no-repeat rule on
    # short texts): one-sentence passages, news (XSum summaries) against policy (privacy-policy passages); real data
    # 0.96-0.98 at 8 per label. The holdout-general preset's sizes and settings.
    "holdout-passages": Preset("holdout-passages", ("short_passages",), (8.0,), SEEDS,
                               AS_SYNTH_SMALL, max_per_class=1200, test_fraction=200 / 1200,
                               estimate="measured: 4 min 22 s on the idle 2-core CPU (5 data-set seeds of short "
                                        "passages)"),
    # Issue 33's target with the noise off: on the bundled data at epsilon infinity, assistant talk at most 5% for
    # every method, and the real-vs-synthetic AUROC before and after the voice rules. The holdout preset's sizes on
    # the two data sets of the stored comparison, 5 seeds; benchmarks/voice_before_after.py makes the same cells at
    # the last commit before the voice rules (9f2858c) for the "before".
    "infinity": Preset("infinity", ("rotten_tomatoes", "health_tweets"), (math.inf,), SEEDS,
                       Sizes(per_class=8, max_new_tokens=40, pp_per_class=2, pp_max_new_tokens=24,
                             dpst_reconstruct=True),
                       max_per_class=1200, test_fraction=200 / 1200,
                       estimate="ESTIMATE, not measured: about 4 minutes on the idle 2-core CPU (the holdout "
                                "preset's sizes, 10 data-set seeds)"),
    # DP-ST's topic variant with the noise off, on the infinity preset's data sets and sizes (its stored DP-ST cells
    # are the slot variant's): DP-ST alone.
    "infinity-topic": Preset("infinity-topic", ("rotten_tomatoes", "health_tweets"), (math.inf,), SEEDS,
                             Sizes(per_class=8, max_new_tokens=40, pp_per_class=2, pp_max_new_tokens=24,
                                   dpst_reconstruct=True, dpst_variant="topic", dpst_label_share=0.3),
                             max_per_class=1200, test_fraction=200 / 1200, methods=("dpst",),
                             estimate="ESTIMATE, not measured: a few minutes (10 data-set seeds of 16 rewrites)"),
    # The larger model against the bundled one (--model): the two LLM-based methods at one seed, epsilon 4 and
    # infinity, 20 texts of 48 tokens per label (private prediction: 2 texts of 32 tokens per label, s = 8).
    "model-probe": Preset("model-probe", ("rotten_tomatoes", "health_tweets"), (4.0, math.inf), (0,),
                          Sizes(per_class=20, max_new_tokens=48, pp_per_class=2, pp_max_new_tokens=32),
                          max_per_class=1200, test_fraction=200 / 1200, methods=("kps", "pp"),
                          estimate="measured in docs/qwen.md: minutes with the bundled model, longer with the 1.5B one"),
}


def get_preset(name: str) -> Preset:
    if name not in PRESETS:
        raise ParameterError("--preset", name, f"must be one of {sorted(PRESETS)}")
    return PRESETS[name]


def parse_methods(text: str) -> tuple[str, ...]:
    """``"kps,dpst"`` -> ``("kps", "dpst")``, each one of :data:`~dpkit.experiments.compare.METHOD_NAMES`."""
    names = tuple(dict.fromkeys(part.strip() for part in str(text).split(",") if part.strip()))
    allowed = METHOD_NAMES + tuple(VARIANT_ROWS) + (LABEL_ONLY,)  # pp_ink: InvisibleInk; label_only: the reference
    if not names or any(name not in allowed for name in names):
        raise ParameterError("--methods", text, f"must list some of {','.join(allowed)}, separated by commas")
    return names


def parse_datasets(text: str, preset: Preset) -> tuple[str, ...]:
    """``"health_tweets"`` -> ``("health_tweets",)``: some of the preset's data sets, separated by commas."""
    names = tuple(dict.fromkeys(part.strip() for part in str(text).split(",") if part.strip()))
    if not names or any(name not in preset.datasets for name in names):
        raise ParameterError("--datasets", text, f"must list some of {','.join(preset.datasets)} (the {preset.name} "
                                                 "preset's data sets), separated by commas")
    return names


def cell_path(out: Path, dataset: str, method: str, epsilon: float, seed: int) -> Path:
    return Path(out) / f"{dataset}__{method.replace(' ', '_')}__eps-{_eps(epsilon)}__seed-{seed}.json"


def _eps(epsilon: float) -> str:
    return "inf" if math.isinf(epsilon) else f"{epsilon:g}"


def _digest(body: dict) -> str:
    return digest({k: v for k, v in body.items() if k not in ("digest", "seal")})


KEY_NAME = "results.key"  # in the user's dpkit cache (dpkit.runtime.cache_dir()), never in a results folder


def results_key(*, create: bool = False) -> bytes | None:
    """This user's key for sealing stored cells (32 random bytes, mode 0600), or None when there is none yet.

    It lives in the dpkit cache, outside every results folder: a folder (and a
    commit of it) carries seals but never the key that makes them.
    """
    path = cache_dir() / KEY_NAME
    if path.is_file():
        return path.read_bytes()
    if not create:
        return None
    atomic_write_bytes(path, os.urandom(32))
    os.chmod(path, 0o600)
    return path.read_bytes()


def key_id(key: bytes) -> str:
    """A public name of a key (the first 16 hex digits of its SHA-256), stored beside each seal."""
    return hashlib.sha256(key).hexdigest()[:16]


def seal(body: dict, key: bytes) -> dict:
    """``{"key_id", "hmac"}``: HMAC-SHA-256 under ``key`` of the cell's canonical JSON (without digest and seal)."""
    return {"key_id": key_id(key), "hmac": keyed_digest(key, {k: v for k, v in body.items()
                                                               if k not in ("digest", "seal")})}


def integrity_problem(body, key: bytes | None = None, *, sealed_by_key: bool = False) -> str | None:
    """Why a stored cell's content cannot be trusted (None when it can): its SHA-256 digest does not match
    (an accident or an edit), or its seal under this user's ``key`` does not (an edit that recomputed the
    digest), or it has no seal under ``key`` although ``key`` sealed it (``sealed_by_key``, :func:`sealed_here`:
    the seal was removed or its key id changed). A cell of any other folder sealed
    under another key, or not sealed (written on another machine, e.g. the committed results), can only be
    checked by its digest: for accidental corruption, not an editor."""
    if not isinstance(body, dict) or body.get("digest") != _digest(body):
        return "its SHA-256 digest does not match its content (edited or damaged)"
    stored = body.get("seal")
    if key is not None and sealed_by_key and not (isinstance(stored, dict) and stored.get("key_id") == key_id(key)):
        return ("it carries no seal under your results key, although you sealed it (the seal was removed or "
                "its key id changed)")
    if key is not None and isinstance(stored, dict) and stored.get("key_id") == key_id(key):
        if not isinstance(stored.get("hmac"), str) or not hmac.compare_digest(stored["hmac"],
                                                                              seal(body, key)["hmac"]):
            return "its seal under your results key does not match (edited, and the digest recomputed)"
    return None


SEALED_CELLS = "results-sealed.json"  # in the dpkit cache beside the key: the cells each key sealed, by folder


def _sealed_registry() -> dict:
    try:
        registry = json.loads((cache_dir() / SEALED_CELLS).read_text())
    except (OSError, ValueError):
        return {}
    return registry if isinstance(registry, dict) else {}


def register_sealed(path: Path, key: bytes) -> None:
    """Record (in the dpkit cache, never in the results folder) that ``key`` sealed the cell file ``path``."""
    registry = _sealed_registry()
    folder = registry.setdefault(str(Path(path).parent.resolve()), {})
    if folder.get(Path(path).name) != key_id(key):
        folder[Path(path).name] = key_id(key)
        atomic_write_bytes(cache_dir() / SEALED_CELLS, json.dumps(registry, indent=1, sort_keys=True).encode())


def sealed_here(folder: Path, key: bytes | None) -> set[str]:
    """The cell files of ``folder`` this user sealed under ``key`` (:func:`register_sealed`): each of them must
    still carry that seal. Cells written elsewhere (the committed results, a colleague's) are not among them."""
    if key is None:
        return set()
    names = _sealed_registry().get(str(Path(folder).resolve()), {})
    return {name for name, kid in names.items() if kid == key_id(key)} if isinstance(names, dict) else set()


def cell_problem(path: Path, preset: Preset, dataset: str, method: str, epsilon: float, seed: int,
                 model: str | None = None, key: bytes | None = None, *,
                 sealed: set[str] = frozenset()) -> tuple[str, str] | None:
    """``(kind, reason)`` when ``path`` does not hold this cell, unaltered, at this preset's sizes (and by
    ``model`` when given); None when it does. ``kind``: ``missing``; ``integrity`` (unreadable, another cell's
    content, a digest or seal that does not match); ``stale`` (another preset, sizes, provenance or model:
    written by other code or settings, made again without a word)."""
    path = Path(path)
    if not path.exists():
        return "missing", "no file"
    try:
        body = json.loads(path.read_text())
    except (OSError, ValueError):
        return "integrity", "it is not valid JSON (truncated or damaged)"
    problem = integrity_problem(body, key, sealed_by_key=path.name in sealed)
    if problem is not None:
        return "integrity", problem
    if body.get("cell") != {"dataset": dataset, "method": method, "epsilon": _eps(epsilon), "seed": seed}:
        return "integrity", "it holds another cell than its file name says"
    if (body.get("preset") != preset.name or body.get("sizes") != _plain(preset.public_sizes())
            or not all(key_ in body.get("provenance", {}) for key_ in PROVENANCE_KEYS)):
        return "stale", "written at other sizes or by older code"
    if model is not None and body["provenance"]["model"] != model:
        return "stale", "written with another model"
    return None


def verifies(path: Path, preset: Preset, dataset: str, method: str, epsilon: float, seed: int,
             model: str | None = None) -> bool:
    """Whether ``path`` holds this cell, written at this preset's sizes (and by ``model`` when given), unaltered
    (its digest, and its seal when it is sealed under this user's results key)."""
    key = results_key()
    return cell_problem(path, preset, dataset, method, epsilon, seed, model, key,
                        sealed=sealed_here(Path(path).parent, key)) is None


def _plain(value):
    """JSON-safe: numpy scalars to Python, non-finite floats to strings."""
    return json.loads(json.dumps(value, default=_default, allow_nan=True).replace("NaN", '"nan"')
                      .replace("-Infinity", '"-inf"').replace("Infinity", '"inf"'))


def _default(value):
    if hasattr(value, "item"):
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


def machine() -> dict:
    return {"platform": platform.platform(), "machine": platform.machine(), "cpu_count": os.cpu_count(),
            "python": platform.python_version()}


def git_commit() -> str | None:
    root = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("+dirty" if dirty else "")


@dataclass
class Sweep:
    """One writer of ``out``: holds its lock while the cells run (see the module docstring)."""

    preset: Preset
    out: Path
    run_cell: Callable[[str, str, float, int], dict]  # -> {"metrics", "release", "wall_s", "runtime", "model"}
    progress: Callable[[str], None] = print
    written: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    only: tuple = ()  # a slice: run only these cells of the preset (empty: every cell)
    model: str | None = None  # the model the cells are made with: a stored cell of another model is made again
    require_texts: bool = False  # a stored method cell without its texts (older code) is made again
    recompute_failed: bool = False  # a stored cell that fails its digest or seal: refused (False) or made again

    def run(self) -> "Sweep":
        self.out = Path(self.out)
        self.out.mkdir(parents=True, exist_ok=True)
        lock.acquire(self.out, self)  # RunInUseError (exit 2) while another process writes this folder
        try:
            commit, version = git_commit(), package_version("dpkit")
            cells = [c for c in self.preset.cells() if not self.only or c in self.only]
            key = results_key(create=True)
            sealed = sealed_here(self.out, key)
            problems = {c: cell_problem(cell_path(self.out, *c), self.preset, *c, self.model, key,
                                        sealed=sealed) for c in cells}
            failed = {c: why for c, (kind, why) in ((c, p) for c, p in problems.items() if p) if kind == "integrity"}
            if failed and not self.recompute_failed:
                first, why = next(iter(failed.items()))
                raise ParameterError("stored cell", cell_path(self.out, *first).name,
                                     f"in {self.out} does not verify: {why}" + (f" ({len(failed) - 1} more cells fail too)"
                                                                  if len(failed) > 1 else "")
                                     + ". It is not made again silently: inspect it, or rerun with "
                                       "--recompute-failed to make every failing cell again")
            for c, why in failed.items():
                self.progress(f"{cell_path(self.out, *c).name} did not verify ({why}): made again "
                              "(--recompute-failed)")
            pending = [c for c in cells if problems[c] is not None
                       or (self.require_texts and c[1] != REAL and not _has_texts(cell_path(self.out, *c)))]
            sweep_start, seconds_by_method = time.perf_counter(), {}
            for i, (dataset, method, epsilon, seed) in enumerate(cells, 1):
                path = cell_path(self.out, dataset, method, epsilon, seed)
                if (dataset, method, epsilon, seed) not in pending:
                    self.skipped.append(path)
                    continue
                start = time.perf_counter()
                result = self.run_cell(dataset, method, epsilon, seed)
                body = {"cell": {"dataset": dataset, "method": method, "epsilon": _eps(epsilon), "seed": seed},
                        "preset": self.preset.name, "sizes": self.preset.public_sizes(),
                        "note": TEACHING_RUN, "metrics": result["metrics"], "release": result.get("release", {}),
                        **{key: result[key] for key in ("text_measures", "texts") if key in result},
                        "wall_s": {"release": result["wall_s"], "cell": time.perf_counter() - start},
                        "provenance": {"git_commit": commit, "machine": machine(), "runtime": result["runtime"],
                                       "model": result["model"], "dpkit_version": version,
                                       "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}}
                body = _plain(body)
                body["digest"] = _digest(body)
                body["seal"] = seal(body, key)
                _write_atomic(path, body)
                register_sealed(path, key)
                self.written.append(path)
                seconds_by_method.setdefault(method, []).append(body["wall_s"]["cell"])
                left = [c[1] for c in pending[pending.index((dataset, method, epsilon, seed)) + 1:]]
                score = body["metrics"].get("balanced_accuracy", {})
                self.progress(f"[{i}/{len(cells)}] {dataset} {method} epsilon {_eps(epsilon)} seed {seed}: "
                              f"balanced accuracy {score.get('estimate', float('nan')):.3f} "
                              f"(release {body['wall_s']['release']:.0f} s; "
                              f"{eta(time.perf_counter() - sweep_start, seconds_by_method, left)})")
        finally:
            lock.release(self.out, self)
        return self


def _has_texts(path: Path) -> bool:
    """Whether the stored cell at ``path`` holds its synthetic texts."""
    try:
        return isinstance(json.loads(Path(path).read_text()).get("texts"), dict)
    except (OSError, ValueError, AttributeError):
        return False


def eta(elapsed_s: float, seconds_by_method: dict[str, list[float]], methods_left: Sequence[str]) -> str:
    """Elapsed time and an estimate of the rest from the cells run so far in this process.

    Each cell left is priced at the mean time of this process's cells of its method
    (private prediction's cells take minutes, DP-ST's seconds); a method not run yet
    at the mean of all cells run so far.
    """
    if not methods_left:
        return f"{elapsed_s / 60:.0f} min elapsed, done"
    every = [t for times in seconds_by_method.values() for t in times]
    overall = sum(every) / len(every) if every else 0.0
    rest = sum(sum(seconds_by_method[m]) / len(seconds_by_method[m]) if seconds_by_method.get(m) else overall
               for m in methods_left)
    return f"{elapsed_s / 60:.0f} min elapsed, about {rest / 60:.0f} min left"


def _write_atomic(path: Path, body: dict) -> None:
    tmp = path.with_suffix(".json.tmp")
    with open(tmp, "w") as handle:
        handle.write(json.dumps(body, indent=1, sort_keys=True) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def register(sub) -> None:
    parser = sub.add_parser("experiment", help="experiments outside the book build (results/)")
    inner = parser.add_subparsers(dest="experiment", required=True)
    cmp = inner.add_parser("compare", help="the three methods at equal epsilon, one JSON per cell (resumable)",
                           description="Presets: " + "; ".join(f"{p.name}: {p.estimate}" for p in PRESETS.values()))
    cmp.add_argument("--preset", default="smoke", help=f"size preset, one of {sorted(PRESETS)} (default smoke)")
    cmp.add_argument("--out", default=None, help="folder of the per-cell JSON files (default results/compare/<preset>)")
    cmp.add_argument("--methods", default=None,
                     help=f"comma-separated subset of {','.join(METHOD_NAMES)} (default: the preset's, all three); "
                          "the real-data "
                          "reference always runs. A later run with more methods adds their cells")
    cmp.add_argument("--datasets", default=None,
                     help="comma-separated subset of the preset's data sets (default: all); a later run with the "
                          "others adds their cells to the same folder")
    cmp.add_argument("--model", default=None,
                     help="local model: the bundled SmolLM2 (default), qwen2.5-coder-1.5b (`make model-qwen`), or a "
                          ".gguf path; the default folder is then results/compare/<preset>-<model>")
    cmp.add_argument("--recompute-failed", action="store_true",
                     help="make again every stored cell of the folder that fails its digest or seal (default: "
                          "refuse, naming the file, exit 2); the command names each cell it makes again")
    cmp.set_defaults(func=_compare_command)


def _compare_command(args) -> int:
    preset = get_preset(args.preset)  # ParameterError before anything is loaded or written
    if args.methods is not None:
        preset = replace(preset, methods=parse_methods(args.methods))
    if args.datasets is not None:
        preset = replace(preset, datasets=parse_datasets(args.datasets, preset))
    check_local_model(args.model)  # a missing model file: exit 2 before any cell is computed or folder written
    start = time.perf_counter()
    cells = LocalCells(preset, model=args.model)
    model = cells.model()  # a named model whose packages are missing: ParameterError (exit 2) before any folder
    folder = preset.name if args.model is None else f"{preset.name}-{_slug(args.model)}"
    out = Path(args.out) if args.out else Path("results/compare") / folder
    sweep = Sweep(preset, out, cells, model=model, require_texts=True,
                  recompute_failed=getattr(args, "recompute_failed", False)).run()
    print(f"dpkit experiment compare --preset {preset.name}: {len(sweep.written)} cells written, "
          f"{len(sweep.skipped)} already done, in {time.perf_counter() - start:.0f} s -> {out}")
    return 0


def _slug(model: str) -> str:
    """A folder-name form of a model name or path.

    ``qwen2.5-coder-1.5b`` stays as it is; ``/x/My Model.gguf`` becomes ``my-model``.
    """
    stem = Path(str(model)).name
    stem = stem[:-5] if stem.lower().endswith(".gguf") else stem
    return re.sub(r"[^a-z0-9._-]+", "-", stem.lower()).strip("-") or "model"


def cells_done(out: Path, preset: Preset) -> Sequence[Path]:
    """The cell files of ``preset`` in ``out`` that verify."""
    return [cell_path(out, *c) for c in preset.cells() if verifies(cell_path(out, *c), preset, *c)]
