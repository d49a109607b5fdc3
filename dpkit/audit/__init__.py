"""Privacy audits: empirical lower bounds on epsilon, with the evidence to rerun them.

* :func:`audit` - the tester: search output events on half the samples
  (:mod:`dpkit.audit.families`: thresholds, outcome sets, joint events over
  columns, DP-Sniper's learned classifiers), certify them on the other half with
  Clopper-Pearson bounds and a Bonferroni correction;
* :mod:`dpkit.audit.pairs` - StatDP's input patterns and a pair search with the
  correction; :mod:`dpkit.audit.power` - samples needed before a run;
* :mod:`dpkit.audit.classic` and :mod:`dpkit.audit.calibration` - the calibration
  zoo of classic mechanisms (true epsilon known) and its power / false-positive runs;
* :mod:`dpkit.audit.accounting` - a saved ledger recomputed with dp_accounting;
* :mod:`dpkit.audit.pair_loss` - the exact privacy loss of an adapter's pair;
* :mod:`dpkit.audit.registry` - the auditable mechanisms (``specs()``,
  ``run_audit(name, epsilon, samples, seed)``), each with a worst-case pair;
* :mod:`dpkit.audit.zoo` - deliberately broken variants the audit must catch;
* :mod:`dpkit.audit.release` - a black-box audit of a whole release: canaries in
  one run (:mod:`~dpkit.audit.canaries`, :mod:`~dpkit.audit.scorers`) and the
  one-run bound (:mod:`~dpkit.audit.one_run`); :mod:`dpkit.audit.disclosure` -
  a train/holdout test without canaries; :mod:`dpkit.audit.release_zoo` - the
  methods as black boxes and broken whole pipelines;
* ``python -m dpkit audit list|run|release`` - the same from the command line.
"""

from dpkit.audit.stats import clopper_pearson_lower, clopper_pearson_upper, epsilon_lower_bound
from dpkit.audit.events import FeatureEvent, SetEvent
from dpkit.audit.tester import (AuditResult, ThresholdEvent, audit, check_event, deviation_size,
                                laplace_llr, projection)

__all__ = ["audit", "check_event", "AuditResult", "ThresholdEvent", "SetEvent", "FeatureEvent", "epsilon_lower_bound",
           "clopper_pearson_lower", "clopper_pearson_upper", "laplace_llr", "projection", "deviation_size"]
