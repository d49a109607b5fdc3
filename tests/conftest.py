"""Shared test settings: offline hubs and one torch thread per test worker."""

import os

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("DPKIT_THREADS", "1")

from dpkit import runtime  # noqa: E402

runtime.setup()
