"""Commands the tests start, without each one importing the agent's stack again.

Each `python` or `evals` command a test runs (the docs pages' commands, the walkthroughs, the CLI
tests) is a new process that imports langchain, mcp, fastmcp, openai and evaluatorq: ~2.5 s of
CPU before its first line, about a third of the suite. Here a server process imports those
third-party packages once (never this repository's own modules: `turngate`, `app`, `evals`,
`examples`, `tests`, `scripts` are imported fresh by every command, so an edit made between two
commands is seen), and forks a child for each command: its own pid, cwd, environment, argv,
sys.path, stdin/stdout/stderr (the caller's own file descriptors, passed over the socket), exit
code and signals, as `python`/`evals` would give it. What is shared is what a fresh interpreter
would make the same way: the third-party modules, the hash seed, and `re`'s cache of compiled
patterns, holding those this repository's modules compile (~800, 0.2 s of every command's start:
a Pattern is immutable, and `re.compile` of the same text and flags gives the cached one anyway).

One server per run: pytest-xdist's controller starts it before its workers (tests/conftest.py),
a run without workers on its first command. It ends with the process that started it (its stdin
is a pipe from that process).

A client is a tiny script (`python -IS`, stdlib only) put on PATH as `python`, `python3` and
`evals` (`shim_bin`). It falls back to exec'ing the real interpreter whenever it cannot be sure
of the same behaviour: an interpreter option other than -u/-B, a PYTHON* variable that changes
start-up, no server. `TURNGATE_TESTS_PREFORK=0` turns the whole thing off (every command a real
interpreter), which the suite must pass as well.

Stdlib only at module level: the client imports this module without site-packages.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import struct
import sys

# start-up options a forked child honours; any other one runs the real interpreter
OPTIONS = {"-u", "-B"}
# variables that change how an interpreter starts; a command with one runs the real interpreter
STARTUP_VARS = {"PYTHONHASHSEED", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONOPTIMIZE", "PYTHONDEBUG",
                "PYTHONINSPECT", "PYTHONNOUSERSITE", "PYTHONUSERBASE", "PYTHONEXECUTABLE", "PYTHONWARNINGS",
                "PYTHONDEVMODE", "PYTHONMALLOC", "PYTHONFAULTHANDLER", "PYTHONTRACEMALLOC", "PYTHONPROFILEIMPORTTIME",
                "PYTHONSAFEPATH", "PYTHONINTMAXSTRDIGITS", "PYTHONUTF8", "PYTHONIOENCODING", "PYTHONCASEOK",
                "PYTHONPLATLIBDIR", "PYTHONBREAKPOINT", "PYTHONASYNCIODEBUG"}
OWN = ("turngate", "app", "evals", "examples", "tests", "scripts", "calc_bot", "mutate_bot")
PATTERNS_KEPT = 1 << 14  # re's cache size in the server and its children (CPython's default: 512)
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


# ---- the client (runs under `python -IS`) ----------------------------------------------------------

def client(kind: str, real: str, path: str) -> None:
    """Run `kind` ("python" or "evals") with this process's argv, through the server listening on
    `path` when it can; else exec `real`, the real interpreter or console script."""
    args = sys.argv[1:]
    if not _eligible(kind, args):
        _exec_real(real, args)
    # the command starts with the signals this process was started with ignored still ignored,
    # as an interpreter exec'd here would (it may catch them itself); every signal is forwarded,
    # one that comes before the command's pid is known once it is
    ignored = [int(sig) for sig in FORWARDED if signal.getsignal(sig) is signal.SIG_IGN]
    state: dict = {"pid": None, "pending": []}
    for sig in FORWARDED:
        signal.signal(sig, lambda s, _f: _forward(state, s))
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(path)
    except OSError:
        _exec_real(real, args)
    request = json.dumps({"kind": kind, "real": real, "args": args, "cwd": os.getcwd(),
                          "env": dict(os.environ), "ignored": ignored}).encode()
    socket.send_fds(conn, [struct.pack("!I", len(request)) + request], [0, 1, 2])
    reader = conn.makefile("rb")
    first = reader.readline().split()
    if len(first) != 2 or first[0] != b"pid":
        sys.stderr.write("prefork: the server did not start the command\n")
        os._exit(70)
    state["pid"] = int(first[1])
    for sig in state["pending"]:
        _forward(state, sig)
    line = reader.readline().split()
    if len(line) != 2 or line[0] != b"status":
        sys.stderr.write("prefork: the command's status was lost\n")
        os._exit(70)
    status = int(line[1])
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 70)


def _forward(state: dict, sig: int) -> None:
    if state["pid"] is None:
        state["pending"].append(sig)
        return
    try:
        os.kill(state["pid"], sig)
    except ProcessLookupError:
        pass


def _eligible(kind: str, args: list[str]) -> bool:
    if any(k in STARTUP_VARS for k in os.environ):
        return False
    if kind == "evals":
        return True
    i = 0
    while i < len(args) and args[i] in OPTIONS:
        i += 1
    if i == len(args):
        return False  # an interactive interpreter
    first = args[i]
    if first in ("-m", "-c"):
        return i + 1 < len(args)
    return not first.startswith("-") and first != ""


def _exec_real(real: str, args: list[str]) -> None:
    os.execv(real, [real, *args])


# ---- the server ----------------------------------------------------------------------------------

def serve(sock_path: str, repo: str, probe: list[str]) -> None:
    """Import the third-party modules that importing `probe` (this repository's entry modules)
    and running a one-row gate bring in, then fork a child per command. Which modules those are
    is found by a forked probe, so the server itself never holds a module of this repository."""
    import importlib
    import re
    import threading

    names, patterns = _third_party_of(repo, probe)
    for name in names:
        try:
            importlib.import_module(name)
        except BaseException:  # noqa: BLE001 - a module that fails to preload is imported by the child
            pass
    re._MAXCACHE = max(re._MAXCACHE, PATTERNS_KEPT)  # what a child compiles beside these is kept too
    for pattern, flags in patterns:
        try:
            re.compile(pattern, flags)
        except BaseException:  # noqa: BLE001 - the child compiles it itself
            pass
    own = sorted(m for m in sys.modules if m.split(".")[0] in OWN)
    if own or threading.active_count() != 1:
        # never fork a copy of this repository's code, nor a process with threads
        sys.stdout.write(f"refused: own modules {own[:5]}, threads {threading.active_count()}\n")
        sys.stdout.flush()
        return
    base_path = [p for p in sys.path[1:]]
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(sock_path)
    listener.listen(64)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the per-command supervisors are reaped at once
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    import select
    while True:
        ready, _, _ = select.select([listener, 0], [], [])
        if 0 in ready and not os.read(0, 1):
            return  # stdin closed: the test process that started this server is gone, killed or not
        if listener not in ready:
            continue
        conn, _ = listener.accept()
        if os.fork() == 0:
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            _supervise(conn, base_path)
        conn.close()


def _recv_exact(conn: socket.socket, n: int, first: bytes = b"") -> bytes:
    data = first
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def _supervise(conn: socket.socket, base_path: list[str]) -> None:
    """The per-command process: receive the request, fork the command, report its pid and status."""
    try:
        msg, fds, _flags, _addr = socket.recv_fds(conn, 1 << 16, 3)
        size = struct.unpack("!I", _recv_exact(conn, 4, msg[:4]))[0]
        body = _recv_exact(conn, size, msg[4:])
        request = json.loads(body)
        pid = os.fork()
        if pid == 0:
            conn.close()
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
            for fd in fds:
                if fd > 2:
                    os.close(fd)
            _run(request, base_path)  # never returns
        for fd in fds:
            os.close(fd)
        conn.sendall(f"pid {pid}\n".encode())
        # the command ends, or its client goes away (killed, even by SIGKILL, which it cannot
        # forward): then the command is killed as the client was
        import select
        pidfd = os.pidfd_open(pid)
        ready, _, _ = select.select([pidfd, conn], [], [])
        if pidfd not in ready:
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        try:
            conn.sendall(f"status {status}\n".encode())
        except OSError:
            pass
    finally:
        os._exit(0)


def _run(request: dict, base_path: list[str]) -> None:
    """In the forked child: become the command, run it, and exit as an interpreter would."""
    import builtins
    import importlib
    import random
    import types

    code = 0
    try:
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        env = request["env"]
        sys.dont_write_bytecode = bool(env.get("PYTHONDONTWRITEBYTECODE"))
        sys.pycache_prefix = env.get("PYTHONPYCACHEPREFIX") or None
        random.seed()
        for sig in FORWARDED:  # the dispositions an interpreter started by the client would have
            ignored = sig in request.get("ignored", [])
            default = signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL
            signal.signal(sig, signal.SIG_IGN if ignored else default)
        if "multiprocessing.process" in sys.modules:  # the folder it resolves a relative __main__ in
            sys.modules["multiprocessing.process"].ORIGINAL_DIR = os.getcwd()
        if "numpy" in sys.modules:
            sys.modules["numpy"].random.seed()
        args = list(request["args"])
        if request["kind"] == "evals":
            target, rest = ("script", request["real"]), args
        else:
            while args and args[0] in OPTIONS:
                option = args.pop(0)
                if option == "-u":
                    for stream in (sys.stdout, sys.stderr):
                        stream.reconfigure(write_through=True)
                elif option == "-B":
                    sys.dont_write_bytecode = True
            if args[0] in ("-m", "-c"):
                target, rest = (args[0], args[1]), args[2:]
            else:
                target, rest = ("script", args[0]), args[1:]
        extra = [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        main = types.ModuleType("__main__")
        main.__dict__["__builtins__"] = builtins
        sys.modules["__main__"] = main
        sys.path_importer_cache.clear()
        importlib.invalidate_caches()
        if target[0] == "-m":
            import runpy
            sys.argv = ["-m", *rest]
            sys.path[:] = [os.getcwd(), *extra, *base_path]
            runpy._run_module_as_main(target[1], alter_argv=True)
        elif target[0] == "-c":
            sys.argv = ["-c", *rest]
            sys.path[:] = ["", *extra, *base_path]
            exec(compile(target[1], "<string>", "exec"), main.__dict__)
        else:
            script = target[1]
            sys.argv = [script, *rest]
            sys.path[:] = [os.path.dirname(os.path.realpath(script)), *extra, *base_path]
            main.__file__ = os.path.abspath(script)  # as an interpreter sets it since 3.9
            main.__cached__ = None
            main.__spec__ = None
            main.__package__ = None
            with open(script, "rb") as f:
                source = f.read()
            exec(compile(source, script, "exec"), main.__dict__)
    except SystemExit as exit_:
        code = _exit_code(exit_.code)
    except KeyboardInterrupt:
        import traceback
        kind, value, tb = sys.exc_info()
        traceback.print_exception(kind, value, tb.tb_next)
        _finalise()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException:  # noqa: BLE001 - as the interpreter: the traceback, then exit 1
        kind, value, tb = sys.exc_info()
        value.__traceback__ = tb.tb_next  # from the command's own frames, as an interpreter shows it
        sys.excepthook(kind, value, tb.tb_next)
        code = 1
    _finalise()
    os._exit(code)


def _exit_code(value) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    try:
        sys.stderr.write(f"{value}\n")
    except Exception:  # noqa: BLE001
        pass
    return 1


def _finalise() -> None:
    """What an interpreter does on its way out: wait for its threads, run atexit, flush (as
    turngate.core.cli_support's exit does; not imported: the server holds none of this repository)."""
    import atexit
    import threading
    try:
        threading._shutdown()
    except BaseException:  # noqa: BLE001
        pass
    try:
        atexit._run_exitfuncs()
    except BaseException:  # noqa: BLE001
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001
            pass


def _third_party_of(repo: str, probe: list[str]) -> tuple[list[str], list[tuple[str, int]]]:
    """In a throwaway fork: the third-party modules that importing `probe` and a warm-up bring
    in, and the (text, flags) of every str pattern compiled meanwhile."""
    import importlib
    import re
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        re._MAXCACHE = max(re._MAXCACHE, PATTERNS_KEPT)  # keep every pattern compiled from here on
        sys.path.insert(0, repo)
        os.chdir(repo)  # as a command run in the repository: its pyproject.toml names the agent
        for name in probe:
            try:
                importlib.import_module(name)
            except BaseException:  # noqa: BLE001 - an optional extra that is not installed
                pass
        if probe:
            _warm_up(repo)
        names = [m for m in list(sys.modules) if m.split(".")[0] not in OWN and m != "__main__"]
        patterns = [(p, flags) for kind, p, flags in list(re._cache) if kind is str]
        with os.fdopen(write, "w") as out:
            json.dump({"modules": names, "patterns": patterns}, out)
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as inp:
        text = inp.read()
    os.waitpid(pid, 0)
    try:
        found = json.loads(text)
    except ValueError:  # the probe died: nothing preloaded, every command imports all itself
        return [], []
    return [n for n in found["modules"] if n not in sys.modules], [tuple(p) for p in found["patterns"]]


def _warm_up(repo: str) -> None:
    """In the throwaway probe: a one-row gate with every output, then its readers, so that the
    third-party modules a command imports only when it runs (numpy, griffe, evaluatorq's and
    loguru's submodules: ~0.4 s of every gate) are found and preloaded too."""
    import shutil
    import tempfile

    out = tempfile.mkdtemp(prefix="tg-prefork-probe-")
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)  # not the server's stdout, which says "ready" to the test process
    os.dup2(null, 2)
    try:
        from turngate.commands import compare, regression, show

        regression.main(["--version", "v3", "--only", "status", "--no-upload", "--out", out,
                         "--junit", f"{out}/j.xml", "--markdown", f"{out}/c.md", "--report", f"{out}/r.html"])
        (record,) = (os.path.join(out, n) for n in os.listdir(out) if n.endswith(".json"))
        show.main([record, "--verdict"])
        compare.main([record, record, "--report", f"{out}/cmp.html"])
    except BaseException:  # noqa: BLE001 - fewer modules preloaded: each command imports the rest itself
        pass
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2], sys.argv[3:])


# ---- the tests' side -----------------------------------------------------------------------------

_SHIMS: list = []  # this test process's (server or None, folder), made on first use
SHARED = "TURNGATE_TESTS_PREFORK_ROOT"  # set by pytest-xdist's controller: the one server's folder


def shims() -> str | None:
    """A folder laid out as this environment's venv (`bin/activate`, `lib`, `pyvenv.cfg`) whose
    `bin` runs `python`, `python3` and `evals` through a prefork server; None when
    TURNGATE_TESTS_PREFORK=0 or the server cannot start (then commands run as real interpreters).
    Under pytest-xdist the controller starts one server for all its workers (start_shared); a
    run without workers starts its own on first use."""
    if os.environ.get("TURNGATE_TESTS_PREFORK", "1") == "0":
        return None
    if _SHIMS:
        return _SHIMS[0][1]
    shared = os.environ.get(SHARED)
    if shared:
        _SHIMS.append((None, _wait_shared(shared)))
        return _SHIMS[0][1]
    import atexit

    server, root = _start()
    atexit.register(_stop, server, root)
    _SHIMS.append((server, _lay_out(server, root)))
    return _SHIMS[0][1]


def start_shared() -> tuple:
    """In pytest-xdist's controller, before its workers start: one server for all of them, started
    in the background. The workers' shims() wait for it on a lock the controller holds until the
    server is ready (or has failed), then read which from `state`. (server, folder)."""
    import fcntl
    import threading

    server, root = _start()
    lock = open(os.path.join(root, "lock"), "w")  # noqa: SIM115 - held until the server is laid out
    fcntl.flock(lock, fcntl.LOCK_EX)

    def lay_out() -> None:
        try:
            made = _lay_out(server, root)
        except BaseException:  # noqa: BLE001 - the workers then run real interpreters
            made = None
        with open(os.path.join(root, "state"), "w") as f:
            f.write("ready" if made else "failed")
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()

    threading.Thread(target=lay_out, name="prefork-server", daemon=True).start()
    return server, root


def _wait_shared(root: str) -> str | None:
    import fcntl

    with open(os.path.join(root, "lock")) as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)  # blocks until the controller has laid the server out
        fcntl.flock(lock, fcntl.LOCK_UN)
    try:
        with open(os.path.join(root, "state")) as f:
            return root if f.read() == "ready" else None
    except OSError:
        return None


def _start(probe: list[str] | None = None):
    """The server, started; it says "ready" on its stdout once it serves, and ends when its stdin
    (a pipe from this process) closes. probe: the entry modules whose third-party imports it
    preloads (default: the suite's; [] preloads nothing). (server, folder)."""
    import subprocess
    import tempfile

    root = tempfile.mkdtemp(prefix="tg-prefork-")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", SHARED)}
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    probe = probe if probe is not None else ["turngate.cli", "turngate.gate.run", "turngate.commands.regression", "app.refund_agent.client",
             "app.refund_agent.models", "app.northwind.server", "evals", "evals.judge", "langchain_openai"]
    server = subprocess.Popen([sys.executable, os.path.abspath(__file__), os.path.join(root, "s"), repo, *probe],
                              cwd=root, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    return server, root


def _lay_out(server, root: str) -> str | None:
    """Once the server is ready: its folder laid out as a venv whose bin runs through it."""
    from pathlib import Path

    if server.stdout.readline().strip() != "ready":
        server.kill()
        return None
    sock = os.path.join(root, "s")
    prefix = Path(sys.prefix)
    real_bin = prefix / "bin"
    bin_ = Path(root) / "bin"
    bin_.mkdir()
    real_python = str(real_bin / "python3") if (real_bin / "python3").exists() else sys.executable
    tests_dir = str(Path(__file__).resolve().parent)
    shimmed = {"python": ("python", real_python), "python3": ("python", real_python),
               f"python{sys.version_info[0]}.{sys.version_info[1]}": ("python", real_python)}
    if (real_bin / "evals").exists():
        shimmed["evals"] = ("evals", str(real_bin / "evals"))
    for name, (kind, real) in shimmed.items():
        shim = bin_ / name
        shim.write_text(f"#!{real_python} -ISB\nimport sys\nsys.path.insert(0, {tests_dir!r})\n"
                        f"from prefork import client\nclient({kind!r}, {real!r}, {sock!r})\n")
        shim.chmod(0o755)
    for entry in real_bin.iterdir():
        if entry.name not in shimmed and entry.name != "activate":
            (bin_ / entry.name).symlink_to(entry)
    (bin_ / "activate").write_text(f'. "{real_bin}/activate"\nPATH="{bin_}:$PATH"\nexport PATH\nhash -r 2>/dev/null\n')
    for entry in prefix.iterdir():
        if entry.name != "bin":
            (Path(root) / entry.name).symlink_to(entry)
    return root


def _stop(server, root) -> None:
    import shutil
    server.kill()
    server.wait()
    shutil.rmtree(root, ignore_errors=True)


def python() -> str:
    """The interpreter for a command a test starts: this environment's, through the server."""
    root = shims()
    return os.path.join(root, "bin", "python") if root else sys.executable


def evals() -> str:
    """This environment's `evals` console script, through the server."""
    root = shims()
    real = os.path.join(os.path.dirname(sys.executable), "evals")
    shim = os.path.join(root, "bin", "evals") if root else ""
    return shim if shim and os.path.exists(shim) else real
