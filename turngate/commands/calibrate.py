"""Calibrate the gate from an accepted run: propose bars and store the accepted per-row
counts as the reference (the bars file, and reference.json beside it).

    python evals/calibrate.py --version v3 --trials 100 [--against v1] [--write]
    python evals/calibrate.py --version v3 --seeds 0-99 --write
    python evals/calibrate.py --from results/calibrate-v3-....json [--write]   # from a stored run

A run without --write ends with the exact command that writes from the run it just made
(`--from <its results file> --write`), so a long calibration never has to run twice. --from
takes a complete results record (an interrupted one is refused: exit 2). The calibration run
goes to --out DIR (default results/); in a terminal a progress bar counts its runs (a piped
or CI log gets a plain line at every 10% instead; --quiet: neither).

A bar asks "no worse than what we accepted, allowing for sampling noise"; it never asks
for certainty the data can't give. For each scorer, with p the observed rate over n
verdicts from `trials` trials:
  - the noise allowance is the larger of two: the Wilson 95% lower bound of p, and the low
    end a one-trial gate of the accepted version still reaches (exact binomial over the
    n/trials verdicts of one trial, at 0.01 split over the scorers), because a one-trial gate
    has far fewer verdicts than the calibration run and is noisier;
  - minus a margin (code scorers 0.02, the judge 0.05: it is noisier), rounded down to 0.01;
  - a scorer the accepted version never failed keeps a bar of 1.00: zero tolerance, as for
    PII leaks, because any failure there is new behaviour, not noise.
The reference holds each row x scorer's pass / fail / n-a counts and failing seeds; the gate
tests means and rows against it (turngate/verdict/decide.py).

Refuses to write (exit 2, files untouched) when fewer than 3 trials ran, when any run
errored (crash, timeout, missing key), when a bar would be 0, or when the previous version
(--against, default v1, run on the same seeds) would pass the proposed bars. --write never
replaces an existing bars file or reference without --force: it prints what would change
(each scorer's old bar -> new bar, the reference's rows x runs) and the command that writes
them from the stored run with --force.
"""
from __future__ import annotations

import argparse
import math
import shlex
import sys
import threading
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import replace
from datetime import date
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from turngate.core import cli_support as cli
from turngate.core.atomic_write import WriteError, write_atomic
from turngate.core.errors import ConfigError
from turngate.core.project import project
from turngate.core.seeds import format_seeds, parse_seeds
from turngate.gate.run import (
    DEFAULT_AGENT,
    DEFAULT_DATASET,
    agents_for,
    execute,
    load_rows_for,
    new_record,
    summarise_record,
)
from turngate.jobs.runner import Settings
from turngate.jobs.target import TargetOptions
from turngate.output.console import console
from turngate.record.results import load_record, save_record
from turngate.record.summaries import Tally
from turngate.scoring.scorers import judge_scorers, make_evaluators, scorer_names, select
from turngate.sources.row_sources import source_for
from turngate.verdict.reference import DEFAULT_PATH as REFERENCE_PATH
from turngate.verdict.reference import build_reference, dump_reference, load_reference
from turngate.verdict.thresholds import DEFAULT_PATH, Bar, Thresholds, dump_toml, load_thresholds

MARGIN = {"code": 0.02, "judge": 0.05}
MIN_TRIALS = 3
ALPHA_BARS = 0.01  # chance an unchanged version falls below some bar in a one-trial gate
DEFAULT_TRIALS = 100  # enough accepted runs that "never failed" means it (see the module doc)


def one_trial_allowance(p: float, n1: int, alpha: float) -> int:
    """Most failures among n1 one-trial verdicts that a rate p still gives with chance > alpha
    (exact binomial upper tail: the normal approximation is too thin in the tail of rare failures)."""
    q, tail = 1 - p, 1.0
    for k in range(n1 + 1):
        tail -= math.comb(n1, k) * q ** k * p ** (n1 - k)  # now P(failures > k)
        if tail <= alpha:
            return k
    return n1


def propose(summary: Tally, trials: int) -> dict[str, Bar]:
    bars = {}
    alpha = ALPHA_BARS / max(1, len(summary.scorers))
    for name, s in summary.scorers.items():
        if s.n == 0:
            continue
        p, n = s.mean, s.n
        stats = dict(observed=round(p, 4), low=round(s.low, 4), high=round(s.high, 4), n=n)
        if s.passed == n:
            bars[name] = Bar(bar=1.0, why=f"never failed in {n} runs: zero tolerance", **stats)
            continue
        margin = MARGIN["judge" if name in judge_scorers() else "code"]
        n1 = max(1, n // max(1, trials))  # verdicts a one-trial gate has
        allowed = one_trial_allowance(p, n1, alpha)
        one_trial = 1 - allowed / n1
        floor = min(s.low, one_trial)
        bar = max(0.0, math.floor((floor - margin) * 100 + 1e-9) / 100)
        bars[name] = Bar(bar=bar, why=f"min(Wilson low {s.low:.3f}, one-trial low {one_trial:.3f}: "
                                      f"{allowed} of {n1} failing, p <= {alpha:.4f}) - margin {margin:.2f}", **stats)
    return bars


def errored(record, version: str) -> list[str]:
    return [f"{r.row_id} seed {r.trial}: {r.turn.error}" for r in record.runs_for(version) if r.turn.error]


def refuse(why: str) -> int:
    console.print(f"[red]not written[/]: {escape(why)}")
    print(f"error: calibrate: {why}", file=sys.stderr)
    return cli.EXIT_UNJUDGED


def portable(path: str) -> str:
    """A dataset path as committed files should hold it: relative to the working directory when
    inside it (an absolute path names one machine's checkout)."""
    try:
        return Path(path).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except (ValueError, OSError):
        return path


# -- progress over a long run -----------------------------------------------------------------

LINE_EVERY = 0.1  # piped / CI output: one plain line per this share of the runs
LINES_FROM = 100  # ... and only for runs at least this long (a short run needs no heartbeat)
POLL_S = 0.25
_PROGRESS: ContextVar[str] = ContextVar("calibrate_progress", default="auto")  # main() sets it from --quiet


def progress_mode(quiet: bool, terminal: bool) -> str:
    """"bar" in a terminal, "lines" for a pipe or a CI log, "off" with --quiet."""
    return "off" if quiet else "bar" if terminal else "lines"


class RunProgress:
    """Counts finished runs out of `total` while `count()` grows: a rich progress bar ("bar"), a
    plain line at every 10% ("lines": a CI log stays a handful of lines, no control codes), or
    nothing ("off"). `count` is read from a thread every POLL_S seconds (the run's own callback
    belongs to turngate.gate.run.execute; reading a list's length from another thread is safe)."""

    def __init__(self, total: int, mode: str, label: str, *, out=None, poll_s: float = POLL_S):
        self.total, self.label, self.out, self.poll_s = total, label, out or console, poll_s
        self.mode = "off" if total <= 0 or (mode == "lines" and total < LINES_FROM) else mode
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._bar = self._task = None
        self._shown = 0  # lines mode: tenths already printed
        self._started = 0.0

    def start(self, count: Callable[[], int]) -> RunProgress:
        if self.mode == "off":
            return self
        self._count, self._started = count, time.monotonic()
        if self.mode == "bar":
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("runs"), TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
                                 console=self.out, transient=False)
            self._task = self._bar.add_task(self.label, total=self.total)
            self._bar.start()
        self._thread = threading.Thread(target=self._poll, name="calibrate-progress", daemon=True)
        self._thread.start()
        return self

    def _poll(self) -> None:
        while not self._stop.wait(self.poll_s):
            self._show(self._count())

    def _show(self, done: int) -> None:
        done = min(done, self.total)
        if self._bar is not None:
            self._bar.update(self._task, completed=done)
        elif self.mode == "lines" and (tenth := int(done / self.total / LINE_EVERY + 1e-9)) > self._shown:
            self._shown = tenth
            self.out.print(f"{self.label}: {done} of {self.total} runs ({done / self.total:.0%}), "
                           f"{time.monotonic() - self._started:.0f} s", markup=False, highlight=False)

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None
        self._show(self._count())  # the last count, even between two polls
        if self._bar is not None:
            self._bar.stop()

    def __enter__(self) -> RunProgress:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def run_seeds(agents, loaded, rows, seeds, settings, evaluators, argv, path):
    """turngate.gate.run.run_seeds (every row at every seed through the agents into a new record,
    checkpointed to path), with the run's progress shown as main() asked (_PROGRESS). Its own
    copy because gate.execute takes no progress callback (a hook there would remove this)."""
    settings = replace(settings, trials=len(seeds))
    record = new_record(agents, loaded, rows, settings, {}, argv)
    record.meta.seeds = list(seeds)
    mode = _PROGRESS.get()
    mode = progress_mode(False, console.is_terminal) if mode == "auto" else mode
    total = len(rows) * len(seeds) * len(agents)
    with RunProgress(total, mode, "calibration").start(lambda: len(record.runs)):
        completed = execute(record, [(r, s) for r in rows for s in seeds], settings, path, agents, evaluators)
    record.meta.complete = completed
    return record, completed


def write_command(source: Path | str, a: argparse.Namespace, against: str | None, reference_given: bool) -> str:
    """The command that writes these bars and this reference from the stored run, as this run
    would have with --write: the same files, scorers and --against check."""
    cmd = [*shlex.split(cli.command("calibrate")), "--from", portable(str(source)), "--write"]
    if Path(a.thresholds).resolve() != Path(DEFAULT_PATH).resolve():
        cmd += ["--thresholds", portable(a.thresholds)]
    if reference_given:
        cmd += ["--reference", portable(a.reference)]
    if a.scorers:
        cmd += ["--scorers", *a.scorers]
    if against != "v1":  # --from resolves the default to v1 (and to no check when the run has none)
        cmd += ["--against", against or "none"]
    return shlex.join(cmd)


def bar_changes(path: str, bars: dict[str, Bar]) -> list[str]:
    """What writing these bars over the file at path changes, per scorer (old bar -> new bar)."""
    if not Path(path).exists():
        return [f"  {path}: new ({len(bars)} bars)"]
    try:
        old = load_thresholds(path).bars()
    except ConfigError as exc:
        return [f"  {path}: replaces a file that is not a readable bars file ({exc}) with {len(bars)} bars"]
    lines = [f"  {path}:"]
    for name in dict.fromkeys([*old, *bars]):
        before = f"{old[name]:.2f}" if name in old else "(none)"
        after = f"{bars[name].bar:.2f}" if name in bars else "(dropped)"
        same = name in old and name in bars and abs(old[name] - bars[name].bar) < 1e-9
        lines.append(f"    {name}: {before} -> {after}" + ("  (unchanged)" if same else ""))
    return lines


def reference_change(path: str, reference) -> str:
    """What writing this reference over the file at path changes: rows x runs before -> after."""
    new = f"{len(reference.rows)} rows x {len(reference.seeds)} runs"
    if not Path(path).exists():
        return f"  {path}: new ({new})"
    try:
        old = load_reference(path)
    except ConfigError as exc:
        return f"  {path}: replaces a file that is not a readable reference ({exc}) with {new}"
    return f"  {path}: {len(old.rows)} rows x {len(old.seeds)} runs -> {new}"


def write_new(texts: dict[Path, str], force: bool) -> None:
    """Write each file whole or not at all (turngate/core/atomic_write.py); without --force none
    replaces a file, even one that appeared since the check, and a failure removes the ones this
    call wrote: none is written unless all can be."""
    made = []
    try:
        for path, text in texts.items():
            what = "the bars" if path.suffix == ".toml" else "the reference"
            made.append(write_atomic(path, text, what=what, exclusive=not force))
    except WriteError as exc:
        if not force:
            for path in made:
                path.unlink(missing_ok=True)
        raise WriteError(f"calibrate --write: {exc}" + (f" (removed {', '.join(map(str, made))})" if made and not force
                                                         else "")) from None


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=cli.command("calibrate"), description=" ".join(__doc__.split("\n\n")[0].split()))  # the first paragraph
    p.add_argument("--agent", default=DEFAULT_AGENT, metavar="MODULE:CALLABLE", help="the target (see regression.py)")
    p.add_argument("--version", help="agent version, for a factory target (default: the factory's own)")
    p.add_argument("--trials", type=int, help=f"accepted runs per row, seeds 0..N-1 (default {DEFAULT_TRIALS})")
    p.add_argument("--seeds", help="which seeds instead: 0-99, 1,3,5")
    p.add_argument("--against", default=None,
                   help="previous version the bars must fail, run on the same seeds (default: [tool.turngate] against for the project's agent, none otherwise)")
    p.add_argument("--model")
    p.add_argument("--judge", default=project().value("judge"),
                   help="the policy judge, when policy_judge is calibrated (default: [tool.turngate] judge; none)")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--dataset", default=str(DEFAULT_DATASET), help="local JSONL dataset")
    src.add_argument("--dataset-id", help="orq.ai dataset id (needs ORQ_API_KEY)")
    p.add_argument("--parallelism", type=int, default=16)
    p.add_argument("--from", dest="source", metavar="FILE",
                   help="propose from a stored, complete results file instead of running the agent")
    p.add_argument("--out", metavar="DIR", help="where the calibration run's results file goes (default results/)")
    p.add_argument("--quiet", action="store_true", help="no progress bar or progress lines during the run")
    p.add_argument("--thresholds", default=str(DEFAULT_PATH))
    p.add_argument("--reference", help="where the accepted counts go (default: reference.json beside --thresholds)")
    p.add_argument("--scorers", nargs="+", metavar="NAME",
                   help="calibrate only these scorers (another agent's bars file lists only those that apply)")
    p.add_argument("--write", action="store_true", help="write the bars and the reference")
    p.add_argument("--force", action="store_true",
                   help="let --write replace an existing bars file or reference (without it: what would change, exit 2)")
    return p


@cli.guarded
def main(argv=None) -> int:
    started = time.perf_counter()
    a = parser().parse_args(argv)
    reference_given = a.reference is not None
    if a.source and a.out:
        raise ConfigError("calibrate: --out names where a calibration run goes; --from runs nothing")
    out_dir = cli.check_out_dir(a.out or "results")
    if a.against is None:  # the project's own agent is checked against [tool.turngate] against; another has no versions
        a.against = (project().value("against") or "none") if a.agent == DEFAULT_AGENT else "none"
    against = None if a.against in ("none", "") else a.against
    a.reference = a.reference or str(Path(a.thresholds).with_name(REFERENCE_PATH.name))
    selected = list(select(a.scorers)) if a.scorers else scorer_names()
    if a.write:  # somewhere it can write, checked before any run (replacing a file is decided once the bars are known)
        if Path(a.thresholds).resolve() == Path(a.reference).resolve():
            raise ConfigError(f"calibrate: --reference {a.reference} is the --thresholds file; give each its own")
        for path, flag in ((a.thresholds, "--thresholds"), (a.reference, "--reference")):
            cli.check_new_file(path, flag, force=True, inputs=[a.source])
    if a.source:
        record = load_record(a.source)
        if line := record.incomplete():  # bars and counts from part of the runs would describe nobody
            raise ConfigError(f"calibrate: --from {a.source}: {line}; calibrate from a complete run")
        if against and record.meta.baseline != against:
            against = None
            console.print("note: --from: the stored run has no --against version; that check is skipped")
    else:
        trials = DEFAULT_TRIALS if a.trials is None else a.trials
        seeds = parse_seeds(a.seeds) if a.seeds else list(range(max(0, trials)))
        if len(seeds) < MIN_TRIALS:
            return refuse(f"a calibration needs at least {MIN_TRIALS} trials per row (got {len(seeds)})")
        agents = agents_for(a.agent, TargetOptions(version=a.version, model=a.model, timeout=120.0), against)
        evaluators = make_evaluators(a.judge, names=selected)  # only those scorers: a judge only when one is calibrated
        loaded = load_rows_for(source_for(a.dataset, a.dataset_id), agents[0])
        settings = Settings(model=a.model, judge=a.judge, trials=len(seeds), parallelism=a.parallelism,
                            upload=False, print_table=False)
        path = cli.new_results_path(out_dir, f"calibrate-{agents[0].version}")  # never another run's
        console.print(f"calibration: {agents[0].version}" + (f" and {against}" if against else "")
                      + f", {len(loaded.rows)} rows x seeds {format_seeds(seeds)}")
        shown = _PROGRESS.set(progress_mode(a.quiet, console.is_terminal))
        try:
            record, completed = run_seeds(agents, loaded, loaded.rows, seeds, settings, evaluators,
                                          ["calibrate"] + (argv or sys.argv[1:]), path)
        finally:
            _PROGRESS.reset(shown)
        if not completed:
            return refuse("the calibration run was interrupted")
        record.meta.elapsed_s = round(time.perf_counter() - started, 3)
        record.summary = summarise_record(record, {})
        save_record(record, path)
        console.print(f"calibration run: {path}")
    version = record.meta.version
    if record.meta.trials < MIN_TRIALS:
        return refuse(f"a calibration needs at least {MIN_TRIALS} trials per row (the run has {record.meta.trials})")
    if bad := errored(record, version):
        return refuse(f"{len(bad)} of {len(record.runs_for(version))} runs of {version} errored "
                      f"(first: {bad[0]}); bars from crashed runs would be meaningless")
    summary = summarise_record(record, {})[version]
    bars = {n: b for n, b in propose(summary, record.meta.trials).items() if n in selected}
    t = Table(title=f"proposed bars from {version} ({summary.runs} runs, {record.meta.trials} trials)")
    for col in ("scorer", "observed", "95% CI", "n", "proposed bar", "why") + ((against,) if against else ()):
        t.add_column(col)
    prev = None
    if against:
        if bad := errored(record, against):
            return refuse(f"{len(bad)} runs of {against} errored (first: {bad[0]})")
        prev = summarise_record(record, {n: b.bar for n, b in bars.items()})[against].scorers
    for name, b in bars.items():
        extra = (f"{prev[name].mean:.3f}" if prev and prev.get(name) and prev[name].n else "-",) if against else ()
        t.add_row(name, f"{b.observed:.3f}", f"{b.low:.3f}-{b.high:.3f}", str(b.n), f"{b.bar:.2f}", b.why, *extra)
    console.print(t)
    reference = build_reference(record, {})
    if zero := [n for n, b in bars.items() if b.bar <= 0]:
        return refuse(f"the bar for {zero[0]} would be {bars[zero[0]].bar:.2f}: the accepted run fails it too often")
    missing = [n for n in selected if n not in bars]
    if missing:
        return refuse(f"no verdict for scorer {missing[0]} in the accepted run: it would have no bar")
    if prev is not None:
        passes = [n for n, b in bars.items() if prev.get(n) and prev[n].n and prev[n].mean >= b.bar - 1e-12]
        if len(passes) == len([n for n in bars if prev.get(n) and prev[n].n]):
            return refuse(f"{against} would pass every proposed bar: these bars cannot tell the versions apart")
        if passes:
            console.print(f"note: {against} is at or above the bar of {', '.join(passes)} "
                          "(the other bars and the reference tests catch it)")
    m = record.meta
    # the record names a judge only when its bars do, and a calibration has none yet: the judge
    # that scored the accepted run is the one asked for, when a judge scorer is calibrated
    judge = m.judge or (a.judge if any(n in judge_scorers() for n in bars) else None)
    provenance = {"version": version, "model": m.model, "judge": judge, "trials": m.trials,
                  "seeds": format_seeds(m.seeds), "date": date.today().isoformat(),
                  "dataset": portable(m.dataset), "dataset_sha256": m.dataset_sha256, "git_commit": m.git_commit,
                  "against": against or "none", "scorers": list(bars),
                  "method": "min(wilson_low, exact one-trial low at 0.01 over the scorers) - margin (code 0.02, judge 0.05); 1.0 if never failed"}
    reference.provenance = {k: v for k, v in provenance.items() if k != "method"}
    text = dump_toml(Thresholds(provenance=provenance, scorers=bars))
    if a.write:
        existing = [p for p in (a.thresholds, a.reference) if Path(p).exists()]
        console.print(("--write replaces:" if a.force else "--write would replace:") if existing else "--write:",
                      markup=False, highlight=False)
        for line in [*bar_changes(a.thresholds, bars), reference_change(a.reference, reference)]:
            console.print(line, markup=False, highlight=False)
        if existing and not a.force:
            files = " and ".join(existing)
            return refuse(f"--write: {files} already exist{'s' if len(existing) == 1 else ''}; to replace "
                          f"{'it' if len(existing) == 1 else 'them'}: "
                          f"{write_command(a.source or path, a, against, reference_given)} --force")
        write_new({Path(a.thresholds): text, Path(a.reference): dump_reference(reference)}, a.force)
        console.print(f"wrote {a.thresholds} and {a.reference}")
    else:
        console.print("not written; to write these bars and this reference from this run (no agent runs again):")
        console.print(f"  {write_command(a.source or path, a, against, reference_given)}", markup=False,
                      highlight=False, soft_wrap=True)
    return 0

