"""InvisibleInk's variant of private prediction (DClip + Top-k+): maths, accounting, cross-checks, invariants.

* DClip and Top-k+ as the paper defines them (arXiv 2507.02974), checked numerically;
* the epsilon dpkit states equals an independent computation from the paper's theorem
  (rho = T C^2 / (2 B^2 tau^2), converted to (epsilon, delta) by the tight conversion of
  Canonne, Kamath & Steinke, minimised here with scipy) on 24 configurations;
* the ``invink`` 0.1.0 package, where installed: same logits in, same distribution out;
* on the bundled model (llama.cpp and PyTorch): the public row does not depend on the private
  rows, adding a prompt moves the private sum by that prompt's own row, replay gives the same
  tokens, chunk/cache sizes (the public memory bound) change nothing, the ledger's spend
  equals the stated guarantee; ``variant`` is validated, recorded and reaches ``dpkit synth``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from scipy.optimize import minimize_scalar
from scipy.special import log_softmax

from dpkit.privacy.invisibleink import (calibrated_clip, check_variant, invisibleink_guarantee,
                                        invisibleink_max_private_tokens, invisibleink_token_contract, paper_rho)
from dpkit.privpred.invisibleink import (dclip_aggregate, difference_clip, invisibleink_log_probabilities,
                                         topk_plus_candidates)
from dpkit.validate import ParameterError


# ---------------------------------------------------------------- the maths


def test_difference_clip_keeps_the_public_row_and_bounds_the_difference():
    rng = np.random.default_rng(0)
    public = rng.normal(0, 5, 300)
    private = public + rng.normal(0, 3, (4, 300))
    d = difference_clip(private, public, 0.7)
    assert np.abs(d).max() <= 0.7 and np.array_equal(d, np.clip(private - public, -0.7, 0.7))
    t = difference_clip(torch.tensor(private), torch.tensor(public), 0.7)
    assert np.array_equal(t.numpy(), d)
    # rows equal to the public row contribute nothing: u is the public logits
    assert np.array_equal(dclip_aggregate(np.tile(public, (3, 1)), public, 0.7, 8), public)
    assert np.array_equal(dclip_aggregate(np.zeros((0, 300)), public, 0.7, 8), public)  # an empty batch


def test_adding_a_prompt_moves_the_scores_by_at_most_c_over_s():
    rng = np.random.default_rng(1)
    for _ in range(50):
        public = rng.normal(0, 4, 64)
        batch = public + rng.normal(0, 5, (int(rng.integers(0, 9)), 64))
        extra = public + rng.normal(0, 50, 64)
        c, s = float(rng.uniform(0.1, 3)), float(rng.uniform(1, 16))
        move = dclip_aggregate(np.vstack([batch, extra]), public, c, s) - dclip_aggregate(batch, public, c, s)
        assert np.abs(move).max() <= c / s * (1 + 1e-12)
        assert move.max() - move.min() <= 2 * c / s * (1 + 1e-12)  # the width that sets epsilon = 2C/(s tau)


def test_topk_plus_holds_the_private_top_k_and_reads_only_public_logits():
    rng = np.random.default_rng(2)
    for _ in range(200):
        vocab, k, c, s = 200, int(rng.integers(1, 20)), float(rng.uniform(0.05, 2)), int(rng.integers(1, 12))
        public = rng.normal(0, 3, vocab)
        batch = public + rng.normal(0, 10, (int(rng.integers(0, s + 1)), vocab))  # at most s prompts
        u = dclip_aggregate(batch, public, c, s)
        plus = topk_plus_candidates(public, k, c)
        private_top_k = np.argsort(-u, kind="stable")[:k]
        assert set(private_top_k) <= set(plus.tolist())
        assert set(np.argsort(-public)[:k]) <= set(plus.tolist())
    public = np.array([3.0, 2.0, 1.0, 0.5, -0.9, -1.1])
    assert topk_plus_candidates(public, 2, 1.0).tolist() == [0, 1, 2, 3]   # >= 2 - 2C = 0
    assert topk_plus_candidates(public, 2, 0.5, within=np.array([1, 3, 4, 5])).tolist() == [1, 3]  # >= 0.5 - 1
    assert topk_plus_candidates(public, None, 1.0) is None
    as_torch = topk_plus_candidates(torch.tensor(public, dtype=torch.float32), 2, 1.0)
    assert as_torch.tolist() == [0, 1, 2, 3]


def test_the_distribution_is_softmax_of_u_over_tau_on_the_candidates():
    rng = np.random.default_rng(3)
    public = rng.normal(0, 2, 40)
    batch = public + rng.normal(0, 1, (5, 40))
    u = public + np.clip(batch - public, -0.5, 0.5).sum(0) / 8
    keep = public >= np.sort(public)[-5] - 1.0
    expected = log_softmax(np.where(keep, u / 0.7, -np.inf))
    got = invisibleink_log_probabilities(batch, public, 0.5, 8, 0.7, top_k=5)
    assert np.allclose(np.exp(got), np.exp(expected), atol=1e-9)
    # and the sampler draws from it (exact sampler; frequencies within 5 standard errors)
    from dpkit.privpred.invisibleink import sample_invisibleink_token_from_sum

    draws_rng = np.random.default_rng(4)
    cand = np.flatnonzero(keep)
    diff = np.clip(batch - public, -0.5, 0.5).sum(0)
    counts = np.bincount([sample_invisibleink_token_from_sum(diff[cand], public[cand], 0.5, 8, 0.7, draws_rng,
                                                             candidates=cand) for _ in range(4000)], minlength=40)
    p = np.exp(got)
    assert np.all(np.abs(counts / 4000 - p) <= 5 * np.sqrt(p * (1 - p) / 4000) + 1e-12)


def test_same_distribution_as_the_papers_formulas_on_a_grid():
    """Independent of dpkit's code: the mean of the DClip'd logits z_pub + clip(z_i - z_pub, -C, C) over a batch
    of B = s rows, restricted to {y : z_pub(y) >= k-th public logit - 2C}, through softmax at tau."""
    rng = np.random.default_rng(6)
    cases = 0
    for vocab, batch, clip, tau, k in itertools.product([50, 400], [1, 4, 7], [0.1, 0.5, 2.0], [0.5, 1.0, 2.0],
                                                        [1, 10, None]):
        public = rng.normal(0, 3, vocab)
        private = public + rng.normal(0, 2, (batch, vocab))
        mean_clipped = np.mean(public + np.minimum(np.maximum(private - public, -clip), clip), axis=0)
        keep = np.ones(vocab, bool) if k is None else public >= np.sort(public)[-k] - 2 * clip
        z = np.where(keep, mean_clipped / tau, -np.inf)
        expected = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
        got = np.exp(invisibleink_log_probabilities(private, public, clip, batch, tau, k))
        assert np.allclose(got, expected, atol=1e-9, rtol=0)
        cases += 1
    assert cases == 162


# ---------------------------------------------------------------- accounting against the paper's theorem


def _epsilon_from_rho(rho: float, delta: float) -> float:
    """Canonne-Kamath-Steinke's tight conversion, minimised over the Renyi order here (independent code)."""
    def objective(log_a):
        a = 1.0 + math.exp(log_a)
        return a * rho + (math.log(1 / delta) + a * math.log1p(-1 / a) - math.log(a - 1)) / (a - 1)
    best = minimize_scalar(objective, bounds=(-12, 12), method="bounded", options={"xatol": 1e-12})
    return float(best.fun)


CONFIGS = list(itertools.product([1.0, 4.0, 8.0], [2.0, 8.0], [0.3, 1.0], [1e-5, 1e-6]))  # eps, s, tau, delta


@pytest.mark.parametrize("epsilon,s,tau,delta", CONFIGS)
def test_stated_epsilon_equals_the_papers_theorem(epsilon, s, tau, delta):
    assert len(CONFIGS) >= 20
    clip = calibrated_clip(epsilon, delta, s, tau, 32)
    r = invisibleink_max_private_tokens(epsilon, delta, s, clip, tau)
    stated = invisibleink_guarantee(r, delta, s, clip, tau)
    rho = paper_rho(r, clip, s, tau)           # the theorem: T C^2 / (2 B^2 tau^2), B = s
    assert stated["rho"] == pytest.approx(rho, rel=1e-8)           # the grid adds ~2^-29 relative
    assert stated["epsilon"] == pytest.approx(_epsilon_from_rho(rho, delta), rel=1e-6)
    assert stated["epsilon"] <= epsilon and r >= 32
    one_token = invisibleink_token_contract(s, clip, tau)
    assert one_token.epsilon == pytest.approx(2 * clip / (s * tau), rel=1e-8)
    assert one_token.rho() == pytest.approx(one_token.epsilon ** 2 / 8, rel=1e-12)


def test_variant_is_validated():
    assert check_variant("invisibleink") == "invisibleink"
    for bad in ("InvisibleInk", "", None, 3):
        with pytest.raises(ParameterError, match="variant"):
            check_variant(bad)


# ---------------------------------------------------------------- the invink package (when installed)


INVINK_FUNCTIONS = ("difference_clip", "get_topk", "compute_rho", "cdp_delta", "cdp_eps", "get_epsilon")


def _invink_utils():
    """The package's own functions, read from its installed ``invink/utils.py``.

    ``import invink`` fails on Python < 3.12 (0.1.0 uses a 3.12 f-string in a print of ``load_hf_model``,
    though it declares Python >= 3.8), so the functions the cross-check needs are compiled from the
    installed source, one definition at a time, unchanged. Skips where the package is not installed.
    """
    import importlib.util
    import types
    from pathlib import Path

    spec = importlib.util.find_spec("invink")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("invink is not installed (pip install --no-deps invink==0.1.0)")
    source = (Path(list(spec.submodule_search_locations)[0]) / "utils.py").read_text(encoding="utf-8")
    wanted = []
    for name in INVINK_FUNCTIONS:
        start = source.index(f"def {name}(")
        end = source.find("\ndef ", start + 1)
        wanted.append(source[start:end if end > 0 else len(source)])
    namespace = {"np": np, "math": math, "torch": torch, "Union": object, "Sequence": object, "Tuple": tuple,
                 "Optional": object}
    exec(compile("from __future__ import annotations\n" + "\n".join(wanted), "invink/utils.py", "exec"),
         namespace)
    return types.SimpleNamespace(**{name: namespace[name] for name in INVINK_FUNCTIONS})


def test_same_logits_in_same_distribution_out_as_invink():
    utils = _invink_utils()
    from scipy.special import softmax

    rng = np.random.default_rng(5)
    cases = 0
    for vocab, batch, clip, tau, k in itertools.product([50, 400], [1, 4, 7], [0.1, 0.5, 2.0], [0.5, 1.0, 2.0],
                                                        [1, 10, -1]):
        public = rng.normal(0, 3, vocab)
        private = public + rng.normal(0, 2, (batch, vocab))
        # DClip: invink returns the clipped logits z_pub + clip(z - z_pub); its mean over B rows is our u at s = B
        theirs = np.mean(utils.difference_clip(private, public, clip), axis=0)
        ours = dclip_aggregate(private, public, clip, batch)
        assert np.allclose(theirs, ours, rtol=0, atol=1e-12)
        # Top-k+: invink's get_topk widens by 2 clip / batch; with batch = 1 that is the 2C of the definition
        kk = vocab if k < 0 else k
        mask, _ = utils.get_topk(public, kk, clip, 1)
        ours_set = topk_plus_candidates(public, None if k < 0 else k, clip)
        assert np.array_equal(np.flatnonzero(mask), np.arange(vocab) if ours_set is None else ours_set)
        p_theirs = softmax(np.where(mask, theirs, -np.inf) / tau)
        p_ours = np.exp(invisibleink_log_probabilities(private, public, clip, batch, tau, None if k < 0 else k))
        assert np.allclose(p_theirs, p_ours, atol=1e-9)
        cases += 1
        # accounting: invink's rho for T tokens equals the paper's and ours up to the grid
        rho = utils.compute_rho(32, clip, batch, tau)
        assert rho == pytest.approx(paper_rho(32, clip, batch, tau), rel=1e-12)
        ours_g = invisibleink_guarantee(32, 1e-6, batch, clip, tau)
        assert ours_g["rho"] == pytest.approx(rho, rel=1e-8)
        if vocab == 50 and k == 10 and tau == 1.0:   # its epsilon search is slow (10^6 steps): 9 of the cases
            assert utils.get_epsilon(32, clip, batch + 1, tau, 1e-6) == pytest.approx(ours_g["epsilon"], rel=1e-5)
    assert cases == 162
    # the package's own decoding widens by 2 C / (B + 1) (erratum note): a narrower set than 2 C
    public = np.array([3.0, 2.0, 1.0, 0.5, -0.9])
    assert np.flatnonzero(utils.get_topk(public, 2, 1.0, 8)[0]).tolist() == [0, 1]
    assert topk_plus_candidates(public, 2, 1.0).tolist() == [0, 1, 2, 3]


# ---------------------------------------------------------------- configuration


def test_the_variant_reaches_the_configuration_and_the_guarantee():
    from dpkit.methods.pp import Config
    from dpkit.privacy import max_private_tokens

    seed_paper = Config(epsilon=4.0)
    ink = Config(epsilon=4.0, variant="invisibleink", clip=0.5)
    assert seed_paper.variant == "amin" and seed_paper.to_dict()["variant"] == "amin"
    assert ink.settings().variant == "invisibleink" and ink.to_dict()["variant"] == "invisibleink"
    assert ink.max_private_tokens() == invisibleink_max_private_tokens(4.0, 1e-6, 8.0, 0.5, 1.0)
    # same formula as Theorem 1 with c read as DClip's C: the accounting is shared, only c's meaning changes
    assert ink.max_private_tokens() == max_private_tokens(4.0, 1e-6, 8.0, 0.5, 1.0)
    assert ink.guarantee()["variant"] == "invisibleink" and ink.contract().kind == "private_prediction_invisibleink"
    with pytest.raises(ParameterError, match="variant"):
        Config(epsilon=4.0, variant="nope")


def test_synth_set_variant_is_recorded_and_a_bad_value_exits_2(tmp_path, capsys):
    from dpkit.cli import main

    plan = ["synth", "pp", "--epsilon", "4", "--plan", "--label-column", "label", "--labels", "a,b", "--smoke"]
    assert main(plan + ["--set", "variant=invisibleink", "--set", "clip=0.5"]) == 0
    printed = capsys.readouterr().out
    assert '"variant": "invisibleink"' in printed and "private prediction, Invisibl" in printed
    assert main(plan) == 0 and '"variant": "amin"' in capsys.readouterr().out   # the default stays the seed paper's
    out = tmp_path / "run"
    assert main(["synth", "pp", "--input", "data/own_data_sample.csv", "--text-column", "text", "--label-column",
                 "label", "--epsilon", "4", "--out", str(out), "--smoke", "--set", "variant=invisible"]) == 2
    err = capsys.readouterr().err
    assert "variant" in err and "invisibleink" in err and "Traceback" not in err and not out.exists()


# ---------------------------------------------------------------- invariants on the bundled model

REVIEWS = ["A warm, funny film.", "I loved it.", "Dull.", "Great acting, a weak and very long plot " * 3]


def _models():
    from dpkit.models import llamacpp

    out = ["torch"]
    if llamacpp.available():
        out.insert(0, "llamacpp")
    return out


@pytest.fixture(scope="module", params=_models())
def lm(request):
    if request.param == "llamacpp":
        from dpkit.privpred.llamacpp_engine import load_private_llamacpp

        return load_private_llamacpp()
    from dpkit.models import load_lm

    return load_lm()


def _prompts(lm, reviews):
    from dpkit.privpred import get_template

    t = get_template("sentiment")
    return [t.render(lm, t.private_message(x, "Positive")) for x in reviews], t.render(lm, t.public_message("Positive"))


def _settings(**kw):
    from dpkit.privpred import DecodeSettings

    options = dict(expected_batch_size=4, clip=0.5, temperature=1.0, max_private_tokens=10, max_new_tokens=5,
                   top_k=20, variant="invisibleink")
    options.update(kw)
    return DecodeSettings(**options)


def _private_rows(lm, texts, **kw):
    options = dict(keep_last=None, max_new_tokens=8, cache_rows=16, chunk_rows=8)
    options.update(kw)
    from dpkit.privpred.llamacpp_engine import LlamaCppPrivateRows, is_llamacpp
    from dpkit.privpred.private_rows import PrivateRows

    return (LlamaCppPrivateRows if is_llamacpp(lm) else PrivateRows)(lm, texts, **options)


@pytest.mark.slow
def test_public_row_does_not_depend_on_the_private_rows(lm):
    from dpkit.privpred import decode_batch

    private, public = _prompts(lm, REVIEWS)
    seen = {}
    for name, rows in (("none", []), ("some", private[:2]), ("other", private[2:])):
        trace = []
        decode_batch(lm, rows, public, _settings(max_private_tokens=1, max_new_tokens=1),
                     np.random.default_rng(0), on_step=lambda step, z: trace.append(z.clone()))
        seen[name] = trace[0]
    assert torch.equal(seen["none"], seen["some"]) and torch.equal(seen["none"], seen["other"])


@pytest.mark.slow
def test_adding_a_prompt_moves_the_dclip_sum_by_its_own_row_only(lm):
    private, public = _prompts(lm, REVIEWS)
    public_z = lm.next_token_logits([public])[0]
    vocab = int(public_z.shape[-1])
    cand = topk_plus_candidates(public_z, 20, 0.5)

    def dsum(texts):
        return _private_rows(lm, texts).statistics(0.5, cand, vocab, softmax=False, reference=public_z).clipped_sum

    pair, three, own = dsum(private[:2]), dsum(private[:3]), dsum(private[2:3])
    assert (three - pair - own).abs().max().item() < 1e-12
    assert own.abs().max().item() <= 0.5 and not torch.equal(own, dsum(private[3:4]))


@pytest.mark.slow
def test_replay_and_memory_bounds_give_the_same_tokens(lm):
    from dpkit.privpred import decode_batch

    # 4 rows (the long review among them) and 6 private tokens in 2 examples of 3: with cache_rows 1 three rows
    # are replayed from their text at every step, with (2, 3) two are, in chunks of 3 and 1; a finished example
    # restarts every row. Replay re-encodes a row's whole prompt at every step, so the prompts are the bare
    # reviews (no chat template: ~10 tokens, not ~60); what is compared, the tokens, does not depend on them.
    batch, public = [f"Review: {text}\nSentiment:" for text in REVIEWS], "Review:"
    outputs = []
    settings = dict(max_private_tokens=6, max_new_tokens=3)
    for cache_rows, chunk_rows in ((16, 8), (1, 1), (2, 3), (16, 8)):
        res = decode_batch(lm, batch, public, _settings(private_cache_rows=cache_rows, private_chunk_rows=chunk_rows,
                                                        **settings), np.random.default_rng(11))
        outputs.append(res.to_record())
    assert outputs[0] == outputs[1] == outputs[2] == outputs[3]
    assert outputs[0]["private_tokens"] == 6 and len(outputs[0]["examples"]) >= 2
    rows = _private_rows(lm, batch, cache_rows=2, chunk_rows=1)
    assert len(rows.kept) == 2          # at most cache_rows keep a cache, whatever the batch's size


@pytest.mark.slow
def test_the_ledger_spends_the_stated_guarantee(lm):
    from dpkit.privacy import PrivacyLedger
    from dpkit.privpred import PrivatePredictionConfig, generate_synthetic, get_template

    config = PrivatePredictionConfig(epsilon=2.0, delta=1e-5, expected_batch_size=2.0, clip=0.3, max_new_tokens=4,
                                     max_examples_per_batch=1, variant="invisibleink")
    result = generate_synthetic(REVIEWS, get_template("sentiment"), config, labels=[1, 0, 1, 0],
                                label_names=["negative", "positive"], n_batches=2, model=lm, seed=3, max_batches=1)
    ledger = PrivacyLedger.from_dict(result.ledger.to_dict())
    r = config.max_private_tokens()
    assert ledger.rho == pytest.approx(invisibleink_guarantee(r, 1e-5, 2.0, 0.3, 1.0)["rho"], rel=1e-12)
    assert result.guarantee["epsilon"] <= 2.0 and result.guarantee["variant"] == "invisibleink"
    assert ledger.rho == pytest.approx(paper_rho(r, 0.3, 2.0, 1.0), rel=1e-8)
    assert all(e.text for e in result.examples)


@pytest.mark.slow
def test_the_release_audit_does_not_refute_a_whole_invisibleink_release():
    """The release auditor (canaries, one run) on the variant's whole release, as on the seed paper's."""
    from dpkit.audit.release import zoo
    from dpkit.audit.release.audit import audit_release, neighbouring_for
    from dpkit.data.tables import label_set, read_table
    from dpkit.methods import Records

    # The audit's statistics are its 100 canaries (each included with probability 1/2) and its confidence; the
    # background records enter neither its false-positive bound nor its guesses, and with fewer of them a canary is
    # a larger share of its batch (a leak is no harder to see). 12 background rows (4 per label, not the 60 of
    # data/own_data_sample.csv) cut the prompts the model decodes from ~110 to ~62.
    table = read_table("tests/data/own_data_small.csv", "text", "label")
    records = Records.from_strings(table.texts, table.labels, label_set(table.labels, None), declared=False)
    synthesize = zoo.method("pp", 4.0, seed=0, variant="invisibleink", clip=0.5)
    result = audit_release(synthesize, records, canaries=100, claimed_epsilon=4.0, claimed_delta=1e-6, seed=100,
                           scorers=("ngram", "chars"), neighbouring=neighbouring_for("pp"))
    assert result.verdict == "not refuted", result.to_dict()


def test_the_comparison_has_an_invisibleink_row():
    from dpkit.experiments.compare import Sizes, configs, method_of
    from dpkit.experiments.presets import parse_methods

    assert parse_methods("pp,pp_ink") == ("pp", "pp_ink") and method_of("pp_ink") == "pp"
    for epsilon in (1.0, 4.0):
        rows = configs(epsilon, Sizes(), document_type="short text")
        ink, seed_paper = rows["pp_ink"], rows["pp"]
        assert ink.variant == "invisibleink" and seed_paper.variant == "amin"
        assert (ink.expected_batch_size, ink.top_k, ink.n_batches) == (
            seed_paper.expected_batch_size, seed_paper.top_k, seed_paper.n_batches)
        assert ink.max_private_tokens() >= ink.max_new_tokens and ink.guarantee()["epsilon"] <= epsilon
    with pytest.raises(ParameterError, match="--methods"):
        parse_methods("pp_nope")
