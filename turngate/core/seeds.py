"""Seed lists on the command line: `--seeds 20-39`, `--seeds 7`, `--seeds 1,3,5,10-12`.

A run's trial number IS its seed everywhere (RunResult.trial == seed), so a record's
meta.seeds says exactly which runs it holds and regrade/compare/resume read it from there."""
from __future__ import annotations

from turngate.core.errors import ConfigError

MAX_SEEDS = 100_000


def parse_seeds(text: str) -> list[int]:
    """Sorted distinct seeds from `7`, `20-39` (inclusive) or a comma list of both."""
    seeds: set[int] = set()
    for part in str(text).split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-")
        try:
            a, b = (int(lo), int(hi)) if sep else (int(part), int(part))
        except ValueError:
            raise ConfigError(f"--seeds {text!r}: {part!r} is not a seed or a range like 20-39") from None
        if a < 0 or b < a:
            raise ConfigError(f"--seeds {text!r}: {part!r} must be a non-negative seed or a range low-high")
        if len(seeds) + b - a + 1 > MAX_SEEDS:
            raise ConfigError(f"--seeds {text!r}: more than {MAX_SEEDS} seeds")
        seeds.update(range(a, b + 1))
    return sorted(seeds)


def seeds_from_args(seeds: str | None, trials: int | None, default_trials: int = 1) -> list[int]:
    """--seeds wins; else --trials N means seeds 0..N-1. Both at once is a mistake unless they agree."""
    if seeds is None:
        n = default_trials if trials is None else trials
        if n < 1:
            raise ConfigError("--trials must be at least 1")
        return list(range(n))
    chosen = parse_seeds(seeds)
    if trials is not None and trials != len(chosen):
        raise ConfigError(f"--trials {trials} and --seeds {seeds} ({len(chosen)} seeds) disagree; give one")
    return chosen


def format_seeds(seeds: list[int]) -> str:
    """The inverse of parse_seeds: `0-19`, `1,3,5`, `0-4,10`."""
    out, s = [], sorted(seeds)
    i = 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and s[j + 1] == s[j] + 1:
            j += 1
        out.append(str(s[i]) if i == j else f"{s[i]}-{s[j]}")
        i = j + 1
    return ",".join(out)
