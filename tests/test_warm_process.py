"""The warm launcher behaves like ``subprocess.run([python, -c/-m, ...])`` in what the run tests observe."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
import warm_process

ROOT = Path(__file__).resolve().parents[1]


def run(code: str, *args, **kw):
    return warm_process.run(list(args), code=code, cwd=kw.pop("cwd", ROOT), env=kw.pop("env", dict(os.environ)), **kw)


def test_exit_status_output_and_arguments_come_back():
    done = run("import sys; print(sys.argv[1:]); print('to err', file=sys.stderr); sys.exit(3)", "a", "b c")
    assert (done.returncode, done.stdout, done.stderr) == (3, "['a', 'b c']\n", "to err\n")
    assert run("pass").returncode == 0
    assert run("raise SystemExit('bad')").returncode == 1


def test_an_uncaught_exception_prints_its_traceback_and_exits_1():
    done = run("raise ValueError('nope')")
    assert done.returncode == 1 and "Traceback" in done.stderr and "ValueError: nope" in done.stderr


def test_a_signal_kills_the_child_not_the_server():
    killed = run("import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert killed.returncode == -signal.SIGKILL
    assert run("print(1)").stdout == "1\n"                      # the server still serves


def test_each_child_is_its_own_process_with_the_given_environment_and_folder(tmp_path):
    code = "import os; print(os.getpid(), os.getcwd(), os.environ.get('WARM_TEST'), 'PATH' in os.environ)"
    first = run(code, cwd=tmp_path, env={"WARM_TEST": "yes"}).stdout.split()
    second = run(code, cwd=tmp_path, env={"WARM_TEST": "yes"}).stdout.split()
    assert first[0] != second[0] and first[1:] == [str(tmp_path), "yes", "False"] and first[0] != str(os.getpid())


def test_atexit_functions_run_and_a_module_runs_as_main():
    assert run("import atexit; atexit.register(print, 'bye')").stdout == "bye\n"
    done = warm_process.run(["--help"], module="dpkit", cwd=ROOT, env=dict(os.environ))
    assert done.returncode == 0 and "synth" in done.stdout


def test_a_file_size_limit_makes_a_large_write_fail_with_efbig(tmp_path):
    code = f"with open({str(tmp_path / 'big')!r}, 'wb') as f: f.write(b'x' * 5000)"
    assert run(code).returncode == 0
    limited = run(code, fsize_limit=1000)
    assert limited.returncode == 1 and "File too large" in limited.stderr


def test_a_child_past_its_timeout_is_killed():
    with pytest.raises(subprocess.TimeoutExpired):
        run("import time; time.sleep(60)", timeout=1)
    assert run("print(2)").stdout == "2\n"


def test_a_child_that_cannot_start_exits_1_and_the_server_serves_on(tmp_path):
    done = run("print(1)", cwd=tmp_path / "no such folder")
    assert done.returncode == 1 and "FileNotFoundError" in done.stderr and done.stdout == ""
    assert run("print(3)").stdout == "3\n"
