"""Every knob of the gate's decision rule in one frozen value: `GatePolicy`.

decide(), plan_reruns() and the two stages of turngate/verdict/confirm.py read their levels,
screens and rerun counts from the policy they are given (DEFAULT unless a caller passes
another: a study, or a record re-judged by the rule it was judged with). Each field carries
what it means and the measurement that justifies its value; docs/gate.md's policy table is
generated from them (`policy_table`) and a test keeps the two equal.

RULE numbers the decision rule itself (what the knobs feed); a record stores it with the
policy, so a reader knows which rule judged it.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

# the decision rule's version: bump when decide()/confirm.py judge differently for the same knobs.
# 2: a row rerun for its own flag stops once it cannot reach Holm's first step (1: the most lenient)
# 3: a total's Fisher combination no longer asks its reruns to lean the same way (2: reruns_lean
#    0.5), and a total stage 1 did not flag is no longer tested on the reruns pooled
RULE = 3

# knobs of earlier rules that today's rule does without (docs/validation-gate.md 7.2): a stored
# policy that names one still reads (GatePolicy.from_dict drops it); records judged by such a rule
# keep their stored verdict (turngate/verdict/rule.py)
RETIRED = frozenset({"reruns_lean"})


def knob(default: float | int, meaning: str, why: str, group: str) -> Any:
    return field(default=default, metadata={"meaning": meaning, "why": why, "group": group})


_S1, _S2, _K, _SHOW = "stage 1 (screen)", "stage 2 (confirm)", "reruns", "shown"


@dataclass(frozen=True)
class GatePolicy:
    """The decision rule's knobs (turngate/verdict/confirm.py, decide.py). Frozen: a policy is a value."""

    screen_p: float = knob(0.3, "a row's unit (row x scorer, or its runs failing some scorer) is flagged for "
                           "reruns when it failed and its tail p is at or below this",
                           "liberal on purpose: a flag costs reruns, never a false alarm (stage 2 decides)", _S1)
    screen_p_agg: float = knob(0.25, "a scorer's total over rows (or the failing runs' total) is flagged when its "
                               "p is at or below this; its failing rows are rerun",
                               "diffuse drops show only in totals; on the design seeds 0.25 caught hardened-off "
                               "in 184/196 gates at 408 reruns per gate, 0.1 in 181/196 at 505; flagged only below a bar, a hotter "
                               "model was caught in 28 of 150 simulated five-trial gates instead of 75, and in 6 "
                               "of 10 real ones instead of 10 with no rerun budget (docs/validation-gate.md 7.2)", _S1)
    alpha: float = knob(0.005, "family-wise false-confirmation rate of stage 2 (Holm within each family)",
                        "with alpha_stage1_rows, bounds an unchanged version's false alarms at 0.6% of gates", _S2)
    row_share: float = knob(0.5, "the share of alpha given to the flagged rows' family; the rest goes to the "
                            "totals' family (every unit's total; one stage 1 did not flag counts as p = 1)",
                            "many flagged rows must not starve a diffuse rise: one family at alpha missed a "
                            "hotter model in 3 more of 150 simulated 5-trial gates and 3-5 more of 100 20-trial "
                            "ones (docs/validation-gate.md 7.2)", _S2)
    alpha_stage1_rows: float = knob(0.001, "a flagged row also stands on the gate's runs alone at this level, "
                                    "Bonferroni over every candidate test",
                                    "many trials and a small reference: the gate's own failures then dilute "
                                    "its reruns' null; without it a broken noisy row was caught in 93 of 100 "
                                    "simulated twenty-trial gates against a 20-run reference instead of 99 "
                                    "(docs/validation-gate.md 7.2)", _S2)
    alpha_one_stage: float = knob(0.01, "a flag with no reruns to judge it (--no-confirm, a regrade's new flag) "
                                  "is judged on stage 1 at this level, Bonferroni over every candidate",
                                  "one stage has no second look: the whole candidate family pays", _S2)
    k_min: int = knob(3, "fewest reruns of a flagged row", "the floor of K; K itself is the fewest reruns that give "
                      "power_rate/power at the row's level", _K)
    k_max: int = knob(20, "most reruns of a flagged row (grows to the gate's trials)",
                      "the cap of K, so one flag cannot cost more than a row's worth of trials", _K)
    power_rate: float = knob(1.0, "K is the fewest reruns that confirm a row now failing this share of its runs",
                             "one-change breaks fail every run: at 1 a row's reruns stop at its first pass "
                             "(it needs every one to fail), which halves what an unchanged version pays "
                             "(+7% of a one-trial gate's runs instead of +14% at 0.95, design and fresh "
                             "seeds) and still caught 9 such variants in 20/20 one-trial gates; a row now "
                             "failing 90% of its runs is confirmed less often (docs/validation-gate.md 7.1)", _K)
    power: float = knob(0.9, "... with at least this probability",
                        "the conventional 90% power (moot at power_rate 1: K reruns all fail)", _K)
    k_agg_min: int = knob(5, "fewest reruns per row of a flagged total", "see k_agg_per_trial", _K)
    k_agg_per_trial: int = knob(8, "reruns per row of a flagged total, per trial of the gate",
                                "fewer at one or two trials, where a flagged total is mostly a fluke", _K)
    k_agg_max: int = knob(30, "most reruns per row of a flagged total",
                          "20 missed a hotter model at five trials; 30 cost an unchanged version ~30% more "
                          "reruns (docs/validation-gate.md section 6)", _K)
    quiet_rate: float = knob(0.015, "a unit is quiet when its accepted rate (Jeffreys mean) is at most this: "
                             "0-4 failures of 300, 0-1 of 100, 0 of 50",
                             "a safety switch off shows as quiet rows failing one run in ten; without their "
                             "reruns hardened-off was caught in 4 of 20 real one-trial gates instead of 6 (no "
                             "rerun budget; docs/validation-gate.md 7.2)", _K)
    k_quiet_min: int = knob(5, "fewest reruns of a row that failed a quiet unit", "see k_quiet_per_trial", _K)
    k_quiet_per_trial: int = knob(12, "reruns of a row that failed a quiet unit, per trial of the gate",
                                  "60 reruns of a row failing 10% against 0 of 100 give p ~ 5e-3; 40 only ~1e-2", _K)
    k_quiet_max: int = knob(60, "most reruns of a row that failed a quiet unit", "see k_quiet_per_trial", _K)
    rerun_budget: float = knob(0.05, "reruns for units' totals (a flagged total's rows, rows that failed a quiet "
                               "unit) are given out up to this share of the gate's runs, rows with the least "
                               "likely stage 1 first; a scorer below its bar is always rerun (--rerun-budget; "
                               "inf: no cap)", "unchanged v3 pays 7% at one trial, 4-5% at five in all (fresh "
                               "seeds); what more buys (diffuse changes at five trials): docs/validation-gate.md", _K)
    evidence_step: float = knob(0.05, "grid step (in -ln p) of the summed-surprise statistic",
                                "the statistic's resolution: its null is exact on this grid", _S1)
    alpha_means: float = knob(0.1, "the gate bar shown per scorer: the mean the summed-failures test alone "
                              "would call a drop at this level", "shown only; never decides", _SHOW)
    alpha_baseline: float = knob(0.05, "with --fail-on-regression and in compare: McNemar's exact test per "
                                 "scorer against the baseline, Holm family-wise at this level",
                                 "the conventional level for a paired two-version comparison", _S2)

    def as_dict(self) -> dict[str, float | int | None]:
        """As JSON holds it: no cap (inf) is null. Every knob is a number, so a shallow copy
        (dataclasses.asdict deep-copies: it was a quarter of a reader's time)."""
        return {f.name: None if (v := getattr(self, f.name)) == float("inf") else v for f in fields(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GatePolicy:
        """A stored policy; a knob it does not name takes today's default (it was added later), a
        knob an earlier rule had (RETIRED) is dropped."""
        names = {f.name: f for f in fields(cls)}
        data = {k: v for k, v in data.items() if k not in RETIRED}
        if unknown := sorted(set(data) - set(names)):
            raise ValueError(f"unknown gate policy knob(s): {', '.join(unknown)}")
        out = {}
        for k, v in data.items():
            v = float("inf") if v is None and k == "rerun_budget" else v
            kind = int if isinstance(getattr(DEFAULT, k), int) else float
            if isinstance(v, bool) or not isinstance(v, int | float) or (kind is int and not float(v).is_integer()):
                raise ValueError(f"gate policy knob {k}: {v!r} is not a number of its kind")
            out[k] = kind(v)
        return cls(**out)

    @property
    def false_alarm_bound(self) -> float:
        """P(an unchanged version fails a gate with reruns on) is at most this, at any number of
        trials: the two Holm families share alpha, and a row standing on stage 1 alone adds
        alpha_stage1_rows (every rerun p is valid whatever stage 1 chose)."""
        return self.alpha + self.alpha_stage1_rows

    def level(self, family: str) -> float:
        """alpha's share for the flagged rows' family ("row") or the totals' ("aggregate")."""
        return self.alpha * (self.row_share if family == "row" else 1 - self.row_share)


DEFAULT = GatePolicy()


def policy_table(policy: GatePolicy = DEFAULT) -> str:
    """The policy as Markdown: its one false-alarm figure, then a table of the knobs (docs/gate.md
    holds it between markers; tests/test_policy.py compares)."""
    out = [f"Decision rule {RULE}. **False alarms: an unchanged version fails at most "
           f"{policy.false_alarm_bound:.1%} of gates** with reruns on, at any number of trials (`alpha` + "
           f"`alpha_stage1_rows`); with `--no-confirm`, at most `alpha_one_stage` = {policy.alpha_one_stage:g} "
           "plus the bars' own rate.", "",
           "| knob | value | stage | what it does | why this value |", "|---|---|---|---|---|"]
    for f in fields(policy):
        m = f.metadata
        out.append(f"| `{f.name}` | {getattr(policy, f.name):g} | {m['group']} | {m['meaning']} | {m['why']} |")
    return "\n".join(out)
