"""``dpkit.textmetrics`` loads no model: without precomputed features, the caller hands it an embedder.

(The package used to load the bundled MiniLM itself, an import of ``dpkit.models`` from below it.)
"""

from __future__ import annotations

import pytest

from dpkit.textmetrics import measure_texts
from dpkit.validate import ParameterError


def test_measure_texts_without_features_or_an_embedder_is_one_clear_error():
    with pytest.raises(ParameterError, match="embedder=None is invalid: is needed when synthetic_features"):
        measure_texts(["a synthetic text"], ["a real text"], real_features=[[1.0, 0.0]])
