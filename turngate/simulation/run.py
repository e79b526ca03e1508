"""The simulation run: personas x scenarios x seeds through evaluatorq's `simulate`,
then every conversation scored and located, and written as one JSON file each.

One `simulate()` call per (seed, persona): the injected judge has to know the persona
(its patience decides when the user stops), and evaluatorq tells an injected judge
only the scenario. Within a call, evaluatorq runs that persona's scenarios side by side.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluatorq.simulation import simulate
from evaluatorq.simulation.contracts import SimulationDatapoint
from evaluatorq.simulation.utils.prompt_builders import build_datapoint_system_prompt
from pydantic import BaseModel, ConfigDict, Field

from turngate.core.atomic_write import write_atomic
from turngate.record.results import ScorerVerdict as Verdict
from turngate.sources.dataset import Row

from .agents import Conversations, OfflineUser, QuietHooks, SimJudge, split_roles
from .convert import conversation_row, to_persona, to_scenario
from .scoring import failing, goal_reached, locate, order, score
from .specs import PersonaSpec, ScenarioSpec

SCHEMA = "turngate/simulation@1"
# `<writer>/simulation@1`: the layout is the version; files the library wrote under an earlier name read the same
WRITTEN_BY = re.compile(r"[\w.-]+/simulation@1")


class Failure(BaseModel):
    model_config = ConfigDict(extra="forbid")
    scorer: str
    explanation: str
    after_turn: int  # 1-based: the user turn after which it went wrong (scoring.locate)
    user_turn: str = ""  # that turn's text


class ConversationRecord(BaseModel):
    """One simulated conversation, self-contained so promote needs nothing else."""
    model_config = ConfigDict(extra="forbid")
    schema_: str = Field(default=SCHEMA, alias="schema")
    run: str
    conversation: str
    scenario: str
    persona: str
    seed: int
    version: str
    model: str
    sim_model: str
    judge: str | None  # the policy judge (None: judge-backed scorers were not run)
    turns: list[str]
    turn: dict[str, Any]
    verdicts: dict[str, Verdict]
    goal_reached: bool | None
    failure: Failure | None
    failures: list[Failure] = Field(default_factory=list)
    ended: str  # why the user stopped (its decide(), e.g. goal_reached, script_done) or max_turns / error
    known_rows: list[str] = Field(default_factory=list)  # dataset rows with the same user turns
    scenario_spec: dict[str, Any]  # expect, expected_output, tags, goal: what promote needs
    evaluatorq: dict[str, Any] = Field(default_factory=dict)  # evaluatorq's own view of the result

    def dump(self) -> str:
        return json.dumps(self.model_dump(mode="json", by_alias=True), indent=2, ensure_ascii=False)


@dataclass
class Settings:
    version: str
    model: str | None
    sim_model: str
    judge: str | None  # the policy judge (None: judge-backed scorers were not run)
    seeds: int
    max_turns: int
    evaluators: list[dict]
    timeout: float | None  # seconds per agent run (one replay of the turns so far)
    known: dict[tuple[str, ...], list[str]]  # user turns -> dataset row ids
    target: object = None  # the agent (an evals Target), built once from --agent


def known_turns(rows: list[Row]) -> dict[tuple[str, ...], list[str]]:
    out: dict[tuple[str, ...], list[str]] = {}
    for r in rows:
        out.setdefault(tuple(t.strip() for t in r.user_turns()), []).append(r.id)
    return out


def _make_user(persona: PersonaSpec, scenarios: list[ScenarioSpec], seed: int, sim_model: str):
    if sim_model.split(":", 1)[0].strip() == "offline":
        return OfflineUser(persona, scenarios, seed), None
    from .llm_user import LLMUser, llm_stop

    return LLMUser(persona, scenarios, seed, sim_model), llm_stop(persona)


async def _one_call(persona: PersonaSpec, scenarios: list[ScenarioSpec], seed: int, st: Settings, run: str):
    convs = Conversations(st.target, seed, st.timeout)
    user, stop_rule = _make_user(persona, scenarios, seed, st.sim_model)
    judge = SimJudge(persona, scenarios, seed, convs, st.evaluators, st.max_turns, stop_rule)
    eq_persona = to_persona(persona)
    points = []
    for s in scenarios:
        eq_scenario = to_scenario(s)
        points.append(SimulationDatapoint(
            id=f"{s.id}--{persona.id}--s{seed}", persona=eq_persona, scenario=eq_scenario,
            user_system_prompt=build_datapoint_system_prompt(eq_persona, eq_scenario),
            first_message=""))  # empty: evaluatorq asks our user simulator for it
    # Off: the parts of evaluatorq.simulation that need an LLM and have no injection point
    # (executive summary, recommendations; first-message/persona/scenario generation is
    # skipped because the datapoints are given and our simulator writes the first message).
    results = await simulate(
        run_name=f"{run}-{persona.id}-s{seed}", target=convs.target(), datapoints=points, user_simulator=user,
        judge=judge, max_turns=st.max_turns, hooks=QuietHooks(), upload_results=False, save=False,
        executive_summary=False, recommendations=False, raise_on_execution_failure=False)
    by_id = {r.metadata.get("datapoint_id"): r for r in results}
    return convs, [(s, by_id.get(p.id)) for s, p in zip(scenarios, points, strict=True)]


async def _record(s: ScenarioSpec, persona: PersonaSpec, seed: int, result, convs: Conversations,
                  st: Settings, run: str) -> ConversationRecord:
    name = f"{s.id}--{persona.id}--s{seed}"
    users = split_roles(result.messages, "assistant")[0] if result is not None else []
    spec = {"expect": s.expect, "expected_output": s.expected_output, "tags": s.tags,
            "goal": s.goal, "goal_reached": s.goal_reached.model_dump() if s.goal_reached else None}
    common = dict(run=run, conversation=name, scenario=s.id, persona=persona.id, seed=seed, version=st.version,
                  sim_model=st.sim_model, judge=st.judge, scenario_spec=spec)
    broken = result is None or str(result.terminated_by) in ("error", "timeout")
    if broken or not users or tuple(users) not in convs.turns:
        why = result.reason if result is not None else "evaluatorq returned no result"
        fail = Failure(scorer="simulation", explanation=f"the conversation did not run: {why}", after_turn=0)
        return ConversationRecord(**common, model=st.model or "", turns=users, turn={}, verdicts={},
                                  goal_reached=None, failure=fail, failures=[fail], ended="error")
    key = tuple(users)
    turn = convs.turns[key]
    row = conversation_row(s, users, row_id=s.id)
    verdicts = convs.verdicts.get((s.id, key)) or await score(row, turn, st.evaluators, s.goal_reached)
    bad = failing(verdicts)
    where = await locate(row, convs.prefixes(users), st.evaluators, s.goal_reached, bad) if bad else {}
    failures = [Failure(scorer=n, explanation=verdicts[n].explanation, after_turn=where[n],
                        user_turn=users[where[n] - 1]) for n in bad]
    # The first thing to go wrong is the headline; ties go to the gate's scorer order.
    ranks = order()
    failures.sort(key=lambda f: (f.after_turn, ranks.index(f.scorer) if f.scorer in ranks else len(ranks)))
    reached = None if s.goal_reached is None else goal_reached(s.goal_reached, turn)
    known = sorted({i for k in (key, key[:failures[0].after_turn] if failures else key)
                    for i in st.known.get(tuple(t.strip() for t in k), [])})
    evq = {"terminated_by": str(result.terminated_by), "goal_achieved": result.goal_achieved,
           "rules_broken": result.rules_broken, "criteria_results": result.criteria_results,
           "turn_count": result.turn_count}
    return ConversationRecord(**common, model=turn.model, turns=users, turn=turn.model_dump(mode="json"),
                              verdicts=verdicts, goal_reached=reached, failure=failures[0] if failures else None,
                              failures=failures, ended=convs.ended.get((s.id, key), "max_turns"), known_rows=known,
                              evaluatorq=evq)


async def run_all(personas: list[PersonaSpec], scenarios: list[ScenarioSpec], st: Settings, run: str,
                  on_record=None) -> list[ConversationRecord]:
    records = []
    for seed in range(st.seeds):
        for persona in personas:
            convs, pairs = await _one_call(persona, scenarios, seed, st, run)
            try:
                for s, result in pairs:
                    rec = await _record(s, persona, seed, result, convs, st, run)
                    records.append(rec)
                    if on_record is not None:
                        on_record(rec)
            finally:
                await convs.aclose()  # the Turns are recorded: free the server's worlds
    return records


def write_records(records: list[ConversationRecord], out_dir: Path) -> None:
    for rec in records:  # each whole or not at all
        write_atomic(out_dir / f"{rec.conversation}.json", rec.dump() + "\n", what="the conversation record")


def load_record_file(path: str | Path) -> ConversationRecord:
    from turngate.sources.dataset import DatasetError

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}: not JSON ({exc})") from None
    if not isinstance(data, dict) or not WRITTEN_BY.fullmatch(str(data.get("schema"))):
        raise DatasetError(f"{path}: not a simulated conversation (expected schema {SCHEMA!r}; "
                           "pass a results/sim-*/<conversation>.json file)")
    try:
        return ConversationRecord.model_validate(data)
    except Exception as exc:  # pydantic ValidationError: one line
        first = str(exc).splitlines()
        raise DatasetError(f"{path}: {first[1].strip() if len(first) > 1 else first[0]}") from None
