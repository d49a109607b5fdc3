"""Moved to :mod:`dpkit.audit.release.scorers` in the audit split; this path is kept for old imports.

Importing it emits a ``DeprecationWarning`` that names the new path, and gives the new
module's names (the same objects).
"""

import warnings

from dpkit.audit.release import scorers as _moved

warnings.warn("dpkit.audit.scorers moved to dpkit.audit.release.scorers; import it from there",
              DeprecationWarning, stacklevel=2)
globals().update({name: value for name, value in vars(_moved).items() if not name.startswith("__")})
