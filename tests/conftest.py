"""Shared test settings: offline hubs, few threads, a private model cache if asked."""

import os

from dpkit import runtime

runtime.set_offline()
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("DPKIT_THREADS", "1")
