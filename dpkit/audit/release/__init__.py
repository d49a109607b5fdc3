"""Black-box audits of a whole release, from its texts alone.

* :mod:`~dpkit.audit.release.audit` - canaries in one run (:mod:`~dpkit.audit.release.canaries`,
  scored by :mod:`~dpkit.audit.release.scorers`, summarised by :mod:`~dpkit.audit.release.roc`)
  and the one-run lower bound (:mod:`~dpkit.audit.release.one_run`);
* :mod:`~dpkit.audit.release.disclosure` - a train/holdout test without canaries;
* :mod:`~dpkit.audit.release.zoo` - the three methods as black boxes, and broken whole pipelines;
* :mod:`~dpkit.audit.release.method_run` - a ``dpkit synth`` method run on your data plus
  canaries, through the same path as the synth command (``dpkit audit release``).
"""
