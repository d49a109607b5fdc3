"""Figures reach the page: matplotlib's backend is chosen for the environment.

Inside a Jupyter kernel (JupyterLab, papermill, the book build) the backend must be the
inline one, even when ``MPLBACKEND=Agg`` is inherited from the environment; under ``Agg``
``plt.show()`` draws nothing and the page has no figure. Scripts and tests use ``Agg``.
"""

from __future__ import annotations

import pytest

from dpkit import runtime


@pytest.mark.parametrize("requested", [None, "", "Agg", "agg"])
def test_a_kernel_gets_the_inline_backend_even_when_agg_is_inherited(requested):
    assert runtime.choose_matplotlib_backend(True, requested) == runtime.INLINE_BACKEND


def test_a_kernel_keeps_an_interactive_backend_the_user_asked_for():
    assert runtime.choose_matplotlib_backend(True, "module://ipympl.backend_nbagg") == "module://ipympl.backend_nbagg"


@pytest.mark.parametrize("requested, expected", [(None, "Agg"), ("", "Agg"), ("Agg", "Agg"), ("pdf", "pdf")])
def test_scripts_and_tests_get_agg_unless_they_ask_otherwise(requested, expected):
    assert runtime.choose_matplotlib_backend(False, requested) == expected


def test_this_test_process_is_not_a_kernel_and_setup_keeps_agg(monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    assert not runtime.in_notebook_kernel()
    assert runtime.set_matplotlib_backend() == "Agg"
