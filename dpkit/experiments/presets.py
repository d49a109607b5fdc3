"""The size presets of ``dpkit experiment compare``: which cells a run makes, at which public sizes.

A *cell* is one (data set, method, epsilon, seed). A :class:`Preset` names a
run's data sets, epsilons, seeds, methods and sizes; :meth:`Preset.cells` lists
its cells seed by seed, so a run stopped early holds whole seeds. Beside the
methods, every data set and seed has the cell :data:`REAL` (epsilon ``inf``):
real training texts of the same size, scored with the same classifier, with
the majority class recorded; ``--methods ...,label_only`` adds
:data:`LABEL_ONLY`, the reference that reads no record.

What it guarantees: every number here is public (nothing reads a record).
:meth:`Preset.public_sizes` is what a stored cell records and is checked
against; it names a size added after cells were stored (:data:`LATER_SIZES`)
only when a preset sets a value other than the one every earlier cell was
made at, so those cells keep verifying. :func:`get_preset`, :func:`parse_methods` and
:func:`parse_datasets` refuse an unknown name with a
:class:`~dpkit.validate.ParameterError` that names the option.

Seeds: every preset but ``smoke`` and ``model-probe`` takes 5 seeds
(:data:`SEEDS`), so that a claim such as "rises with epsilon" rests on paired
same-seed differences with a t interval
(:func:`dpkit.experiments.stored.paired_difference`). ``--datasets`` runs one
data set of a preset at a time: the ``full`` preset at 5 seeds does not fit 2
hours on the 2-core machine, one data set of it does (``make results``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Iterator

from dpkit.experiments.compare import METHOD_NAMES, VARIANT_ROWS, Sizes
from dpkit.validate import ParameterError

REAL = "real"  # the real-data reference cell: real training texts of the same size (epsilon inf)
#: The reference that reads no record (``--methods ...,label_only``): the bundled model prompted with the document
#: type and the label alone (dpkit.experiments.label_only), one cell per data set and seed at epsilon inf.
LABEL_ONLY = "label_only"


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
    """The preset called ``name`` (:data:`PRESETS`); a :class:`~dpkit.validate.ParameterError` naming ``--preset``
    otherwise."""
    if name not in PRESETS:
        raise ParameterError("--preset", name, f"must be one of {sorted(PRESETS)}")
    return PRESETS[name]


#: Every row ``--methods`` may name: the three methods, the extra rows (``pp_ink``: InvisibleInk; ``ft``: DP
#: fine-tuning) and the label-only reference.
METHOD_ROWS = METHOD_NAMES + tuple(VARIANT_ROWS) + (LABEL_ONLY,)


def parse_methods(text: str) -> tuple[str, ...]:
    """``"kps,dpst"`` -> ``("kps", "dpst")``, each one of :data:`METHOD_ROWS`."""
    names = tuple(dict.fromkeys(part.strip() for part in str(text).split(",") if part.strip()))
    if not names or any(name not in METHOD_ROWS for name in names):
        raise ParameterError("--methods", text, f"must list some of {','.join(METHOD_ROWS)}, separated by commas")
    return names


def parse_datasets(text: str, preset: Preset) -> tuple[str, ...]:
    """``"health_tweets"`` -> ``("health_tweets",)``: some of the preset's data sets, separated by commas."""
    names = tuple(dict.fromkeys(part.strip() for part in str(text).split(",") if part.strip()))
    if not names or any(name not in preset.datasets for name in names):
        raise ParameterError("--datasets", text, f"must list some of {','.join(preset.datasets)} (the {preset.name} "
                                                 "preset's data sets), separated by commas")
    return names
