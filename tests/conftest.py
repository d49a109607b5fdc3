"""Shared test settings: offline hubs, one torch thread per test worker, and the order of work."""

import functools
import os
import re
from pathlib import Path

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("DPKIT_THREADS", "1")
os.environ.setdefault("DPKIT_PROGRESS", "0")  # no progress lines in a test's stderr (tests/test_progress_lines.py)

from dpkit import runtime  # noqa: E402

runtime.setup()


# ------------------------------------------------------------------ scheduling under `make test`
# `make test` runs `pytest -n 2`. The scheduler below hands out units of work in collection order:
# the tests of a module that defines a module- or class-scoped fixture (a built book, a loaded
# model, a release) form one unit, so that fixture is made once, on one worker, not once on each
# (xdist's default sends a module's tests to both; SPREAD lists the exceptions); every other test is
# a unit of its own. Units go longest first, so that the two workers finish together instead of one
# running a long test alone at the end. SECONDS holds single-worker times (for a grouped module: its tests together; else a
# test id), measured on a busy 2-core machine: only their order matters. A stale or missing figure
# only costs time: what is not listed runs after the listed units, in the usual order.
SECONDS = {
    # (re-measured 2026-11-27 at load ~4 and scaled by 1.5 to the older figures' load of 5-6: order is what counts)
    # grouped modules: the tests that share the module's fixture, together
    "tests/test_pp_ray.py": 160, "the small book": 210,
    "tests/test_pp_pipeline.py": 72, "tests/test_guard_end_to_end.py": 66, "tests/test_pp_private_rows.py": 71,
    "tests/test_pp_llamacpp.py": 75, "tests/test_pp_grammar.py": 32, "tests/test_models_llamacpp_rows.py": 23,
    "tests/test_models_llamacpp.py": 21, "tests/test_backends_local.py": 16, "tests/test_models.py": 16,
    # single tests
    "tests/test_derivations_nbval.py::test_derivation_chapters_run_on_their_defaults": 70,
    "tests/test_pp_executors.py::test_completion_order_changes_neither_the_release_nor_the_run": 44,
    "tests/test_runs_failures.py::test_a_run_made_read_only_mid_way_exits_1_and_keeps_what_was_written": 60,
    "tests/test_runs_failures.py::test_a_second_writer_exits_2_in_one_line_naming_the_folder": 42,
    "tests/test_runs_failures.py::test_a_file_size_limit_exits_1_keeps_the_run_and_the_resume_charges_once[6000]": 36,
    "tests/test_runs_failures.py::test_a_full_disk_exits_1_and_the_resume_with_room_charges_once": 33,
    "tests/test_runs_failures.py::test_a_file_size_limit_exits_1_keeps_the_run_and_the_resume_charges_once[20000]": 31,
    "tests/test_runs_faults.py::test_a_corrupted_record_of_an_unfinished_run_is_refused_not_published": 27,
    "tests/test_methods_plan_equals_run.py::test_the_plan_and_the_run_charge_the_same_ledger[pp]": 13,
    "tests/test_compare.py::test_a_cap_that_does_not_bind_changes_no_token": 14,
    "tests/test_audit_report.py::test_audits_follow_the_ledger_and_the_verdict": 14,
    "tests/test_audit_families.py::test_false_positive_rate_stays_at_nominal": 13,
    "tests/test_audit_release_cli.py::test_prints_the_result_and_resumes_to_the_same": 12,
    "tests/test_audit_registry.py::test_correct_mechanism_passes[dpst_record]": 26,
    # measured 2026-11-29 in a fresh clone beside a book build (load ~4); they ran last, unlisted
    "tests/test_audit_release_pp_unclipped.py::test_unclipped_private_prediction_is_refuted_at_its_claim": 213,
    "tests/test_audit_release_pp_unclipped.py::test_correct_private_prediction_writes_no_canary_word_and_is_not_refuted": 61,
    "tests/test_ft_accounting.py": 49, "tests/test_notebooks.py::test_executes_in_smoke_setting[ft_dpsgd]": 47,
    **{f"tests/test_pp_invisibleink.py::{test}": seconds for test, seconds in {
        "test_the_release_audit_does_not_refute_a_whole_invisibleink_release": 48,
        "test_replay_and_memory_bounds_give_the_same_tokens[torch]": 21,
        "test_replay_and_memory_bounds_give_the_same_tokens[llamacpp]": 15}.items()},
    **{f"tests/test_runs_faults.py::test_sigkill_at_every_checkpoint_leaves_the_spend_on_disk_and_resumes_charging_once"
       f"[{case}]": seconds for case, seconds in {
           "pp-ledger-written": 94, "pp-finished": 90, "pp-record-appended": 76, "pp-ledger-recorded": 53,
           "pp-release-tracked": 47, "dpst-ledger-recorded": 54, "kps-ledger-recorded": 27}.items()},
    **{f"tests/test_runs_faults.py::test_each_corruption_is_caught_and_the_resume_refuses_it_naming_the_file"
       f"[pp-{kind}]": 21 for kind in ("changed-record", "deleted-file", "deleted-mark-key", "truncated-records",
                                       "extra-file")},
    **{f"tests/test_readme_own_data.py::{test}": seconds for test, seconds in {
        "test_readme_synth_runs[pp]": 66, "test_readme_synth_kps_and_evaluate_run": 51,
        "test_readme_synth_runs[dpst]": 44, "test_readme_papermill_runs": 43}.items()},
    **{f"tests/test_audit_release_zoo.py::{test}": seconds for test, seconds in {
        "test_correct_methods_are_never_refuted[pp-1-0]": 48, "test_correct_methods_are_never_refuted[pp-4-0]": 43,
        "test_broken_pipelines_are_refuted_at_their_claim[pp-<lambda>-100]": 36,
        "test_broken_pipelines_are_refuted_at_their_claim[dpst-<lambda>-None]": 33,
        "test_broken_pipelines_are_refuted_at_their_claim[kps-<lambda>-None]": 13,
        "test_correct_methods_are_never_refuted[dpst-1-0]": 13}.items()},
    **{f"tests/test_notebooks.py::test_executes_in_smoke_setting[{name}]": seconds for name, seconds in {
        "audit_release": 65, "pp_structured_json": 61, "pp_end_to_end": 57, "dpst_evaluation": 51,
        "audit_mechanisms": 47, "dpst_triples": 39, "pp_invisibleink": 38, "kps_end_to_end": 36,
        "models_local_models": 36, "kps_dpkde": 32, "compare_methods": 30, "pp_clipping": 30, "audit_report": 18,
        "backends_runs": 17, "pp_accounting": 16, "dp_gaussian_calibration": 12, "dp_foundations_relations": 11,
        "dp_zcdp_conversion": 10, "kps_vocabulary": 10, "kps_zero_padding": 9, "dp_sparse_vector": 9,
        "dp_composition": 7, "dp_exponential_mechanism": 6, "dp_sensitivity_laplace": 6}.items()},
}
# modules whose shared fixture is cheap beside their long tests: spread, so those tests use both workers
SPREAD = frozenset({"tests/test_pp_invisibleink.py", "tests/test_runs_faults.py"})

SHARED_FIXTURE = re.compile(r"@pytest\.fixture\([^)]*scope=[\"'](module|class|package)[\"']")


@functools.cache
def _grouped_modules(root: Path) -> frozenset[str]:
    """Node-id prefixes (``tests/test_x.py``) of the modules that define a shared fixture, but SPREAD."""
    tests = root / "tests"
    return frozenset(f"tests/{p.name}" for p in tests.glob("test_*.py")
                     if SHARED_FIXTURE.search(p.read_text()) and f"tests/{p.name}" not in SPREAD)


# modules that share a session fixture: one unit, so the fixture is made on one worker only
SHARED_SESSION = {"tests/test_book_html.py": "the small book", "tests/test_book_render.py": "the small book"}


def _unit(nodeid: str, root: Path) -> str:
    module = nodeid.split("::")[0]
    if module in SHARED_SESSION:
        return SHARED_SESSION[module]
    return module if module in _grouped_modules(root) else nodeid


@pytest.fixture(scope="session")
def small_book(tmp_path_factory) -> Path:
    """The small book of ``tests/small_book.py``, built once per session; its ``html`` folder."""
    from small_book import build

    return build(tmp_path_factory.mktemp("small-book"))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    root = config.rootpath
    items.sort(key=lambda item: -SECONDS.get(_unit(item.nodeid, root), 0.0))   # stable: the rest keep their order


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "load":   # only the default of -n; an explicit --dist keeps its meaning
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModuleFixturesOnce(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _unit(nodeid, config.rootpath)

    config.option.loadscopereorder = False   # keep the collection order: longest first
    return ModuleFixturesOnce(config, log)
