"""Experiments: the code that runs the methods to measure them, outside any release.

Nothing here is a mechanism. These modules read private training texts to build
releases through :data:`dpkit.methods.METHODS` (or the mechanism modules a chapter
derives), score them against real test texts, and arrange the numbers the
chapters plot. What they report is evaluation, never part of a release.

Modules: :mod:`~dpkit.experiments.compare` (the comparison's public sizes and
each method's configuration, intervals over seeds), :mod:`~dpkit.experiments.cli` (``dpkit experiment
compare``: the comparison at a size preset, one provenance-stamped JSON per cell,
resumable) with its parts :mod:`~dpkit.experiments.presets` (the size presets and their cells),
:mod:`~dpkit.experiments.cell_files` (a cell's file and its checks), :mod:`~dpkit.experiments.sealing`
(digests and seals), :mod:`~dpkit.experiments.provenance` (where a cell was made) and
:mod:`~dpkit.experiments.sweep` (the resumable writer), :mod:`~dpkit.experiments.stored` (the stored cells loaded, checked, summarized and
re-run in part), :mod:`~dpkit.experiments.cells` (one such cell on this machine, through the method's own
``synthesize``), :mod:`~dpkit.experiments.kps_corpora` (the DP-KPS chapter's corpora
and baselines), :mod:`~dpkit.experiments.chapter_ledger` (one ledger over a
chapter's repeated DP-ST releases), :mod:`~dpkit.experiments.audit_study` (the
audit chapter's tables).
"""
