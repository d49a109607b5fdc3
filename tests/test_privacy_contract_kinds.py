"""One table of contract kinds (dpkit.privacy.contract.KINDS), and a row for every kind in every consumer.

Before the table, kinds were strings dispatched by two tables that had drifted: the InvisibleInk kinds had
no re-derivation in the audit report, which then said "no independent re-derivation" for such a release.
"""

import ast
from pathlib import Path

import pytest

from dpkit.audit.mechanism import registry
from dpkit.audit.report import RULES, audit_plan, family_of, recheck_sensitivity
from dpkit.privacy import PrivacyContract
from dpkit.privacy.contract import KINDS
from dpkit.privacy.invisibleink import invisibleink_contract, invisibleink_token_contract
from dpkit.validate import ParameterError

ROOT = Path(__file__).resolve().parents[1]


def _stated_kinds() -> dict[str, str]:
    """Every ``kind="..."`` a dpkit module passes to a PrivacyContract (or its ``replace``): kind -> file."""
    found = {}
    for path in sorted((ROOT / "dpkit").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name not in ("PrivacyContract", "replace"):
                continue
            for keyword in node.keywords:
                if keyword.arg == "kind" and isinstance(keyword.value, ast.Constant) and keyword.value.value:
                    found[keyword.value.value] = str(path.relative_to(ROOT))
    return found


def test_every_kind_stated_in_the_library_has_a_row_in_the_table():
    stated = _stated_kinds()
    assert len(stated) >= 16  # the 16 families of today; a new mechanism adds its kind and its row
    missing = {kind: where for kind, where in stated.items() if kind not in KINDS}
    assert not missing, f"kinds stated without a row in dpkit.privacy.contract.KINDS: {missing}"


def test_every_row_of_the_table_is_stated_by_a_mechanism():
    assert set(KINDS) - set(_stated_kinds()) == set()


def test_the_audit_report_has_a_re_derivation_for_every_kind_and_no_other():
    assert set(RULES) == set(KINDS)


def test_every_audit_the_report_plans_is_a_registered_correct_audit():
    names = {spec.name for spec in registry.specs(broken=False)}
    for kind, (_, audits) in RULES.items():
        assert set(audits) <= names, (kind, set(audits) - names)


def test_family_comes_from_the_table():
    for kind, row in KINDS.items():
        assert family_of({"kind": kind}) == row.family
    assert family_of({"kind": ""}) == "unknown"


def test_a_contract_of_a_kind_outside_the_table_is_refused_naming_it():
    with pytest.raises(ParameterError, match="my_own"):
        PrivacyContract("mine", "add/remove", "record", "pure", 1.0, epsilon=1.0, kind="my_own")
    PrivacyContract("old", "add/remove", "record", "pure", 1.0, epsilon=1.0)  # no kind: saved before kinds


def test_invisibleink_contracts_are_re_derived_and_a_wrong_statement_is_caught():
    token = invisibleink_token_contract(8.0, 2.0, 1.0).to_dict()
    run = invisibleink_contract(40, 8.0, 2.0, 1.0, svt_sigma=0.5).to_dict()
    for contract in (token, run):
        check = recheck_sensitivity(contract)
        assert check.agrees is True, check
        assert "DClip" in check.method
        assert {name for name, _ in audit_plan(contract)} >= {"ii_token_dclip", "ii_token_topk_plus"}
    assert "Theorem 1 rho re-derived" in recheck_sensitivity(run).method
    assert recheck_sensitivity({**token, "sensitivity": 2 * token["sensitivity"]}).agrees is False
    assert recheck_sensitivity({**run, "rho": run["rho"] * 0.9}).agrees is False


def test_the_run_kinds_come_from_the_table():
    """Which kinds state a whole run of private tokens is a column of the table (``token_kind``), read by the
    audit report (the review's fact 16: the report kept its own tuple of them)."""
    from dpkit.audit import report
    from dpkit.privacy.contract import RUN_KINDS

    assert report.RUN_KINDS is RUN_KINDS
    assert set(RUN_KINDS) == {"private_prediction", "private_prediction_invisibleink"}
    for kind in RUN_KINDS:
        token = KINDS[KINDS[kind].token_kind]
        assert token.family == KINDS[kind].family and not token.token_kind
    run = invisibleink_contract(40, 8.0, 2.0, 1.0, svt_sigma=0.5).to_dict()
    assert [name for name, _ in audit_plan(run)][-1] == "pp_svt"  # the gate is audited for every run kind
