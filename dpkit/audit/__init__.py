"""Privacy audits: empirical lower bounds on epsilon, with the evidence to rerun them.

Three rooms and a door:

* :mod:`dpkit.audit.mechanism` - audits of one mechanism on a worst-case
  neighbouring pair: the tester (:func:`~dpkit.audit.mechanism.tester.audit`),
  its event families and statistics, the power calculation, StatDP's pair
  search, the calibration zoo of classic mechanisms, and the registry of
  auditable mechanisms with their adapters (:mod:`dpkit.audit.mechanism.adapters`,
  the bug zoo among them);
* :mod:`dpkit.audit.release` - black-box audits of a whole release: canaries in
  one run and the one-run bound, the disclosure test without canaries, the
  methods as black boxes and broken whole pipelines, and the audit of a
  ``dpkit synth`` method's run on your data;
* reports - :mod:`dpkit.audit.report` (a run's privacy checklist, sensitivity
  re-checks, the registered audits of its ledger's mechanisms and a verdict) and
  :mod:`dpkit.audit.accounting` (a saved ledger recomputed with dp_accounting);
* :mod:`dpkit.audit.cli` - ``python -m dpkit audit list|run|samples|release``.
"""
