"""DP fine-tuning: DP-SGD on a small model's adapters, and its privacy accounting.

:mod:`dpkit.ft.accounting` states the guarantee of DP-SGD (the subsampled Gaussian
mechanism composed over the training steps) and calibrates its noise. The package
imports nothing heavy at import time: torch and the training code load only where they
are used.
"""
