"""Black-box audit of a whole release: canaries in one run, an epsilon lower bound from the guesses.

:func:`audit_release` treats the generator as a black box ``synthesize(records)
-> [{"text", "label"}, ...]`` (one of dpkit's methods, a broken variant, another
project's generator). It

1. makes ``m`` public canaries (:mod:`dpkit.audit.release.canaries`) and includes each
   one in the input independently with probability 1/2;
2. runs the generator ONCE on the user's records plus the included canaries
   (in a public random order);
3. scores every canary from the release texts alone (:mod:`dpkit.audit.release.scorers`);
4. chooses its guesses by a declared strategy (a Bonferroni grid of guess plans
   over the scorers, or a public split of the canaries: :mod:`dpkit.audit.release.analysis`)
   and turns the right guesses into three lower bounds, each valid at the
   stated confidence: Steinke et al.'s binomial one-run bound on epsilon
   (:mod:`dpkit.audit.release.one_run`; the verdict's), Mahloujifar et al.'s f-DP
   bound on the (epsilon, delta) curve, and the f-DP bound on the Gaussian curve
   (mu of mu-GDP, with the epsilon(delta) it implies; :mod:`dpkit.audit.release.fdp`);
5. reports the bounds, AUROC and TPR at FPR 1% / 10% of the best scorer, and the
   verdict: ``"refuted"`` when the Steinke et al. bound exceeds the claimed epsilon.

Neighbouring relation tested (``neighbouring``): ``"add/remove"`` (default;
DP-KPS and private prediction) leaves an excluded canary out; ``"replace-one"``
(DP-ST, whose number of records is public) puts a decoy in its place, another
public rare-word text that is never scored, so the input size is the same
whatever the coin flips are and each flip changes one record.

A bound below the claim does not show the release is private: it says these
canaries and scorers found no evidence against the claim.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

import numpy as np

from dpkit.audit.release.canaries import DEFAULT_CANARIES, Canaries, canaries_from_texts, make_canaries
from dpkit.audit.release import analysis as one_run_analysis
from dpkit.audit.release.analysis import STRATEGIES, guess_plans  # noqa: F401  (guess_plans: re-exported)
from dpkit.audit.release.fdp import gdp_epsilon_curve
from dpkit.audit.release.roc import auroc, tpr_at_fpr
from dpkit.audit.release.scorers import DEFAULT_SCORERS, scorer
from dpkit.methods import Records
from dpkit.methods.registry import get_method  # a method module loads on first use (PyTorch)
from dpkit.validate import (ParameterError, check_choice, check_fits_memory, check_in_range, check_int,
                            check_positive)


@dataclass
class ScorerResult:
    """One scorer's ROC summary (descriptive: the bounds come from :mod:`dpkit.audit.release.analysis`)."""

    name: str
    auroc: float
    tpr_at_fpr_1: float
    tpr_at_fpr_10: float


@dataclass
class ReleaseAuditResult:
    """The result of :func:`audit_release` (``to_dict`` is what the CLI prints with ``--json``)."""

    claimed_epsilon: float
    claimed_delta: float
    confidence: float
    epsilon_lower_bound: float           # Steinke et al.'s one-run bound at the claimed delta (the verdict's)
    epsilon_lower_bound_pure: float      # the same guesses under delta = 0 (binomial tail)
    epsilon_lower_bound_fdp: float       # Mahloujifar et al.'s f-DP bound on the (eps, delta) curve
    gdp_mu_lower_bound: float            # the f-DP bound on the Gaussian curve: mu of mu-GDP
    gdp_epsilon_curve: list              # [{"delta", "epsilon"}]: the eps(delta) that mu-GDP at the bound implies
    verdict: str
    strategy: str
    canaries: int
    canaries_included: int
    repetitions: int
    guesses: int
    correct_guesses: int
    best_scorer: str
    best_plan: str
    auroc: float
    tpr_at_fpr_1: float
    tpr_at_fpr_10: float
    tests: int
    release_records: int
    seconds: float
    neighbouring: str = "add/remove"
    analyses: dict = field(default_factory=dict)
    scorers: dict = field(default_factory=dict)
    #: per scorer, the canaries' scores (public canaries; kept for ROC plots, not printed)
    scores: dict = field(default_factory=dict, repr=False)
    #: the inclusion bits (the auditor's secret until the audit is over)
    included: np.ndarray | None = field(default=None, repr=False)

    def to_dict(self) -> dict:
        out = {k: v for k, v in asdict(self).items() if k not in ("scores", "included")}
        return out

    def summary(self) -> str:
        """A few lines for a person (the CLI's text output)."""
        return summary(self.to_dict())


def summary(result: dict) -> str:
    """The text report of a release audit, from :meth:`ReleaseAuditResult.to_dict`."""
    r, a = result, result["analyses"]
    curve = ", ".join(f"{p['epsilon']:.2f} at delta {p['delta']:g}" for p in r["gdp_epsilon_curve"][:3])
    lines = [
        f"verdict: {r['verdict']} (claim epsilon {r['claimed_epsilon']:g}, delta {r['claimed_delta']:g}, "
        f"{r['neighbouring']}, one record)",
        f"canaries: {r['canaries']} ({r['canaries_included']} included, each {r['repetitions']}x); release records: "
        f"{r['release_records']}; guesses chosen by {r['strategy']} ({r['tests']} tests)",
        f"Steinke et al. one-run bound:   epsilon >= {r['epsilon_lower_bound']:.3f} at {r['confidence']:.0%} "
        f"confidence ({a['steinke']['correct_guesses']}/{a['steinke']['guesses']} right, {a['steinke']['scorer']}, "
        f"{a['steinke']['plan']})",
        f"f-DP one-run bound (eps,delta): epsilon >= {r['epsilon_lower_bound_fdp']:.3f} "
        f"({a['fdp']['correct_guesses']}/{a['fdp']['guesses']} right, {a['fdp']['scorer']})",
        f"f-DP on the Gaussian curve:     mu >= {r['gdp_mu_lower_bound']:.3f} ({a['gdp']['correct_guesses']}/"
        f"{a['gdp']['guesses']} right); a Gaussian mechanism with that mu has epsilon {curve}",
        f"best scorer {r['best_scorer']}: AUROC {r['auroc']:.3f}, TPR {r['tpr_at_fpr_1']:.3f} at 1% FPR, "
        f"{r['tpr_at_fpr_10']:.3f} at 10%; {r['seconds']:.1f} s",
    ]
    return "\n".join(lines)


def audited_records(records, canaries: Canaries, included: np.ndarray, rng: np.random.Generator,
                    decoys: Canaries | None = None, repetitions: int = 1):
    """The user's records plus the included canaries (or, with ``decoys``, each excluded canary's decoy),
    each ``repetitions`` times, in a public random order."""
    slots = range(len(canaries))
    chosen = [(canaries, i) if included[i] else (decoys, i) for i in slots if included[i] or decoys is not None]
    chosen = [pair for pair in chosen for _ in range(repetitions)]
    texts = list(records.texts) + [source.texts[i] for source, i in chosen]
    if records.labelled:
        if canaries.labels is None or (decoys is not None and decoys.labels is None):
            raise ParameterError("canaries", "<unlabelled>", "must carry labels when the records are labelled")
        index = {name: k for k, name in enumerate(records.label_set)}
        labels = list(records.labels) + [index[source.labels[i]] for source, i in chosen]
    order = rng.permutation(len(texts))
    if records.labelled:
        return Records(tuple(texts[i] for i in order), tuple(labels[i] for i in order), records.label_set,
                       records.label_set_declared)
    return Records(tuple(texts[i] for i in order))


def release_texts(output) -> list[str]:
    """Texts of a generator's output: a list of dicts with ``text`` or a :class:`dpkit.methods.Release`."""
    records = getattr(output, "records", output)
    try:
        return [str(r["text"]) for r in records]
    except (TypeError, KeyError):
        raise ParameterError("synthesize", "<output>", "must return a list of {'text', 'label'} dicts") from None


NEIGHBOURING = ("add/remove", "replace-one")


def neighbouring_for(method: str) -> str:
    """The relation a dpkit method's claim is stated under: the one its charges declare (DP-ST: replace-one)."""
    return get_method(method).statement.neighbouring


def _part(canaries: Canaries, start: int, stop: int) -> Canaries:
    labels = None if canaries.labels is None else canaries.labels[start:stop]
    return Canaries(canaries.texts[start:stop], canaries.words[start:stop], labels)


#: Memory an audited input row takes (a canary copy: its text and label in a dict), for :func:`check_repetitions`.
ROW_BYTES = 1_000


def check_repetitions(name: str, repetitions, canaries: int) -> int:
    """``repetitions`` copies of each of ``canaries`` canaries: an integer >= 1 whose copies fit in memory,
    refused naming ``name`` before anything is written (10^9 copies once filled 20 GB and the kernel killed
    the run without a message)."""
    repetitions = check_int(name, repetitions, minimum=1)
    check_fits_memory(name, repetitions, float(ROW_BYTES) * canaries * repetitions,
                      f"{canaries:,} canaries inserted {repetitions:,} times each")
    return repetitions


def audit_release(synthesize, records, *, canaries=None, claimed_epsilon: float, claimed_delta: float = 0.0,
                  confidence: float = 0.95, seed=None, scorers=DEFAULT_SCORERS, embedder=None,
                  neighbouring: str = "add/remove", strategy: str = "bonferroni",
                  repetitions: int = 1) -> ReleaseAuditResult:
    """Audit ``synthesize`` on ``records`` plus canaries in one run; see the module docstring.

    ``canaries``: None (``DEFAULT_CANARIES`` made from public rare words), an
    int (that many), a list of public texts, or :class:`~dpkit.audit.release.canaries.Canaries`
    (e.g. :func:`~dpkit.audit.release.canaries.echo_canaries`). ``seed`` fixes the canaries,
    the coin flips and the tie-breaks (None: fresh entropy). ``scorers``: names
    from :mod:`dpkit.audit.release.scorers` (``FAST_SCORERS`` skips the embedding model).
    ``strategy``: how the guesses are chosen (:data:`~dpkit.audit.release.analysis.STRATEGIES`).
    ``repetitions``: copies of each included canary in the input (a coin then decides for a group of that many
    records; the bounds stay per record, by group privacy).
    """
    check_choice("neighbouring", neighbouring, NEIGHBOURING)
    check_choice("strategy", strategy, STRATEGIES)
    if canaries is None or isinstance(canaries, (int, np.integer)):
        count = DEFAULT_CANARIES if canaries is None else max(1, int(canaries))
    else:
        count = len(canaries)
    repetitions = check_repetitions("repetitions", repetitions, count)
    if not isinstance(records, Records):
        raise ParameterError("records", records, "must be a dpkit.methods.Records")
    check_positive("claimed_epsilon", claimed_epsilon)
    check_in_range("claimed_delta", claimed_delta, 0.0, 1.0, high_open=True)
    check_in_range("confidence", confidence, 0.0, 1.0, low_open=True, high_open=True)
    names = tuple(scorers)
    if len(names) < 1 or len(set(names)) != len(names):
        raise ParameterError("scorers", names, "must name distinct scorers")
    score_fns = {name: scorer(name, embedder) for name in names}
    make, flip, ties, order, split = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(5))
    label_set = records.label_set if records.labelled else None
    decoys = None
    if canaries is None or isinstance(canaries, (int, np.integer)):
        m = DEFAULT_CANARIES if canaries is None else int(canaries)
        both = make_canaries(2 * m if neighbouring == "replace-one" else m, make, label_set)
        canaries = _part(both, 0, m)
        decoys = _part(both, m, 2 * m) if neighbouring == "replace-one" else None
    else:
        if not isinstance(canaries, Canaries):
            canaries = canaries_from_texts(canaries, label_set, make)
        elif label_set is not None and canaries.labels is None:
            canaries = Canaries(canaries.texts, canaries.words, tuple(
                label_set[int(k)] for k in make.integers(0, len(label_set), size=len(canaries))), canaries.prefixes)
        if neighbouring == "replace-one":
            decoys = make_canaries(len(canaries), make, label_set)
    m = len(canaries)
    included = flip.random(m) < 0.5
    start = time.perf_counter()
    output = synthesize(audited_records(records, canaries, included, order, decoys, repetitions))
    texts = release_texts(output)
    tie_break = ties.random(m)
    per_scorer, scores = {}, {}
    for name, fn in score_fns.items():
        s = np.asarray(fn(canaries, texts), dtype=float)
        scores[name] = s
        per_scorer[name] = ScorerResult(name, auroc(s, included), tpr_at_fpr(s, included, 0.01),
                                        tpr_at_fpr(s, included, 0.10))
    found = one_run_analysis.analyse(scores, included, tie_break, claimed_delta=claimed_delta, confidence=confidence,
                                     strategy=strategy, split_rng=split, repetitions=repetitions)
    snj = found["steinke"]
    pure = one_run_analysis.bound("steinke", snj.canaries, snj.guesses, snj.correct_guesses, snj.level, 0.0,
                                  repetitions)
    chosen = per_scorer[snj.scorer]
    bound = snj.bound
    return ReleaseAuditResult(
        claimed_epsilon=float(claimed_epsilon), claimed_delta=float(claimed_delta), confidence=float(confidence),
        epsilon_lower_bound=bound, epsilon_lower_bound_pure=pure, epsilon_lower_bound_fdp=found["fdp"].bound,
        gdp_mu_lower_bound=found["gdp"].bound, gdp_epsilon_curve=gdp_epsilon_curve(found["gdp"].bound),
        verdict="refuted" if bound > claimed_epsilon else "not refuted", strategy=strategy,
        canaries=m, canaries_included=int(included.sum()), repetitions=repetitions, guesses=snj.guesses,
        correct_guesses=snj.correct_guesses, best_scorer=snj.scorer, best_plan=snj.plan, auroc=chosen.auroc,
        tpr_at_fpr_1=chosen.tpr_at_fpr_1, tpr_at_fpr_10=chosen.tpr_at_fpr_10, tests=found["tests"],
        release_records=len(texts), seconds=round(time.perf_counter() - start, 3), neighbouring=neighbouring,
        analyses={k: found[k].to_dict() for k in one_run_analysis.ANALYSES},
        scorers={k: asdict(v) for k, v in per_scorer.items()}, scores=scores, included=included)


def report_row(result: dict) -> dict:
    """A release audit (:meth:`ReleaseAuditResult.to_dict`, or a saved ``audit_result.json``) as a row of the
    audit report's empirical audits: :func:`dpkit.audit.report.verdict` reads ``mechanism`` and ``passed``."""
    name = result.get("method") or result.get("generator") or "generator"
    return {"ledger entry": "the whole release", "mechanism": f"release audit ({name})",
            "family": "one run, canaries", "broken": False, "samples": result["canaries"],
            "claimed_epsilon": result["claimed_epsilon"], "lower_bound": result["epsilon_lower_bound"],
            "passed": result["verdict"] != "refuted",
            "event": f"{result['correct_guesses']}/{result['guesses']} right guesses ({result['best_scorer']})",
            "numerator": None, "pair loss": None, "pair loss / claim": None,
            "lower_bound_fdp": result["epsilon_lower_bound_fdp"], "gdp_mu_lower_bound": result["gdp_mu_lower_bound"],
            "seconds": result["seconds"]}
