"""The order of work under ``make test`` (``pytest -n 2``), set in ``tests/conftest.py``.

A module that defines a module- or class-scoped fixture (a built book, a loaded model) is one unit
of work, so that fixture is made on one worker only; every other test is a unit of its own, and
the longest units are handed out first. These checks keep that true as tests are added: the
scheduler's grouping finds the modules that share fixtures, and every time hint names a test file
that exists (a hint for a removed file would silently stop ordering anything).
"""

from __future__ import annotations

from pathlib import Path

import conftest

ROOT = Path(__file__).resolve().parents[1]


def test_modules_with_shared_fixtures_are_one_unit():
    grouped = conftest._grouped_modules(ROOT)
    # each builds a book or loads a model once per module
    for module in ("tests/test_models.py", "tests/test_voice.py"):
        assert module in grouped, module
        assert conftest._unit(f"{module}::test_x[a]", ROOT) == module
    # the two book modules share the session's small book: one unit for both
    units = {conftest._unit(f"{m}::test_x[a]", ROOT) for m in ("tests/test_book_html.py", "tests/test_book_render.py")}
    assert units == {"the small book"}
    assert all((ROOT / module).is_file() for module in conftest.SHARED_SESSION)
    assert "tests/test_notebooks.py" not in grouped   # the smoke runs share nothing: spread one by one
    for module in conftest.SPREAD:   # a cheap shared fixture beside long tests: spread all the same
        assert (ROOT / module).is_file() and conftest.SHARED_FIXTURE.search((ROOT / module).read_text()), module
        assert module not in grouped, module
    one = "tests/test_notebooks.py::test_executes_in_smoke_setting[pp_end_to_end]"
    assert conftest._unit(one, ROOT) == one


def test_the_fixture_pattern_sees_each_shared_scope():
    match = conftest.SHARED_FIXTURE.search
    assert match('@pytest.fixture(scope="module")\ndef lm():')
    assert match("@pytest.fixture(scope='class', params=[1, 2])")
    assert match('@pytest.fixture(autouse=True, scope="package")')
    assert not match('@pytest.fixture(scope="function")')
    assert not match("@pytest.fixture\ndef tmp():")


def test_every_time_hint_names_an_existing_test_file():
    units = set(conftest.SHARED_SESSION.values())
    missing = {key for key in conftest.SECONDS if key not in units and not (ROOT / key.split("::")[0]).is_file()}
    assert not missing, f"time hints for test files that do not exist: {sorted(missing)}"
    notebooks = {p.stem for p in (ROOT / "notebooks").glob("*.ipynb")}
    prefix = "tests/test_notebooks.py::test_executes_in_smoke_setting["
    hinted = {key[len(prefix):-1] for key in conftest.SECONDS if key.startswith(prefix)}
    assert hinted <= notebooks, f"time hints for notebooks that do not exist: {sorted(hinted - notebooks)}"
