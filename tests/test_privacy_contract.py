"""PrivacyContract: validation, zCDP costs, printing and round trips."""

import math

import pytest

from dpkit.privacy import PrivacyContract
from dpkit.validate import ParameterError


def test_costs_per_measure():
    pure = PrivacyContract("m", "add/remove", "document", "pure", 1.0, epsilon=0.4)
    br = PrivacyContract("m", "add/remove", "document", "bounded-range", 1.0, epsilon=0.4)
    z = PrivacyContract("m", "replace-one", "prompt", "zcdp", 2.0, rho=0.03)
    assert pure.rho() == pytest.approx(0.08, rel=1e-15)
    assert br.rho() == pytest.approx(0.02, rel=1e-15)
    assert z.rho() == 0.03
    assert z.rho_parameter == 0.03


def test_approx_has_no_zcdp_cost():
    c = PrivacyContract("m", "add/remove", "document", "approx", 1.0, epsilon=1.0, delta=1e-6)
    with pytest.raises(ParameterError, match="measure"):
        c.rho()
    assert c.to_dict()["rho_cost"] is None


@pytest.mark.parametrize("kwargs, name", [
    (dict(neighbouring="swap"), "neighbouring"),
    (dict(measure="renyi"), "measure"),
    (dict(unit=""), "unit"),
    (dict(sensitivity=-1.0), "sensitivity"),
    (dict(epsilon=None), "epsilon"),
    (dict(epsilon=-0.1), "epsilon"),
    (dict(delta=1e-5), "delta"),
    (dict(delta=1.0), "delta"),
    (dict(measure="zcdp", epsilon=None), "rho"),
    (dict(measure="approx", delta=0.0), "delta"),
    (dict(epsilon=math.nan), "epsilon"),
])
def test_bad_fields_name_the_parameter(kwargs, name):
    base = dict(mechanism="m", neighbouring="add/remove", unit="document", measure="pure", sensitivity=1.0,
                epsilon=1.0)
    base.update(kwargs)
    with pytest.raises(ParameterError) as info:
        PrivacyContract(**base)
    assert info.value.name == name


def test_prints_every_part_and_round_trips():
    c = PrivacyContract("Laplace", "replace-one", "document", "pure", 2.0, epsilon=0.5,
                        note="histogram", sensitivity_norm="L1")
    text = str(c)
    for part in ("Laplace", "replace-one", "document", "pure epsilon-DP", "2 (L1)", "0.5", "0.125", "histogram"):
        assert part in text
    again = PrivacyContract.from_dict(c.to_dict())
    assert again == c and hash(again) == hash(c)
    assert c.replace(unit="prompt").unit == "prompt"
    with pytest.raises(AttributeError):
        c.epsilon = 3.0


def test_from_dict_rejects_incomplete_data():
    with pytest.raises(ParameterError, match="data"):
        PrivacyContract.from_dict({"mechanism": "m"})
    with pytest.raises(ParameterError, match="data"):
        PrivacyContract.from_dict(["not", "a", "mapping"])
