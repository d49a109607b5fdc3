"""Shared test settings: offline hubs, one torch thread per test worker, and the order of work."""

import os

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("DPKIT_THREADS", "1")

from dpkit import runtime  # noqa: E402

runtime.setup()


# ------------------------------------------------------------------ scheduling under `make test`
# `make test` runs `pytest -n 2 --dist loadgroup --no-loadscope-reorder`: xdist hands out units of
# work in collection order. Each module is one unit, so its module-scoped fixtures (a built book,
# a loaded model) are made once, on one worker, not once on each; the notebook smoke runs share
# nothing and are long, so each is a unit of its own. The longest units go first, so that the two
# workers finish together instead of one running a long test alone at the end. The seconds are
# measured on one worker of a busy 2-core machine (only their order matters); a stale or missing
# figure only costs time: a unit not listed runs after the listed ones, in the usual order.
SPREAD = ("tests/test_notebooks.py::test_executes_in_smoke_setting[",)
SECONDS = {
    "tests/test_derivations_nbval.py": 127,
    "tests/test_book_html.py": 150,
    "tests/test_book_render.py": 100,
    **{f"tests/test_notebooks.py::test_executes_in_smoke_setting[{name}]": seconds for name, seconds in {
        "pp_structured_json": 104, "audit_release": 93, "pp_end_to_end": 86, "dpst_evaluation": 64,
        "pp_invisibleink": 59, "kps_end_to_end": 56, "models_local_models": 48, "audit_mechanisms": 47,
        "dpst_triples": 43, "kps_dpkde": 36, "compare_methods": 34, "pp_clipping": 29, "pp_accounting": 24,
        "kps_vocabulary": 22, "dp_foundations_relations": 22, "audit_report": 22, "dp_zcdp_conversion": 20,
        "kps_zero_padding": 20, "dp_composition": 19, "dp_gaussian_calibration": 17, "dp_sparse_vector": 17,
        "backends_runs": 16, "dp_exponential_mechanism": 16, "dp_sensitivity_laplace": 10}.items()},
}


def _seconds(item) -> float:
    module = item.nodeid.split("::")[0]
    return SECONDS.get(item.nodeid, SECONDS.get(module, 0.0))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    if config.getoption("dist", "no") == "loadgroup":
        for item in items:
            if not item.nodeid.startswith(SPREAD):
                item.add_marker(pytest.mark.xdist_group(item.path.stem))
    items.sort(key=lambda item: -_seconds(item))   # stable: a module's tests keep their order
