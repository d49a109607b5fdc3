"""The one generation loop: every pending prompt through a backend, each record appended as its batch ends.

The three methods (:mod:`dpkit.methods`), ``dpkit generate`` and the chapters
all generate through :func:`generate_records`, so resuming, batching and the
progress bar behave the same everywhere.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from dpkit.privacy.marks import Privatized, _completion, is_sealed
from dpkit.runs.run import _items
from dpkit.runtime import release_mode
from dpkit.validate import check_int


def generate_records(run: Any, backend: Any, prompts: Mapping | Iterable, *, batch_size: int = 1,
                     make_record: Callable[[str, Any, str], Any] | None = None, desc: str | None = None,
                     on_record: Callable[[str], None] | None = None, **generation: Any) -> dict[str, Any]:
    """Generate every pending prompt with ``backend``; return all records by key.

    ``run``: a :class:`~dpkit.runs.Run` (records appended as each batch
    finishes, only the missing keys generated on resume, the backend recorded
    in the manifest) or None (in memory). ``make_record(key, prompt, text)``
    builds the record (default ``{"text": text}``: prompts are not stored, since
    a local run's prompt may be private). ``on_record(key)`` is told each new
    record. ``generation`` goes to ``backend.generate_batch`` (``max_new_tokens``,
    ``temperature``, ``seed``...). The completion of a sealed Privatized prompt
    is returned (and stored) as Privatized text with the prompt's provenance.
    """
    if run is None:
        batch_size = check_int("batch_size", batch_size, minimum=1)
        todo = _items(prompts)
        batches = [todo[i:i + batch_size] for i in range(0, len(todo), batch_size)]
        out: dict[str, Any] = {}
    else:
        batches = run.pending_batches(prompts, batch_size, desc=desc)
    for batch in batches:
        with release_mode(run is not None and run.seed is None):   # no seed reaches the response cache
            texts = backend.generate_batch([prompt for _, prompt in batch], **generation)
        for (key, prompt), text in zip(batch, texts):
            text = _marked_like(prompt, text)
            record = make_record(key, prompt, text) if make_record else {"text": text}
            if run is None:
                out[key] = record
            else:
                run.append(key, record)
            if on_record is not None:
                on_record(key)
    if run is None:
        return out
    run.update(backend=backend)
    return run.records()


def _marked_like(prompt: Any, text: Any) -> Any:
    """The completion of a Privatized prompt is Privatized (post-processing, the prompt's provenance).

    Issued here, with the text the backend returned for exactly this prompt: the
    one place a completion gets its mark (:func:`dpkit.kps.prompts.synthetic_example`
    accepts nothing else). Completions of other prompts stay plain text.
    """
    if isinstance(prompt, Privatized) and is_sealed(prompt) and isinstance(text, str):
        return _completion(prompt, str(text))
    return text


def generate_texts(run: Any, backend: Any, prompts: Mapping[Any, Any], *, batch_size: int = 1,
                   desc: str | None = None, **generation: Any) -> dict[str, str]:
    """:func:`generate_records` for a mapping key -> prompt; returns key -> text for those keys."""
    records = generate_records(run, backend, prompts, batch_size=batch_size, desc=desc, **generation)
    return {str(k): records[str(k)]["text"] for k in prompts}
