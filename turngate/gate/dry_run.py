"""`--dry-run`: what a gate would run and roughly what it would cost, without running it; and
the agent's model calls counted from the runs themselves, whichever executor made them.

Expected model calls come from the stored per-row counts the runner schedules by
(turngate/jobs/runner.py `duration_hints`: the most calls a run of the row took in the newest complete
results file of that version in --out); a row with no stored count is guessed as the runner
guesses (3 calls per user turn) and said so."""
from __future__ import annotations

from pathlib import Path

from turngate.core.seeds import format_seeds
from turngate.jobs.runner import duration_hints
from turngate.record.results import Record
from turngate.sources.dataset import Row
from turngate.verdict.confirm import rerun_bounds


def expected_calls(pairs: list[tuple[Row, int]], hints: dict[str, float]) -> tuple[int, int]:
    """(expected agent model calls, pairs whose row had no stored count and were guessed)."""
    total, guessed = 0, 0
    for row, _ in pairs:
        if row.id in hints:
            total += int(hints[row.id])
        else:
            total += 3 * len(row.user_turns())
            guessed += 1
    return total, guessed


def plan_lines(pairs: list[tuple[Row, int]], versions: list[tuple[str, str]], out_dir: str | Path, *,
               judge: str, confirm: bool, confirm_k: int | None) -> list[str]:
    """The plan, one fact a line. versions: (job, version) pairs, candidate first."""
    rows = list(dict.fromkeys(row.id for row, _ in pairs))
    seeds = sorted({s for _, s in pairs})
    lines = [f"dry run: {len(rows)} rows x {len(seeds)} seed(s) ({format_seeds(seeds) or 'none'}) = {len(pairs)} "
             f"runs per version, {len(pairs) * len(versions)} in all"]
    total = 0
    for job, version in versions:
        hints = duration_hints(Path(out_dir), version)
        calls, guessed = expected_calls(pairs, hints)
        total += calls
        src = (f"stored per-row counts of the newest complete {version} results in {out_dir}" if hints
               else f"no complete {version} results in {out_dir}")
        guess = f"; {guessed} run(s) guessed at 3 per user turn" if guessed else ""
        lines.append(f"  {job}: {len(pairs)} runs, about {calls} agent model calls ({src}{guess})")
    if len(versions) > 1:
        lines.append(f"  in all: about {total} agent model calls")
    if judge.startswith(("openai:", "orq:")):
        lines.append(f"  judge {judge}: up to one call per run and version on top ({len(pairs) * len(versions)})")
    if confirm:
        low, high = rerun_bounds(len(seeds))
        k = f"{confirm_k} per flagged row (--confirm)" if confirm_k else f"{low}-{high} per flagged row"
        lines.append(f"confirmation reruns may add runs: rows stage 1 flags are rerun on fresh seeds, {k}, "
                     "candidate only; not counted above")
    else:
        lines.append("confirmation reruns: off (--no-confirm)")
    lines.append("nothing run: no agent call, no results file written")
    return lines


def usage_line(record: Record) -> str | None:
    """`agent model calls: 401 in 74 runs (+318 in 40 confirmation reruns); 2,237,713 prompt + ...`,
    summed from each run's Turn.usage: counted in the process that ran it, so every executor
    (in-process, --workers) reports them."""
    gate = [r for r in record.runs if r.stage == "gate"]
    reruns = [r for r in record.runs if r.stage != "gate"]
    if not gate and not reruns:
        return None
    calls = sum(r.turn.usage.llm_calls for r in gate)
    prompt = sum(r.turn.usage.prompt_tokens for r in record.runs)
    completion = sum(r.turn.usage.completion_tokens for r in record.runs)
    line = f"agent model calls: {calls} in {len(gate)} runs"
    if reruns:
        line += f" (+{sum(r.turn.usage.llm_calls for r in reruns)} in {len(reruns)} confirmation reruns)"
    return line + f"; tokens: {prompt:,} prompt + {completion:,} completion"
