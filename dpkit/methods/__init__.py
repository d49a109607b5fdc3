"""The three methods in one shape: ``synthesize(records, config, run, backend, seed_sequence) -> Release``.

>>> from dpkit.methods import METHODS, Records
>>> method = METHODS["kps"]                         # or "pp", "dpst"
>>> config = method.Config.smoke(epsilon=4.0)       # public parameters, validated
>>> release = method.synthesize(records, config, None, backend, np.random.SeedSequence())  # doctest: +SKIP

See :mod:`dpkit.methods.base` for the shape, :mod:`dpkit.runs.layout` for the
run folder (``release/`` and ``private/``) the ``dpkit synth`` command writes.
"""

from dpkit.methods import dpst, kps, pp
from dpkit.methods.base import PrivacyStatement, Records, Release

METHODS = {"kps": kps, "pp": pp, "dpst": dpst}

__all__ = ["METHODS", "PrivacyStatement", "Records", "Release", "dpst", "kps", "pp"]
