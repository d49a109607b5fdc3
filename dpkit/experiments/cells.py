"""One cell of ``dpkit experiment compare`` on this machine: a release through the method's own
``synthesize``, scored by the project's classifier.

The release is made exactly as ``dpkit synth`` makes it
(:data:`dpkit.methods.METHODS`). DP-KPS reads every training record of the split.
DP-ST, a local method, privatizes only the records it releases (``per_class`` per
label, drawn from the seed's own node). Private prediction reads the records its
batches hold at their expected size, ``n_batches x ceil(s)`` per label, drawn from
another node of the seed: it writes one text per batch, so all the records of a
large split would make each batch hundreds of prompts, each decoded at every
step (on a CPU, hours per release). Each cell is then a release of the records it
read. Only the release's wall time is the ``wall_s`` of a cell; loading the data
and the models is not.

The scores read real test texts and, for the ``real`` cell, real training texts:
evaluation, never part of a release. Beside the scores, each cell measures its
texts against the real test texts (:func:`dpkit.textmetrics.measure_texts`) and
returns them (``texts``), so that a reader can see what a score was made of; the
``real`` cell returns its measures (a reference) but not its texts, which are records
of the data set.

A cell is a seeded teaching run, not a differentially private release: its
mechanisms are calibrated to its epsilon, but its seed is fixed and stored, and
every cell is another run on the same records (:data:`TEACHING_RUN`).
"""

from __future__ import annotations

import math
import time
from importlib import metadata

import numpy as np

from dpkit import runtime
from dpkit.backends import get_backend
from dpkit.data import load_dataset
from dpkit.evaluation import evaluate
from dpkit.experiments.compare import configs, method_of, per_class_subset, pp_decoding_key
from dpkit.experiments.kps_corpora import MemoEmbedder
from dpkit.experiments.label_only import label_only_texts
from dpkit.methods import Records
from dpkit.models.embed import load_embedder
from dpkit.seeds import generator, root_sequence
from dpkit.textmetrics import measure_texts

DOCUMENT_TYPES = {"rotten_tomatoes": "one-sentence movie review", "health_tweets": "health news tweet",
                  "medical": "medical exam question", "commons_speeches": "speech in the UK House of Commons",
                  "online_questions": "question someone asked online",
                  "everyday_situations": "short description of an everyday situation",
                  "everyday_problems": "short problem someone wants to solve",
                  "general_questions": "short question", "short_passages": "short passage",
                  "question_collections": "question"}
#: Classes kept per data set (the largest ones): two wherever a data set has more.
N_CLASSES = {"health_tweets": 2, "medical": 2}
#: What every stored cell says it is (its ``note``).
TEACHING_RUN = ("a seeded teaching run on public benchmark data, not a differentially private release: the "
                "mechanisms are calibrated to the cell's epsilon, but the seed is fixed and stored (anyone can "
                "replay the noise), and every cell of the grid is another run on the same records")


def package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


class LocalCells:
    """Runs cells of one preset with the local model; loads each data set and the models once.

    Private prediction decodes the same tokens from the same seed at every epsilon
    whose private-token cap does not bind (:func:`~dpkit.experiments.compare.pp_decoding_key`):
    such a cell reuses the texts decoded for the first of them in this process, records
    ``decoding_shared_with_epsilon`` and that decoding's wall time. Its texts are
    exactly the release its own configuration would make.
    """

    def __init__(self, preset, backend_name: str = "local", model: str | None = None):
        self.preset = preset
        self.backend_name = backend_name
        self.model_request = model  # None: $DPKIT_MODEL or the bundled model; a name of dpkit.models.named or a path
        self._backend = None
        self._embedder = None
        self._data: dict[str, tuple] = {}
        self._decoded: dict[tuple, tuple] = {}  # private prediction: (texts, labels, wall_s, epsilon decoded at)

    def _models(self):
        if self._backend is None:
            runtime.setup()
            self._backend = get_backend(self.backend_name, self.model_request)
            self._embedder = MemoEmbedder(load_embedder())
        return self._backend, self._embedder

    def _dataset(self, name: str):
        if name not in self._data:
            preset = self.preset
            data = load_dataset(name, max_per_class=preset.max_per_class, seed=0,
                                test_fraction=preset.test_fraction,
                                **({"n_classes": N_CLASSES[name]} if name in N_CLASSES else {}))
            names = tuple(data.label_names)
            train_labels = [int(y) for y in data.train_labels]
            records = Records(tuple(data.train_texts), tuple(train_labels), names)
            test_texts, test_labels = list(data.test_texts), [names[int(y)] for y in data.test_labels]
            x_test = np.asarray(self._models()[1].encode(test_texts), dtype=np.float64)
            self._data[name] = (records, test_texts, test_labels, x_test)
        return self._data[name]

    def runtime(self) -> dict:
        from dpkit.privpred import runtime_name

        backend = self._models()[0]
        # DP-KPS and DP-ST generate through the backend's runtime; private prediction decodes with the
        # model dpkit.privpred.resolve_local_lm picks for the backend (llama.cpp or PyTorch: runtime_name)
        return {"generation": getattr(backend, "runtime", None), "private_prediction": runtime_name(backend),
                "torch": package_version("torch"), "llama_cpp": package_version("llama_cpp_python")}

    def model(self) -> str:
        """The model's name as the backend reports it (the bundled SmolLM2, a named model, or the path given)."""
        return self._models()[0].model

    def __call__(self, dataset: str, method: str, epsilon: float, seed: int) -> dict:
        from dpkit.methods import METHODS  # the method modules load PyTorch

        backend, embedder = self._models()
        records, test_texts, test_labels, x_test = self._dataset(dataset)
        names = records.label_set
        subset = per_class_subset(records.labels, self.preset.sizes.per_class, generator(root_sequence(seed), 9))
        release_info, wall = {}, 0.0
        if method == "real":
            texts = [records.texts[i] for i in subset]
            labels = [names[records.labels[i]] for i in subset]
        elif method == "label_only":  # the reference that reads no record: document type and label only
            start = time.perf_counter()
            texts, index = label_only_texts(backend, DOCUMENT_TYPES.get(dataset, "short text"), names,
                                            self.preset.sizes.per_class, seed=seed,
                                            max_new_tokens=self.preset.sizes.max_new_tokens)
            wall = time.perf_counter() - start
            labels = [names[k] for k in index]
            release_info = {"n_texts": len(texts), "n_records_read": 0, "reads_no_record": True}
        else:
            cfg = configs(epsilon, self.preset.sizes, document_type=DOCUMENT_TYPES.get(dataset, "short text"),
                          smoke=self.preset.smoke)[method]
            if method in ("kps", "ft"):   # both read every record of the split
                source = records
            else:
                chosen = subset if method == "dpst" else per_class_subset(
                    records.labels, cfg.n_batches * math.ceil(cfg.expected_batch_size),
                    generator(root_sequence(seed), 10))
                source = Records(tuple(records.texts[i] for i in chosen), tuple(records.labels[i] for i in chosen),
                                 names)
            key = (dataset, seed, pp_decoding_key(cfg)) if method_of(method) == "pp" else None
            if key in self._decoded:  # the same tokens from the same seed: decoded once (see the class docstring)
                texts, labels, wall, first = self._decoded[key]
                release_info = {"decoding_shared_with_epsilon": first}
            else:
                start = time.perf_counter()
                release = METHODS[method_of(method)].synthesize(source, cfg, None, backend, root_sequence(seed))
                wall = time.perf_counter() - start
                texts, labels = release.texts(), release.labels()
                if key is not None:
                    self._decoded[key] = (texts, labels, wall, "inf" if math.isinf(epsilon) else f"{epsilon:g}")
            release_info.update({"n_texts": len(texts), "n_records_read": len(source.texts),
                                 "config_epsilon": cfg.epsilon,
                                 "noise_off": math.isinf(epsilon)})
            if "decoding_shared_with_epsilon" not in release_info:
                release_info.update({"epsilon": release.epsilon, "delta": release.delta})
            else:  # this cell's budget (epsilon at delta): what its own release would be charged against
                release_info.update({"epsilon": float(cfg.epsilon), "delta": float(cfg.delta)})
        kept = [(t, y) for t, y in zip(texts, labels) if t.strip()]
        result = evaluate([t for t, _ in kept] or ["(nothing)"], [y for _, y in kept] or [names[0]], test_texts,
                          test_labels, embedder=embedder, test_features=x_test,
                          n_bootstrap=self.preset.n_bootstrap, seed=seed)
        metrics = {k: result[k] for k in ("balanced_accuracy", "macro_f1", "accuracy")}
        metrics.update({"majority_baseline": result["majority_baseline"], "n_train": result["n_train"],
                        "n_test": len(test_texts), "n_private_records": len(records.texts)})
        measures = measure_texts(texts, test_texts, embedder=embedder, real_features=x_test,
                                 document_type=DOCUMENT_TYPES.get(dataset, "short text"), seed=seed) if texts else None
        out = {"metrics": metrics, "release": release_info, "wall_s": wall, "runtime": self.runtime(),
               "model": self.model(), "text_measures": measures}
        if method != "real":  # the real cell's texts are records of the data set: measured, not stored
            out["texts"] = {"texts": [str(t) for t in texts], "labels": [str(y) for y in labels]}
        return out
