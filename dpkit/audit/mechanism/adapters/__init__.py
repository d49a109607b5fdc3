"""The auditable mechanisms: each module wraps dpkit's real code and registers its audits
(:func:`dpkit.audit.mechanism.registry.register`) with a worst-case neighbouring pair.

:mod:`~.core` (the privacy core), :mod:`~.kps` (DP-KPS), :mod:`~.privpred` (private
prediction), :mod:`~.dpst` (DP-ST), :mod:`~.invisibleink` (InvisibleInk's token),
:mod:`~.dpsgd` (one DP-SGD step and its broken twins) and :mod:`~.broken` (the bug zoo:
deliberately broken variants next to their correct twins).
"""
