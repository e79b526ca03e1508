"""The preforked interpreter the tests start their commands with (tests/prefork.py) behaves as a
real one where the tests look: exit codes, signals, streams, cwd, environment, argv, sys.path,
`__file__`, this repository's modules imported fresh by every command, and a real interpreter
whenever an option or a variable asks for one."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests import prefork

pytestmark = pytest.mark.skipif(os.environ.get("TURNGATE_TESTS_PREFORK") == "0",
                                reason="TURNGATE_TESTS_PREFORK=0: every command is a real interpreter")


def py(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([prefork.python(), *args], capture_output=True, text=True, timeout=60, **kw)


def test_the_server_is_up_and_holds_the_stack_but_none_of_this_repository():
    assert prefork.shims() is not None
    res = py("-c", "import sys; print(sorted(m for m in sys.modules if m.split('.')[0] in "
                   "('turngate', 'app', 'evals', 'examples', 'tests'))); print('langchain_core' in sys.modules)")
    assert res.stdout.split("\n")[:2] == ["[]", "True"], res.stderr


def test_xdist_workers_share_the_controller_s_server():
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.skip("a run without pytest-xdist workers starts its own server")
    root = os.environ[prefork.SHARED]
    assert prefork.shims() == root and prefork._SHIMS[0][0] is None  # no server of this worker's own
    assert py("-c", "print(1)").stdout.strip() == "1"


def test_a_server_ends_when_the_process_that_started_it_is_gone():
    """Its stdin is a pipe from the test process (or the xdist controller): when that closes,
    at the end or on a kill -9, the server ends instead of outliving the run."""
    server, root = prefork._start(probe=[])
    try:
        assert prefork._lay_out(server, root) == root
        res = subprocess.run([os.path.join(root, "bin", "python"), "-c", "print(6 * 7)"], capture_output=True,
                             text=True, timeout=60)
        assert res.stdout.strip() == "42"
        server.stdin.close()
        assert server.wait(timeout=60) == 0
    finally:
        prefork._stop(server, root)


def test_the_repository_s_patterns_are_compiled_before_its_modules_are_imported():
    """The offline model's patterns are in re's cache before a command imports it: its import
    compiles none of them again, and what it holds is what re.compile gives for the same text."""
    repo = str(Path(__file__).resolve().parents[1])
    res = py("-c", textwrap.dedent(f"""
        import re, sys
        before = len(re._cache)
        sys.path.insert(0, {repo!r})
        from app.refund_agent.offline import intents
        rx = next(v for v in vars(intents).values() if hasattr(v, "rx"))
        print(before, len(re._cache) - before, re.compile(rx.pattern, rx.flags & ~re.U) is rx.rx)
    """))
    before, added, same = res.stdout.split()
    assert int(before) > 500 and same == "True", res.stderr
    assert int(added) < 20, res.stdout  # not ~800: the few a module builds from run-time text, at most


def test_exit_codes_streams_argv_cwd_and_environment(tmp_path):
    script = tmp_path / "s.py"
    script.write_text(textwrap.dedent("""
        import os, sys
        print(sys.argv, os.getcwd(), os.environ.get("PROBE"), __file__, sys.path[0])
        print(sys.stdin.read().upper(), file=sys.stderr)
        sys.exit(int(sys.argv[1]))
    """))
    res = subprocess.run([prefork.python(), "s.py", "7", "x"], cwd=tmp_path, input="hello", capture_output=True,
                         text=True, env={**os.environ, "PROBE": "p1"}, timeout=60)
    assert res.returncode == 7
    assert res.stdout.strip() == f"['s.py', '7', 'x'] {tmp_path} p1 {script} {tmp_path}"
    assert res.stderr.strip() == "HELLO"
    assert py("-c", "raise SystemExit('bad thing')").returncode == 1
    crashed = py("-c", "1/0")
    assert crashed.returncode == 1 and crashed.stderr.splitlines()[-1] == "ZeroDivisionError: division by zero"
    assert 'File "<string>", line 1' in crashed.stderr and "prefork" not in crashed.stderr
    mod = py("-m", "json.tool", input='{"a": 1}')
    assert mod.returncode == 0 and '"a": 1' in mod.stdout


def test_pythonpath_and_an_edit_between_two_commands_are_seen(tmp_path):
    (tmp_path / "lib").mkdir()
    module = tmp_path / "lib" / "probe_mod.py"
    env = {**os.environ, "PYTHONPATH": "lib"}
    for value in ("one", "two!"):  # the sizes differ: no stale bytecode either way
        module.write_text(f"VALUE = {value!r}\n")
        res = py("-c", "import probe_mod; print(probe_mod.VALUE)", cwd=tmp_path, env=env)
        assert res.stdout.strip() == value, res.stderr


def test_signals_reach_the_command_and_a_killed_client_takes_it_down(tmp_path):
    code = "import os, sys, time; print(os.getpid(), flush=True); time.sleep(120)"
    proc = subprocess.Popen([prefork.python(), "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert int(proc.stdout.readline()) != proc.pid  # the command runs in a child of the server, not the client
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == -signal.SIGINT  # an uncaught KeyboardInterrupt, as an interpreter ends
    assert "KeyboardInterrupt" in proc.stderr.read()
    proc = subprocess.Popen([prefork.python(), "-c", code], stdout=subprocess.PIPE, text=True)
    child = int(proc.stdout.readline())
    proc.kill()
    proc.wait(timeout=60)
    gone = subprocess.run(["sh", "-c", f"while kill -0 {child} 2>/dev/null; do sleep 0.05; done; echo gone"],
                          capture_output=True, text=True, timeout=60)
    assert gone.stdout.strip() == "gone"


def test_an_option_or_a_start_up_variable_runs_a_real_interpreter():
    fresh = "import sys; print('langchain_core' in sys.modules)"
    assert py("-c", fresh).stdout.strip() == "True"  # the preforked one
    assert py("-X", "utf8", "-c", fresh).stdout.strip() == "False"
    assert py("-c", fresh, env={**os.environ, "PYTHONHASHSEED": "3"}).stdout.strip() == "False"


def test_the_evals_shim_is_the_console_script(tmp_path):
    res = subprocess.run([prefork.evals(), "gate", "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stdout.startswith("usage: evals gate"), res.stderr
    assert Path(prefork.evals()).name == "evals" and Path(prefork.python()).parent.name == "bin"
    assert sys.executable not in (prefork.python(), prefork.evals())


@pytest.mark.parametrize("interpreter", ["real", "preforked"])
def test_a_signal_the_caller_ignores_still_reaches_a_command_that_catches_it(interpreter):
    """A test that ignores SIGTERM itself (its children inherit the ignoring) signals a gate that
    installs its own handler: the handler runs, as with a real interpreter."""
    code = ("import signal, sys, time\nassert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN\n"
            "signal.signal(signal.SIGTERM, lambda *a: sys.exit(5))\nprint('ready', flush=True)\ntime.sleep(120)")
    python = sys.executable if interpreter == "real" else prefork.python()
    proc = subprocess.Popen([python, "-c", code], stdout=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_IGN))
    assert proc.stdout.readline().strip() == "ready"
    proc.terminate()
    assert proc.wait(timeout=60) == 5
