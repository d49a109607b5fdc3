"""Black-box audits of a whole release, from its texts alone.

* :mod:`~dpkit.audit.release.audit` - canaries in one run (:mod:`~dpkit.audit.release.canaries`,
  scored by :mod:`~dpkit.audit.release.scorers`, summarised by :mod:`~dpkit.audit.release.roc`)
  and the one-run lower bound (:mod:`~dpkit.audit.release.one_run`);
* :mod:`~dpkit.audit.release.disclosure` - a train/holdout test without canaries;
* :mod:`~dpkit.audit.release.zoo` - the three methods as black boxes, and broken whole pipelines;
* :mod:`~dpkit.audit.release.method_run` - a ``dpkit synth`` method run on your data plus
  canaries, through the same path as the synth command (``dpkit audit release``).
"""

import warnings
from importlib import import_module

#: Names this package held before the audit split, kept as re-exports that warn: old name -> (module, name).
MOVED = {"audit_release": ("dpkit.audit.release.audit", "audit_release")}


def __getattr__(name: str):
    """A name that moved (:data:`MOVED`): returned from its new module, with a DeprecationWarning naming it."""
    if name in MOVED:
        module, attribute = MOVED[name]
        warnings.warn(f"dpkit.audit.release.{name} moved to {module}.{attribute}; import it from there",
                      DeprecationWarning, stacklevel=2)
        return getattr(import_module(module), attribute)
    raise AttributeError(f"module 'dpkit.audit.release' has no attribute {name!r}")
