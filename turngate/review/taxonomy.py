"""The modes as a taxonomy: for each, its runs, its share of the runs reviewed with a Wilson
interval, and which scorer already fails its runs (agreement). A mode no scorer catches is
**uncovered**: it needs a scorer of its own."""
from __future__ import annotations

from dataclasses import dataclass, field

from turngate.verdict.stats import wilson

from .items import Item
from .store import ReviewState, RunKey

COVERS = 0.8  # a scorer covers a mode when it fails at least this share of the mode's runs


@dataclass
class ScorerAgreement:
    scorer: str
    failed: int  # of the mode's runs, how many this scorer failed
    judged: int  # of the mode's runs, how many it judged (not n/a)
    runs: int  # the mode's runs in the files read

    @property
    def share(self) -> float:
        return self.failed / self.runs if self.runs else 0.0


@dataclass
class ModeSummary:
    id: str
    name: str
    definition: str
    runs: list[RunKey]
    count: int
    reviewed: int  # the runs reviewed (a note or a label): the share's denominator
    interval: tuple[float, float]
    agreement: list[ScorerAgreement] = field(default_factory=list)  # most failures first, then most specific
    coverage: str = "uncovered"  # "covered", "partly covered" or "uncovered"

    @property
    def share(self) -> float:
        return self.count / self.reviewed if self.reviewed else 0.0

    @property
    def covered_by(self) -> str | None:
        return self.agreement[0].scorer if self.coverage == "covered" else None


def reviewed(state: ReviewState) -> set[RunKey]:
    return set(state.notes) | set(state.labels) | set(state.assigned)


def summarise(state: ReviewState, items: dict[RunKey, Item],
              verdicts: dict[RunKey, dict[str, bool | None]] | None = None) -> list[ModeSummary]:
    """One summary per mode, in the order the modes were made. Runs of a mode that are in none
    of the files read count towards the mode but not towards any scorer's agreement.
    `verdicts`: the runs scored by today's suite (rescore.rescored), used instead of the
    verdicts the files recorded wherever a run has them."""
    seen = reviewed(state)

    def failed_by(it: Item) -> set[str]:
        got = verdicts[it.key] if verdicts and it.key in verdicts else _verdicts(it)
        return {n for n, v in got.items() if v is False} | ({"agent_error"} & set(it.failing))

    # a tie (two scorers fail as many of a mode's runs) goes to the one that fails the fewest runs of
    # the other modes: the scorer of this mode, not a judge that fails a bit of everything
    failing = {k: failed_by(items[k]) for k in state.assigned if k in items}
    out = []
    for mode in state.modes.values():
        runs = state.runs_of(mode.id)
        here = [items[k] for k in runs if k in items]
        tallies: dict[str, list[int]] = {}
        for it in here:
            for name, v in (verdicts[it.key] if verdicts and it.key in verdicts else _verdicts(it)).items():
                t = tallies.setdefault(name, [0, 0])
                t[0] += v is False
                t[1] += v is not None
            if "agent_error" in it.failing:
                t = tallies.setdefault("agent_error", [0, 0])
                t[0] += 1
                t[1] += 1
        elsewhere = {n: sum(n in f for k, f in failing.items() if state.assigned[k] != mode.id) for n in tallies}
        agreement = sorted((ScorerAgreement(n, f, j, len(here)) for n, (f, j) in tallies.items()),
                           key=lambda a: (-a.failed, elsewhere[a.scorer], a.scorer))
        best = agreement[0].share if agreement else 0.0
        coverage = "covered" if here and best >= COVERS else "partly covered" if best > 0 else "uncovered"
        out.append(ModeSummary(mode.id, mode.name, mode.definition, runs, len(runs), len(seen),
                               wilson(len(runs), len(seen)), agreement, coverage))
    return out


def _verdicts(it: Item) -> dict[str, bool | None]:
    p = it.payload
    verdicts = p.verdicts if it.stage == "simulation" else p[0].verdicts
    return {n: v.passed for n, v in verdicts.items()}
