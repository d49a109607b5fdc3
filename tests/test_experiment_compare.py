"""``dpkit experiment compare``: provenance in every cell's JSON, resume without redoing cells,
one writer per folder, and a bad preset refused in one line (exit 2).

The cells run through a fake runner (no model, no data): the sweep's bookkeeping
is what is tested; the real runner is exercised by ``--preset smoke``.
"""

from __future__ import annotations

import json
import math

import pytest

from dpkit.cli import main
from dpkit.experiments import cli as experiment_cli
from dpkit.experiments import presets
from dpkit.experiments.cell_files import cell_path, verifies
from dpkit.experiments.compare import Sizes
from dpkit.experiments.presets import Preset
from dpkit.experiments.provenance import PROVENANCE_KEYS
from dpkit.experiments.sweep import Sweep, cells_done, eta
from dpkit.runs import RunInUseError

TINY = Preset("tiny", ("toy",), (1.0, math.inf), (0, 1), Sizes(per_class=2), max_per_class=4, test_fraction=0.5,
              methods=("kps", "pp"))


class FakeCells:
    """Counts the cells it runs; fails on request after ``crash_after`` cells (a crash mid-sweep)."""

    def __init__(self, crash_after: int | None = None, model: str = "fake-lm"):
        self.calls: list[tuple] = []
        self.crash_after = crash_after
        self.model_name = model

    def model(self):
        return self.model_name

    def __call__(self, dataset, method, epsilon, seed):
        if self.crash_after is not None and len(self.calls) >= self.crash_after:
            raise KeyboardInterrupt("simulated crash")
        self.calls.append((dataset, method, epsilon, seed))
        score = 0.5 + 0.01 * len(self.calls)
        return {"metrics": {"balanced_accuracy": {"estimate": score, "low": score - 0.1, "high": score + 0.1},
                            "n_train": 4},
                "release": {"epsilon": epsilon, "delta": 0.0, "n_texts": 4}, "wall_s": 0.25,
                "runtime": {"generation": "fake", "torch": None}, "model": self.model_name,
                "text_measures": {"assistant_talk": 0.25, "short_texts": 0.0},
                **({} if method == "real" else {"texts": {"texts": ["Sure, here is a tweet:", "flu", "a", "b"],
                                                          "labels": ["x", "y", "x", "y"]}})}


class OldCells(FakeCells):
    """A fake runner of the code before cells kept their texts: scores only."""

    def __call__(self, dataset, method, epsilon, seed):
        out = super().__call__(dataset, method, epsilon, seed)
        out.pop("texts", None)
        out.pop("text_measures")
        return out


def test_every_cell_is_one_json_with_its_provenance(tmp_path):
    fake = FakeCells()
    Sweep(TINY, tmp_path, fake, progress=lambda line: None).run()
    cells = list(TINY.cells())
    assert len(cells) == 2 * (1 + 2 * 2) and len(fake.calls) == len(cells)
    assert sorted(p.name for p in tmp_path.glob("*.json")) == sorted(cell_path(tmp_path, *c).name for c in cells)
    body = json.loads(cell_path(tmp_path, "toy", "pp", math.inf, 1).read_text())
    assert body["cell"] == {"dataset": "toy", "method": "pp", "epsilon": "inf", "seed": 1}
    assert set(PROVENANCE_KEYS) <= set(body["provenance"])
    prov = body["provenance"]
    assert prov["machine"]["cpu_count"] >= 1 and prov["machine"]["platform"]
    assert prov["model"] == "fake-lm" and prov["runtime"]["generation"] == "fake"
    assert prov["git_commit"] is None or len(prov["git_commit"].split("+")[0]) == 40
    assert body["wall_s"]["release"] == 0.25 and body["sizes"]["sizes"]["per_class"] == 2
    assert body["preset"] == "tiny" and verifies(cell_path(tmp_path, "toy", "pp", math.inf, 1), TINY,
                                                 "toy", "pp", math.inf, 1)


def test_a_crashed_sweep_resumes_without_redoing_finished_cells(tmp_path):
    first = FakeCells(crash_after=3)
    with pytest.raises(KeyboardInterrupt):
        Sweep(TINY, tmp_path, first, progress=lambda line: None).run()
    assert len(list(tmp_path.glob("*.json"))) == 3
    second = FakeCells()
    sweep = Sweep(TINY, tmp_path, second, progress=lambda line: None).run()
    total = len(list(TINY.cells()))
    assert len(second.calls) == total - 3 and len(sweep.skipped) == 3
    assert not set(first.calls) & set(second.calls)
    third = FakeCells()
    Sweep(TINY, tmp_path, third, progress=lambda line: None).run()
    assert third.calls == []


def test_a_cell_whose_json_does_not_verify_is_refused_and_run_again_only_when_asked(tmp_path):
    from dpkit.validate import ParameterError

    Sweep(TINY, tmp_path, FakeCells(), progress=lambda line: None).run()
    edited = cell_path(tmp_path, "toy", "kps", 1.0, 0)
    body = json.loads(edited.read_text())
    body["metrics"]["balanced_accuracy"]["estimate"] = 0.99  # changed by hand: the digest no longer matches
    edited.write_text(json.dumps(body))
    cell_path(tmp_path, "toy", "pp", 1.0, 1).write_text("{ truncated")
    refused = FakeCells()
    with pytest.raises(ParameterError, match="recompute-failed"):
        Sweep(TINY, tmp_path, refused, progress=lambda line: None).run()
    assert refused.calls == [] and json.loads(edited.read_text())["metrics"]["balanced_accuracy"]["estimate"] == 0.99
    again, lines = FakeCells(), []
    Sweep(TINY, tmp_path, again, progress=lines.append, recompute_failed=True).run()
    assert sorted(again.calls) == sorted([("toy", "kps", 1.0, 0), ("toy", "pp", 1.0, 1)])
    named = [line for line in lines if "did not verify" in line]
    assert len(named) == 2 and {line.split(" ")[0] for line in named} == \
        {edited.name, cell_path(tmp_path, "toy", "pp", 1.0, 1).name}


def test_a_second_writer_of_the_same_folder_is_refused(tmp_path, monkeypatch, capsys):
    """Another process holds the folder: the sweep is refused before any cell runs (CLI: exit 2, one line)."""
    import subprocess
    import sys

    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from pathlib import Path; from dpkit.runs import lock; "
         f"lock.acquire(Path({str(tmp_path)!r}), object()); print('held', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        fake = FakeCells()
        with pytest.raises(RunInUseError, match="in use"):
            Sweep(TINY, tmp_path, fake, progress=lambda line: None).run()
        monkeypatch.setitem(presets.PRESETS, "tiny", TINY)
        import dpkit.experiments.cells as cells

        monkeypatch.setattr(experiment_cli, "LocalCells", lambda preset, model=None: fake)
        assert main(["experiment", "compare", "--preset", "tiny", "--out", str(tmp_path)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "in use" in err[0]
        assert fake.calls == [] and not list(tmp_path.glob("*.json"))
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    Sweep(TINY, tmp_path, FakeCells(), progress=lambda line: None).run()  # the holder is gone: the folder is free
    assert len(list(tmp_path.glob("*.json"))) == len(list(TINY.cells()))


def test_a_bad_preset_exits_2_with_one_line_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["experiment", "compare", "--preset", "huge", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--preset" in err[0] and "huge" in err[0] and "smoke" in err[0]
    assert not out.exists()


def test_the_command_writes_through_the_local_runner(tmp_path, monkeypatch, capsys):
    fake = FakeCells()
    monkeypatch.setitem(presets.PRESETS, "tiny", TINY)
    import dpkit.experiments.cells as cells

    monkeypatch.setattr(experiment_cli, "LocalCells", lambda preset, model=None: fake)
    assert main(["experiment", "compare", "--preset", "tiny", "--out", str(tmp_path)]) == 0
    assert len(fake.calls) == len(list(TINY.cells())) and "cells written" in capsys.readouterr().out
    assert len(cells_done(tmp_path, TINY)) == len(fake.calls)


def test_without_out_the_cells_go_to_a_folder_named_after_the_preset(tmp_path, monkeypatch, capsys):
    fake = FakeCells()
    monkeypatch.setitem(presets.PRESETS, "tiny", TINY)
    import dpkit.experiments.cells as cells

    monkeypatch.setattr(experiment_cli, "LocalCells", lambda preset, model=None: fake)
    monkeypatch.chdir(tmp_path)
    assert main(["experiment", "compare", "--preset", "tiny"]) == 0
    assert len(cells_done(tmp_path / "results" / "compare" / "tiny", TINY)) == len(list(TINY.cells()))


def test_the_medium_preset_keeps_the_realistic_data_sizes():
    medium = presets.PRESETS["medium"]
    assert len(medium.datasets) == 2 and len(medium.seeds) >= 5 and set(medium.epsilons) == {1.0, 4.0, math.inf}
    assert round(medium.max_per_class * (1 - medium.test_fraction)) == 1000  # private training records per label
    assert round(medium.max_per_class * medium.test_fraction) == 200  # test texts per label


def test_the_full_preset_has_the_issues_sizes():
    full = presets.PRESETS["full"]
    assert len(full.datasets) == 2 and len(full.seeds) >= 5 and {1.0, 4.0, math.inf} <= set(full.epsilons)
    assert full.sizes.per_class >= 50 and full.sizes.max_new_tokens >= 48
    test_per_label = full.max_per_class * full.test_fraction
    assert round(test_per_label) >= 200 and full.max_per_class - round(test_per_label) >= 1000
    assert full.estimate.startswith("ESTIMATE") and "--datasets" in full.estimate


def test_every_preset_but_the_smoke_run_and_the_model_probe_takes_five_seeds():
    for name, preset in presets.PRESETS.items():
        if name not in ("smoke", "model-probe"):
            assert len(preset.seeds) >= 5, name


def test_the_stored_full_run_holds_whole_seeds_and_one_data_set_at_five_seeds_fits_two_hours():
    from pathlib import Path

    from dpkit.experiments import stored

    cells = stored.load_cells(Path(__file__).resolve().parents[1] / "results" / "compare" / "full")
    full = presets.PRESETS["full"]
    keys = {stored.cell_key(body) for body in cells}
    seeds = {seed for *_, seed in keys}
    assert keys == {c for c in full.cells() if c[3] in seeds} and len(seeds) >= 3  # whole seeds of the preset
    assert sum(body["wall_s"]["cell"] for body in cells) < 2 * 3600
    # the stored run's time per data set and seed, scaled to the preset's 5 seeds: each data set fits 2 hours
    for dataset in full.datasets:
        per_seed = sum(b["wall_s"]["cell"] for b in cells if b["cell"]["dataset"] == dataset) / len(seeds)
        assert per_seed * len(full.seeds) < 2 * 3600, dataset
    assert {body["provenance"]["model"] for body in cells} == {"SmolLM2-135M-Instruct"}


def test_a_subset_of_data_sets_runs_only_their_cells_and_a_bad_name_exits_2(tmp_path, monkeypatch, capsys):
    fake = FakeCells()
    two = Preset("two", ("toy", "other"), (1.0,), (0,), Sizes(per_class=2), max_per_class=4, test_fraction=0.5,
                 methods=("kps",))
    monkeypatch.setitem(presets.PRESETS, "two", two)
    import dpkit.experiments.cells as cells

    monkeypatch.setattr(experiment_cli, "LocalCells", lambda preset, model=None: fake)
    assert main(["experiment", "compare", "--preset", "two", "--datasets", "toy,bogus", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--datasets" in err[0] and "bogus" in err[0] and fake.calls == []
    assert main(["experiment", "compare", "--preset", "two", "--datasets", "other", "--out", str(tmp_path)]) == 0
    assert {d for d, *_ in fake.calls} == {"other"} and len(fake.calls) == 2
    assert main(["experiment", "compare", "--preset", "two", "--out", str(tmp_path)]) == 0
    assert {d for d, *_ in fake.calls[2:]} == {"toy"}  # the second run added only the other data set


def test_a_cell_stores_its_note_texts_and_text_measures_and_the_command_remakes_one_without_texts(tmp_path):
    Sweep(TINY, tmp_path, OldCells(), progress=lambda line: None).run()  # older code: no texts stored
    body = json.loads(cell_path(tmp_path, "toy", "kps", 1.0, 0).read_text())
    assert "texts" not in body and "not a differentially private release" in body["note"]
    again = FakeCells()
    Sweep(TINY, tmp_path, again, progress=lambda line: None).run()
    assert again.calls == []  # a sweep that does not ask for texts keeps the stored cells
    Sweep(TINY, tmp_path, again, progress=lambda line: None, require_texts=True).run()
    assert {m for _, m, _, _ in again.calls} == {"kps", "pp"}  # the real cells hold no texts by design
    body = json.loads(cell_path(tmp_path, "toy", "kps", 1.0, 0).read_text())
    assert body["texts"]["texts"][0] == "Sure, here is a tweet:" and body["text_measures"]["assistant_talk"] == 0.25
    assert "seeded teaching run" in body["note"] and verifies(cell_path(tmp_path, "toy", "kps", 1.0, 0), TINY, "toy",
                                                               "kps", 1.0, 0)


def test_a_subset_of_methods_runs_only_their_cells_and_a_bad_name_exits_2(tmp_path, monkeypatch, capsys):
    fake = FakeCells()
    monkeypatch.setitem(presets.PRESETS, "tiny", TINY)
    import dpkit.experiments.cells as cells

    monkeypatch.setattr(experiment_cli, "LocalCells", lambda preset, model=None: fake)
    assert main(["experiment", "compare", "--preset", "tiny", "--methods", "kps,bogus", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--methods" in err[0] and "bogus" in err[0] and fake.calls == []
    assert main(["experiment", "compare", "--preset", "tiny", "--methods", "kps", "--out", str(tmp_path)]) == 0
    assert {m for _, m, _, _ in fake.calls} == {"real", "kps"} and len(fake.calls) == 2 * (1 + 2)
    assert main(["experiment", "compare", "--preset", "tiny", "--out", str(tmp_path)]) == 0
    assert len(fake.calls) == len(list(TINY.cells()))  # the second run added only the pp cells


def test_progress_lines_carry_an_eta(tmp_path):
    lines = []
    Sweep(TINY, tmp_path, FakeCells(), progress=lines.append).run()
    assert lines and all("min elapsed" in line for line in lines)
    assert "left" in lines[0] or len(lines) == 1
    assert lines[-1].endswith("done)")
    assert eta(600.0, {"kps": [300.0, 300.0]}, ["kps"] * 4) == "10 min elapsed, about 20 min left"
    # Each cell left is priced at its own method's mean (the resumed full run once said "7 min left" for a
    # 2-second DP-ST cell after a private-prediction one); a method not seen yet at the mean of all cells.
    assert eta(420.0, {"pp": [400.0], "dpst": [2.0]}, ["dpst"]) == "7 min elapsed, about 0 min left"
    assert eta(60.0, {"pp": [400.0], "dpst": [2.0]}, ["kps", "pp"]) == "1 min elapsed, about 10 min left"
    assert eta(60.0, {"dpst": [2.0]}, []).endswith("done")


def test_cells_of_another_model_are_made_again(tmp_path):
    Sweep(TINY, tmp_path, FakeCells(), progress=lambda line: None, model="fake-lm").run()
    same = FakeCells()
    Sweep(TINY, tmp_path, same, progress=lambda line: None, model="fake-lm").run()
    assert same.calls == []
    other = FakeCells(model="bigger-lm")
    Sweep(TINY, tmp_path, other, progress=lambda line: None, model="bigger-lm").run()
    assert len(other.calls) == len(list(TINY.cells()))


def test_a_model_gets_its_own_default_folder(tmp_path, monkeypatch):
    fake = FakeCells(model="Qwen2.5-Coder-1.5B-Instruct")
    monkeypatch.setitem(presets.PRESETS, "tiny", TINY)
    import dpkit.experiments.cells as cells

    monkeypatch.setattr(experiment_cli, "LocalCells", lambda preset, model=None: fake)
    monkeypatch.chdir(tmp_path)
    assert main(["experiment", "compare", "--preset", "tiny", "--model", "qwen2.5-coder-1.5b"]) == 0
    folder = tmp_path / "results" / "compare" / "tiny-qwen2.5-coder-1.5b"
    assert len(cells_done(folder, TINY)) == len(list(TINY.cells()))
    assert experiment_cli._slug("/x/My Model.Q4_K_M.gguf") == "my-model.q4_k_m"


def test_a_missing_named_model_exits_2_before_any_folder(tmp_path, monkeypatch, capsys):
    from dpkit.models import named
    from dpkit.models.packages import MissingPackageError

    def missing(module, pip_name, *, no_deps=False):
        raise MissingPackageError(pip_name)

    monkeypatch.setattr(named, "package_dir", missing)
    monkeypatch.setenv("DPKIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(presets.PRESETS, "tiny", TINY)
    monkeypatch.chdir(tmp_path)
    assert main(["experiment", "compare", "--preset", "tiny", "--model", "qwen2.5-coder-1.5b"]) == 2
    assert "make model-qwen" in capsys.readouterr().err and not (tmp_path / "results").exists()


def test_later_sizes_keep_earlier_cells_current_and_reach_the_method_config():
    """A field added to Sizes after cells were stored is named in a cell's sizes only when a preset sets another
    value than the one every earlier cell was made at; the value reaches the method's Config."""
    from dpkit.experiments.compare import configs

    for field, earlier in presets.LATER_SIZES.items():
        assert getattr(Sizes(), field) == earlier
        assert field not in TINY.public_sizes()["sizes"]
    general = presets.get_preset("holdout-general")
    assert general.public_sizes()["sizes"]["pp_no_repeat_ngram"] == 3
    assert general.public_sizes()["sizes"]["dpst_variant"] == "topic"
    assert configs(8.0, Sizes(), document_type="x")["pp"].no_repeat_ngram == 0          # as stored cells were made
    assert configs(8.0, general.sizes, document_type="x")["pp"].no_repeat_ngram == 3     # as dpkit synth pp runs
    # no stored cell names a later field at its earlier value
    from pathlib import Path
    for path in (Path(__file__).resolve().parents[1] / "results" / "compare").glob("*/*.json"):
        sizes = json.loads(path.read_text()).get("sizes", {}).get("sizes", {})
        assert all(sizes.get(f, object()) != v for f, v in presets.LATER_SIZES.items()), path


def test_the_former_module_resolves_each_moved_name_with_a_warning_naming_its_new_module():
    import importlib

    from dpkit.experiments import results

    shown = {"PRESETS", "REAL", "Preset", "Sweep", "cell_path", "verifies", "integrity_problem", "git_commit"}
    assert shown <= set(results.MOVED)
    for name, (module, new_name) in results.MOVED.items():
        with pytest.warns(DeprecationWarning, match=f"results.{name} is now {module}.{new_name}"):
            value = getattr(results, name)
        assert value is getattr(importlib.import_module(module), new_name)
    with pytest.raises(AttributeError):
        results.no_such_name


def test_dp_fine_tuning_is_a_comparison_row_that_reads_every_record_and_keeps_its_budget(tmp_path):
    """``--methods ...,ft`` runs DP fine-tuning through the real local runner (smoke sizes): its cell states the
    release's epsilon (at most the cell's) and reads the whole split, like DP-KPS."""
    from dpkit.experiments.cells import LocalCells
    from dpkit.experiments.compare import configs, method_of
    from dpkit.experiments.presets import get_preset, parse_methods

    assert parse_methods("kps,ft") == ("kps", "ft") and method_of("ft") == "ft"
    sizes = Sizes(per_class=3)
    config = configs(8.0, sizes, document_type="review")["ft"]
    assert (config.n_per_class, config.epsilon, config.document_type, config.steps) == (3, 8.0, "review", 48)
    smoke = get_preset("smoke")
    out = LocalCells(smoke)("rotten_tomatoes", "ft", 4.0, 0)
    assert 0 < out["release"]["epsilon"] <= 4.0 and out["release"]["n_texts"] == 2
    assert out["release"]["n_records_read"] == out["metrics"]["n_private_records"]
    assert len(out["texts"]["texts"]) == 2 and set(out["texts"]["labels"]) == {"negative", "positive"}


def test_the_methods_help_names_every_row_the_parser_accepts(capsys):
    """``--methods`` help lists the rows from the one list the parser checks (it said "kps,pp,dpst" while ft,
    pp_ink and label_only were accepted too)."""
    from dpkit.cli import main
    from dpkit.experiments.presets import METHOD_ROWS, parse_methods

    with pytest.raises(SystemExit):
        main(["experiment", "compare", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "some of " + ",".join(METHOD_ROWS) in text.replace(", ", ",").replace(" ,", ",")
    assert "ft" in METHOD_ROWS and parse_methods("ft,kps") == ("ft", "kps")
