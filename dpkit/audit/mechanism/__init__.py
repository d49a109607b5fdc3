"""Audits of one mechanism: search an output event on half the samples, certify it on the other half.

* :func:`audit` (:mod:`~dpkit.audit.mechanism.tester`) - the tester, with the event
  families of :mod:`~dpkit.audit.mechanism.families` (thresholds, outcome sets,
  joint events over columns, DP-Sniper's learned classifiers) and the
  Clopper-Pearson bounds of :mod:`~dpkit.audit.mechanism.stats`;
* :mod:`~dpkit.audit.mechanism.pairs` - StatDP's input patterns and a pair search;
  :mod:`~dpkit.audit.mechanism.power` - samples needed before a run;
  :mod:`~dpkit.audit.mechanism.pair_loss` - the exact privacy loss of a pair;
* :mod:`~dpkit.audit.mechanism.classic` and :mod:`~dpkit.audit.mechanism.calibration` -
  the calibration zoo of classic mechanisms (true epsilon known) and its power /
  false-positive runs;
* :mod:`~dpkit.audit.mechanism.registry` - the auditable mechanisms (``specs()``,
  ``run_audit(name, epsilon, samples, seed)``), registered by the modules of
  :mod:`~dpkit.audit.mechanism.adapters`, each with a worst-case pair.
"""

from dpkit.audit.mechanism.events import FeatureEvent, SetEvent
from dpkit.audit.mechanism.stats import clopper_pearson_lower, clopper_pearson_upper, epsilon_lower_bound
from dpkit.audit.mechanism.tester import (AuditResult, ThresholdEvent, audit, check_event, deviation_size,
                                          laplace_llr, projection)

__all__ = ["audit", "check_event", "AuditResult", "ThresholdEvent", "SetEvent", "FeatureEvent", "epsilon_lower_bound",
           "clopper_pearson_lower", "clopper_pearson_upper", "laplace_llr", "projection", "deviation_size"]
