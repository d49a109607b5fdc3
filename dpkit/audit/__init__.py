"""Privacy audits: empirical lower bounds on epsilon, with the evidence to rerun them.

* :func:`audit` - the tester: search an output event on half the samples
  (DP-Sniper style), certify it on the other half with Clopper-Pearson bounds;
* :mod:`dpkit.audit.registry` - the auditable mechanisms (``specs()``,
  ``run_audit(name, epsilon, samples, seed)``), each with a worst-case pair;
* :mod:`dpkit.audit.zoo` - deliberately broken variants the audit must catch;
* ``python -m dpkit audit list|run`` - the same from the command line.
"""

from dpkit.audit.stats import clopper_pearson_lower, clopper_pearson_upper, epsilon_lower_bound
from dpkit.audit.events import FeatureEvent, SetEvent
from dpkit.audit.tester import (AuditResult, ThresholdEvent, audit, check_event, deviation_size,
                                laplace_llr, projection)

__all__ = ["audit", "check_event", "AuditResult", "ThresholdEvent", "SetEvent", "FeatureEvent", "epsilon_lower_bound",
           "clopper_pearson_lower", "clopper_pearson_upper", "laplace_llr", "projection", "deviation_size"]
