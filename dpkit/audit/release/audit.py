"""Black-box audit of a whole release: canaries in one run, an epsilon lower bound from the guesses.

:func:`audit_release` treats the generator as a black box ``synthesize(records)
-> [{"text", "label"}, ...]`` (one of dpkit's methods, a broken variant, another
project's generator). It

1. makes ``m`` public canaries (:mod:`dpkit.audit.release.canaries`) and includes each
   one in the input independently with probability 1/2;
2. runs the generator ONCE on the user's records plus the included canaries
   (in a public random order);
3. scores every canary from the release texts alone (:mod:`dpkit.audit.release.scorers`);
4. for each scorer and each guess plan fixed in advance (guess "in" for the
   ``k`` top scores, optionally "out" for the ``k`` bottom scores, ``k`` a power
   of two; abstain on the rest), counts the correct guesses and converts them
   into an epsilon lower bound with the one-run theorem
   (:mod:`dpkit.audit.release.one_run`) at level ``alpha / tests``: a Bonferroni split of
   ``alpha = 1 - confidence`` over every (scorer, plan) pair, so the best of them
   is still a valid bound at the stated confidence;
5. reports the best bound, AUROC and TPR at FPR 1% / 10% of its scorer, and the
   verdict: ``"refuted"`` when the bound exceeds the claimed epsilon.

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

from dpkit import methods  # its method modules load on first use (dpkit.methods.METHODS)
from dpkit.audit.release.canaries import DEFAULT_CANARIES, Canaries, canaries_from_texts, make_canaries
from dpkit.audit.release.one_run import epsilon_lower_bound
from dpkit.audit.release.roc import auroc, tpr_at_fpr
from dpkit.audit.release.scorers import DEFAULT_SCORERS, scorer
from dpkit.methods import Records
from dpkit.validate import ParameterError, check_choice, check_in_range, check_positive


@dataclass
class ScorerResult:
    """One scorer's best guess plan and its ROC summary."""

    name: str
    epsilon_lower_bound: float
    guesses: int
    correct_guesses: int
    plan: str
    auroc: float
    tpr_at_fpr_1: float
    tpr_at_fpr_10: float


@dataclass
class ReleaseAuditResult:
    """The result of :func:`audit_release` (``to_dict`` is what the CLI prints)."""

    claimed_epsilon: float
    claimed_delta: float
    confidence: float
    epsilon_lower_bound: float           # one-run theorem at the claimed delta (delta form)
    epsilon_lower_bound_pure: float      # the same guesses under delta = 0 (binomial tail)
    verdict: str
    canaries: int
    canaries_included: int
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
    scorers: dict = field(default_factory=dict)
    #: per scorer, the canaries' scores (public canaries; kept for ROC plots, not printed)
    scores: dict = field(default_factory=dict, repr=False)
    #: the inclusion bits (the auditor's secret until the audit is over)
    included: np.ndarray | None = field(default=None, repr=False)

    def to_dict(self) -> dict:
        out = {k: v for k, v in asdict(self).items() if k not in ("scores", "included")}
        return out


def guess_plans(m: int) -> list[tuple[int, int]]:
    """(top k guessed in, bottom k guessed out): k = 4, 8, ... <= m/2, top only and both ends."""
    ks = [k for k in (2 ** j for j in range(2, 40)) if k <= m // 2] or [max(1, m // 2)]
    return [(k, 0) for k in ks] + [(k, k) for k in ks]


def _guesses(scores: np.ndarray, included: np.ndarray, plan: tuple[int, int], tie_break: np.ndarray):
    order = np.lexsort((tie_break, scores))      # ascending score, ties in a public random order
    top, bottom = order[len(order) - plan[0]:], order[:plan[1]]
    correct = int(included[top].sum()) + int((~included[bottom]).sum())
    return plan[0] + plan[1], correct


def audited_records(records, canaries: Canaries, included: np.ndarray, rng: np.random.Generator,
                    decoys: Canaries | None = None):
    """The user's records plus the included canaries (or, with ``decoys``, each excluded canary's decoy),
    in a public random order."""
    slots = range(len(canaries))
    chosen = [(canaries, i) if included[i] else (decoys, i) for i in slots if included[i] or decoys is not None]
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
    return methods.METHODS[method].STATEMENT.neighbouring


def _part(canaries: Canaries, start: int, stop: int) -> Canaries:
    labels = None if canaries.labels is None else canaries.labels[start:stop]
    return Canaries(canaries.texts[start:stop], canaries.words[start:stop], labels)


def audit_release(synthesize, records, *, canaries=None, claimed_epsilon: float, claimed_delta: float = 0.0,
                  confidence: float = 0.95, seed=None, scorers=DEFAULT_SCORERS, embedder=None,
                  neighbouring: str = "add/remove") -> ReleaseAuditResult:
    """Audit ``synthesize`` on ``records`` plus canaries in one run; see the module docstring.

    ``canaries``: None (``DEFAULT_CANARIES`` made from public rare words), an
    int (that many), or a list of public texts. ``seed`` fixes the canaries,
    the coin flips and the tie-breaks (None: fresh entropy). ``scorers``: names
    from :mod:`dpkit.audit.release.scorers` (``FAST_SCORERS`` skips the embedding model).
    """
    check_choice("neighbouring", neighbouring, NEIGHBOURING)
    if not isinstance(records, Records):
        raise ParameterError("records", records, "must be a dpkit.methods.Records")
    check_positive("claimed_epsilon", claimed_epsilon)
    check_in_range("claimed_delta", claimed_delta, 0.0, 1.0, high_open=True)
    check_in_range("confidence", confidence, 0.0, 1.0, low_open=True, high_open=True)
    names = tuple(scorers)
    if len(names) < 1 or len(set(names)) != len(names):
        raise ParameterError("scorers", names, "must name distinct scorers")
    score_fns = {name: scorer(name, embedder) for name in names}
    make, flip, ties, order = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(4))
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
        if neighbouring == "replace-one":
            decoys = make_canaries(len(canaries), make, label_set)
    m = len(canaries)
    included = flip.random(m) < 0.5
    start = time.perf_counter()
    output = synthesize(audited_records(records, canaries, included, order, decoys))
    texts = release_texts(output)
    tie_break = ties.random(m)
    plans = guess_plans(m)
    tests = len(plans) * len(names)
    alpha = (1.0 - confidence) / tests
    per_scorer, scores, best = {}, {}, None
    for name, fn in score_fns.items():
        s = np.asarray(fn(canaries, texts), dtype=float)
        scores[name] = s
        top = None
        for plan in plans:
            r, v = _guesses(s, included, plan, tie_break)
            bound = epsilon_lower_bound(m, r, v, alpha, claimed_delta)
            if top is None or bound > top[0]:
                top = (bound, r, v, plan)
        per_scorer[name] = ScorerResult(name, top[0], top[1], top[2], f"top {top[3][0]} in, bottom {top[3][1]} out",
                                        auroc(s, included), tpr_at_fpr(s, included, 0.01),
                                        tpr_at_fpr(s, included, 0.10))
        if best is None or top[0] > best[1][0]:
            best = (name, top)
    name, (bound, r, v, plan) = best
    chosen = per_scorer[name]
    pure = epsilon_lower_bound(m, r, v, alpha, 0.0)
    return ReleaseAuditResult(
        claimed_epsilon=float(claimed_epsilon), claimed_delta=float(claimed_delta), confidence=float(confidence),
        epsilon_lower_bound=bound, epsilon_lower_bound_pure=pure,
        verdict="refuted" if bound > claimed_epsilon else "not refuted",
        canaries=m, canaries_included=int(included.sum()), guesses=r, correct_guesses=v, best_scorer=name,
        best_plan=chosen.plan, auroc=chosen.auroc, tpr_at_fpr_1=chosen.tpr_at_fpr_1,
        tpr_at_fpr_10=chosen.tpr_at_fpr_10, tests=tests, release_records=len(texts),
        seconds=round(time.perf_counter() - start, 3),
        scorers={k: asdict(v) for k, v in per_scorer.items()}, scores=scores, included=included)
