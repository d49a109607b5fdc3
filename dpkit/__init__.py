"""dpkit: differentially private text generation with LLMs.

The library behind the executable book. Every mechanism states its privacy
contract (neighbouring relation, unit of privacy, privacy measure,
sensitivity) as data; every run reports its guarantee at its configured caps.
"""

import os as _os

# OpenMP's idle workers sleep instead of spinning (unless the user chose otherwise). PyTorch and
# llama.cpp load the same libgomp, which reads this once, when the first of them is imported; spinning
# workers of one runtime stall the other's threads on a shared or busy machine (dpkit.models.llamacpp).
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.1.0"
