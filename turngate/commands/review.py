"""Read the runs of results files or simulated conversations one at a time in a local page: note
the first thing that went wrong, label it pass or fail, group the notes into failure modes, and
export them (docs/review.md).

    evals review results/v2-20261203-101500.json [MORE FILES...] [--port N] [--no-browser]
    evals review results/v2-20261203-101500.json --export DIR

The page is served on 127.0.0.1 only, at the address printed (it carries the session's token;
anything without it is refused). Every note, label and mode is appended to the review file
(--notes; default `<first file>.review.jsonl` beside it) before the page is told it is saved, so
a reload, a second tab, Ctrl-C or a killed process loses nothing; opening the same files again
resumes where the reviewer stopped. Ctrl-C (or SIGTERM) ends the session: exit 0. A file that
cannot be read as a record, or a review file with a bad line, is one line and exit 2 before
anything is served. --export DIR writes the taxonomy, scorer skeletons, judge labels and rows
from the review file without serving anything.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from turngate.core import cli_support as cli
from turngate.core.errors import ConfigError

EXTRA = "error: evals review needs the review extra: pip install 'turngate[review]'"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=cli.command("review"), description=" ".join(__doc__.split("\n\n")[0].split()))
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="results records (gate, calibrate, compare, merge, regrade) or simulated conversations "
                        "(a file, or a results/sim-*/ folder)")
    p.add_argument("--port", type=int, default=0, help="the port on 127.0.0.1 (default: a free one)")
    p.add_argument("--no-browser", action="store_true", help="print the address, do not open a browser")
    p.add_argument("--sample", type=int, default=20, metavar="N",
                   help="passing runs to read after the failing ones, drawn with --seed (default 20)")
    p.add_argument("--seed", type=int, default=0, help="the seed of the passing sample (default 0: the same "
                                                       "queue each time the same files are opened)")
    p.add_argument("--notes", metavar="PATH", help="the review file (default: <first FILE>.review.jsonl beside it; "
                                                   "review.jsonl inside a folder)")
    p.add_argument("--out", metavar="DIR", help="where the page's Export button writes (default: <notes>.export/ "
                                                "beside the review file)")
    p.add_argument("--export", metavar="DIR", help="write the export into DIR from the review file and exit; "
                                                   "serves nothing")
    p.add_argument("--page", default="taxonomy.md", metavar="NAME",
                   help="the taxonomy page's file name in the export folder, for --export and the page's "
                        "Export button (default taxonomy.md; e.g. TAXONOMY.md)")
    p.add_argument("--coverage", choices=["today", "recorded"], default="today",
                   help="which scorers a mode's coverage is by: today's suite (the project's bars, its judge), "
                        "scoring the mode's runs again, or the verdicts the files recorded (default today)")
    p.add_argument("--judge", default=None, metavar="SPEC",
                   help="the policy judge today's suite scores with (default: the project's [tool.turngate] judge)")
    p.add_argument("--model", metavar="SPEC", help="a model for naming suggested groups: openai:<m> | orq:<m> "
                                                   "(default: offline, by text similarity)")
    return p


def default_export_dir(notes: Path) -> Path:
    """`<notes>.export/` beside the review file: v2.review.jsonl -> v2.review.export/."""
    name = notes.name[:-len(".jsonl")] if notes.name.endswith(".jsonl") else notes.name
    return notes.with_name(name + ".export")


def project_dataset() -> Path | None:
    """The project's dataset ([tool.turngate] dataset), when there is one: exported rows are
    checked against it (none may already be in it)."""
    from turngate.core.project import project

    here = project()
    if here.root is None or here.config.get("dataset") is None:
        return None
    path = here.path("dataset", "dataset.jsonl")
    return path if path.is_file() else None


def export_command(a: argparse.Namespace) -> str:
    """The command that makes this export again, for the top of its page: the files and options as
    given (always spelled `evals review`, so the page does not depend on how it was started)."""
    import shlex

    parts = ["evals", "review", *a.files]
    if a.notes:
        parts += ["--notes", a.notes]
    parts += ["--export", a.export]
    if a.page != "taxonomy.md":
        parts += ["--page", a.page]
    if a.coverage != "today":
        parts += ["--coverage", a.coverage]
    if a.judge:
        parts += ["--judge", a.judge]
    return shlex.join(parts)


def can_open_a_browser() -> bool:
    """A graphical browser can be opened: on Linux and the BSDs only with a display (without one,
    the webbrowser module would start a text browser in this terminal, over the server's output)."""
    import os

    if sys.platform in ("darwin", "win32") or os.environ.get("BROWSER"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _have_extra() -> bool:
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        return False
    return True


def coverage(a):
    """rescore.Coverage by today's suite (the project's bars and judge), or None: the verdicts recorded."""
    if a.coverage == "recorded":
        return None
    from turngate.core.project import project
    from turngate.review.rescore import Coverage

    judge = a.judge or project().value("judge")
    cli.check_keys(judge, "--judge")
    cov, why = Coverage.of_project(judge)
    if why:
        print(f"note: {why}", file=sys.stderr)
    return cov if cov.scorers is not None else None


@cli.guarded
def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(sys.argv[1:] if argv is None else argv)
    if a.sample < 0:
        raise ConfigError(f"--sample {a.sample}: a number of passing runs, 0 or more")
    if not 0 <= a.port <= 65535:
        raise ConfigError(f"--port {a.port}: a port number, 0-65535 (0: a free one)")
    cli.check_keys(a.model, "--model")
    if a.export is None and not _have_extra():
        print(EXTRA, file=sys.stderr)
        return cli.EXIT_UNJUDGED

    from turngate.review.items import load_items
    from turngate.review.store import ReviewStore, sidecar_for

    items = load_items(a.files)  # every record checked as the gate's readers check it, or one line
    if not items:
        raise ConfigError(f"{a.files[0]}: no runs to review")
    notes = Path(a.notes) if a.notes else sidecar_for(a.files[0])
    if notes.is_dir():
        raise ConfigError(f"--notes {notes}: is a directory; give a file name")
    sources = list({it.source.digest: {"digest": it.source.digest, "path": it.source.path, "kind": it.source.kind}
                    for it in items}.values())

    if a.export is not None:
        if not notes.exists():
            raise ConfigError(f"{notes}: no such review file (review the runs first: {cli.command('review')} "
                              f"{' '.join(a.files)})")
        store = ReviewStore(notes, sources)
        store.load()  # a bad line is file:line, exit 2
        try:
            from turngate.review.export import export
        except ImportError as exc:
            raise ConfigError(f"--export: the review's export is not available in this turngate ({exc})") from None
        kwargs = {"dataset": dataset} if (dataset := project_dataset()) is not None else {}
        if (cov := coverage(a)) is not None:
            kwargs["verdicts"] = cov.verdicts(store.state, {it.key: it for it in items})
        written = export(store.state, items, Path(a.export), page=a.page, command=export_command(a), **kwargs)
        for path in written:
            print(path)
        for line in getattr(written, "report", []) or []:
            print(f"note: {line}", file=sys.stderr)
        store.close()
        return cli.EXIT_PASS

    from turngate.review.server import Session, listen, serve

    store = ReviewStore(notes, sources)
    state = store.load()
    elsewhere = sum(1 for k in state.notes if k not in {it.key for it in items})
    if elsewhere:
        print(f"note: {elsewhere} note(s) in {notes} are on runs of none of the files given", file=sys.stderr)
    session = Session(items, store, sample=a.sample, seed=a.seed, model=a.model, dataset=project_dataset(),
                      coverage=coverage(a), page=a.page,
                      export_dir=Path(a.out) if a.out else default_export_dir(notes))
    sock = listen(a.port)
    port = sock.getsockname()[1]
    session.bind(port)
    url = session.url(port)
    queued = len(session.queue())

    def ready() -> None:
        print(f"review: {url}", flush=True)
        print(f"  {queued} runs to read ({sum(it.failed for it in items)} failing of {len(items)}, then "
              f"{queued - sum(it.failed for it in items)} passing); notes in {notes}; Ctrl-C ends the session",
              flush=True)
        if not a.no_browser:
            if not can_open_a_browser():
                print("  no display here: open the address in a browser yourself (or forward the port: ssh -L)",
                      flush=True)
                return
            import threading
            import webbrowser

            threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()

    try:
        serve(session, sock, on_ready=ready)
    finally:
        store.close()
    print(f"review ended: {state.events} event(s) in {notes}", flush=True)
    return cli.EXIT_PASS
