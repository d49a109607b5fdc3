"""``dpkit data``: look at the bundled data sets and vocabularies without writing code::

    dpkit data describe NAME [--n-classes N] [--max-per-class M] [--test-fraction F]
                             [--seed S] [--show K] [--json]
    dpkit data vocabulary {english,medical} [--n N] [--show K] [--json]
    dpkit data provenance [--json]

Exit status 2 (and a message naming the argument) for invalid arguments.
"""

from __future__ import annotations

import json
import sys

from ..validate import ParameterError
from .provenance import SOURCES, provenance
from .registry import load_dataset
from .vocabulary import english_vocabulary, medical_vocabulary


def register(subparsers) -> None:
    data = subparsers.add_parser("data", help="describe the bundled data sets and vocabularies")
    kinds = data.add_subparsers(dest="data_kind", required=True)

    describe = kinds.add_parser("describe", help="class counts of a data set's seeded split")
    describe.add_argument("name", help="medical, rotten_tomatoes, health_tweets or news")
    describe.add_argument("--n-classes", type=int, default=None, help="keep the largest N classes")
    describe.add_argument("--max-per-class", type=int, default=None, help="cap per class")
    describe.add_argument("--test-fraction", type=float, default=0.2, help="in (0, 1)")
    describe.add_argument("--seed", type=int, default=0, help="seed of the split (>= 0)")
    describe.add_argument("--show", type=int, default=0, help="print K training examples")
    describe.add_argument("--json", action="store_true", help="print one JSON object")
    describe.set_defaults(func=_describe)

    vocab = kinds.add_parser("vocabulary", help="size and head of a public vocabulary")
    vocab.add_argument("which", choices=["english", "medical"])
    vocab.add_argument("--n", type=int, default=None, help="vocabulary size (default: the "
                                                            "function's default)")
    vocab.add_argument("--show", type=int, default=20, help="print the first K entries")
    vocab.add_argument("--json", action="store_true", help="print one JSON object")
    vocab.set_defaults(func=_vocabulary)

    prov = kinds.add_parser("provenance", help="package, version, origin and license of each")
    prov.add_argument("--json", action="store_true", help="print one JSON list")
    prov.set_defaults(func=_provenance)


def _fail(error: ParameterError) -> int:
    print(f"dpkit data: error: argument --{error.name.replace('_', '-')}: {error}",
          file=sys.stderr)
    return 2


def _describe(args) -> int:
    try:
        ds = load_dataset(args.name, n_classes=args.n_classes, max_per_class=args.max_per_class,
                          test_fraction=args.test_fraction, seed=args.seed)
    except ParameterError as error:
        return _fail(error)
    show = max(0, args.show)
    examples = [{"label": ds.label_names[y], "text": t}
                for t, y in zip(ds.train_texts[:show], ds.train_labels[:show])]
    if args.json:
        print(json.dumps({"name": ds.name, "label_names": list(ds.label_names),
                          "train": ds.class_counts("train"), "test": ds.class_counts("test"),
                          "examples": examples}))
        return 0
    print(ds.describe())
    for example in examples:
        print(f"[{example['label']}] {example['text']}")
    return 0


def _vocabulary(args) -> int:
    function = english_vocabulary if args.which == "english" else medical_vocabulary
    try:
        words = function() if args.n is None else function(args.n)
    except ParameterError as error:
        return _fail(error)
    head = words[: max(0, args.show)]
    if args.json:
        print(json.dumps({"which": args.which, "size": len(words), "head": head}))
    else:
        print(f"{args.which} vocabulary: {len(words)} entries")
        print(", ".join(head))
    return 0


def _provenance(args) -> int:
    rows = [provenance(name) for name in SOURCES]
    if args.json:
        print(json.dumps(rows))
        return 0
    for row in rows:
        print(f"{row['name']}: {row['package']} {row['version']} - {row['upstream']} "
              f"- license: {row['license']}")
    return 0
