"""What a verdict could see, as a results file, `--json`, JUnit and the PR comment keep it.

A gate's statement is computed before any agent call from the reference, the trials, the rerun
plan and the policy (turngate/verdict/sensitivity.py: simulated gates, no agent calls); a
comparison's from its matched pairs (turngate/verdict/pair_power.py: what McNemar's exact test
could reach with them). Both are derived values, like the verdict they belong to."""
from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

_CONFIG = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)


class BreakKind(StrEnum):
    """The three breaks a gate's statement is about (docs/gate.md, "What this gate could see")."""
    ROW_ALWAYS = "row fails every run"  # one row, at random, now fails one of its scorers on every run
    ROW_HALF = "row fails half its runs"  # ... on each run with probability 1/2, as accepted otherwise
    SCORER_DROP = "scorer drops 5 points"  # every applicable run of one scorer fails it with extra probability 0.05


class SeenBreak(BaseModel):
    """One break: how many of the simulated gates it was in failed (exit 1)."""
    model_config = _CONFIG
    kind: BreakKind
    caught: int = Field(description="simulated gates that failed")
    gates: int = Field(description="simulated gates with this break")
    scorer: str | None = Field(None, description="the scorer that drops (scorer drops 5 points), else None")

    @property
    def rate(self) -> float:
        return self.caught / self.gates if self.gates else 0.0

    @property
    def words(self) -> str:
        what = {BreakKind.ROW_ALWAYS: "a row that now always fails",
                BreakKind.ROW_HALF: "a row that now fails half its runs",
                BreakKind.SCORER_DROP: f"a 5-point drop in {self.scorer}'s mean"}[self.kind]
        return f"{what}: {self.rate:.0%}"


class PairPower(BaseModel):
    """One scorer of a comparison: its matched pairs, and what McNemar could reach with them."""
    model_config = _CONFIG
    scorer: str
    pairs: int = Field(description="pairs where both verdicts apply")
    pass_to_fail: int
    fail_to_pass: int
    needed: int | None = Field(description="fewest pass->fail flips (none back) that would be significant "
                                           "(Holm over the scorers); None: more than the pairs")
    judged: bool = Field(description="False: even if all its discordant pairs went one way, not significant")

    @property
    def smallest_drop(self) -> float | None:
        """The smallest pass-rate drop the test could call significant with these pairs."""
        return self.needed / self.pairs if self.needed is not None and self.pairs else None


class Sensitivity(BaseModel):
    """The statement a verdict makes about what it could see, and its numbers."""
    model_config = _CONFIG
    line: str = Field(description="the statement in one line, as printed")
    gates: int = Field(0, description="a gate's: simulated gates per break (0: a comparison's, or none made)")
    rows: int = Field(0, description="a gate's: the reference rows simulated")
    trials: int = Field(0, description="a gate's: runs per row")
    reruns: bool = Field(True, description="a gate's: confirmation reruns simulated as the gate plans them")
    seed: int = Field(0, description="the simulation's seed: the same inputs give the same figures")
    breaks: list[SeenBreak] = Field(default_factory=list)
    pairs: list[PairPower] = Field(default_factory=list, description="a comparison's: per scorer")
