"""DP-KPS {cite}`nagesh2024dpkps`: private vocabulary, DP-KDE over keyphrase embeddings,
keyphrase sequences, prompted generation and downstream evaluation.

Modules: :mod:`~dpkit.kps.vocabulary` (Laplace histogram + top N),
:mod:`~dpkit.kps.rff` (random Fourier features), :mod:`~dpkit.kps.kde` (the DP-KDE
release), :mod:`~dpkit.kps.ensembles` (linear / logarithmic ensembles),
:mod:`~dpkit.kps.sequences` (one keyphrase, independent and iterative sequences),
:mod:`~dpkit.kps.pipeline` (per-class generation with a ledger),
:mod:`~dpkit.kps.prompts` (privatized prompts through the backends),
:mod:`~dpkit.kps.evaluate` (downstream classifiers, baselines, CORAL).
"""
