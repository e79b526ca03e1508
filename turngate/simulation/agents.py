"""What evaluatorq's `simulate` is handed: the target (our agent), an injected user
simulator and an injected judge. evaluatorq drives the loop (first message, target,
judge, next user message, ... until the judge ends it or max_turns).

Why injected agents: evaluatorq's own UserSimulatorAgent and JudgeAgent call an LLM
through ORQ_API_KEY / OPENAI_API_KEY and cannot run offline. Ours keep its contract
(update_context / generate_first_message / respond_async; evaluate -> Judgment with
per-criterion occurrence) and are deterministic.

The target keeps one live conversation per simulated dialogue when the Target offers one
(`target.conversation(seed)`, an object with `await ask(text, timeout=) -> Turn` and
`await aclose()`, e.g. one tool-server session and one message history): each step adds
the newest user turn to the same history, so the agent answers exactly the history the
simulated user saw, also with a real model. A plain Target is replayed: the turns so far
are sent again as `{"turns": [...]}` each step. The Turn after every prefix is kept and later re-scored exactly
(scoring.locate).
"""
from __future__ import annotations

import json

from evaluatorq.simulation._usage import UsageTracking
from evaluatorq.simulation.contracts import Criterion, CriterionVerdict, Judgment
from evaluatorq.simulation.hooks import DefaultHooks
from evaluatorq.simulation.utils.prompt_builders import build_scenario_user_context

from turngate.core.turn import Turn
from turngate.record.results import ScorerVerdict as Verdict
from turngate.sources.dataset import DatasetError

from .convert import conversation_row, criteria, to_scenario
from .scoring import goal_reached, score
from .scripted import user_for
from .specs import PersonaSpec, ScenarioSpec


def text_of(message) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(getattr(p, "text", "") or "" for p in content or [])


def split_roles(messages, agent_role: str) -> tuple[list[str], list[str]]:
    """(user turns, agent answers) from a transcript; the user simulator sees roles inverted."""
    user_role = "assistant" if agent_role == "user" else "user"
    users = [text_of(m) for m in messages if m.role == user_role and not m.tool_calls]
    agent = [text_of(m) for m in messages if m.role == agent_role and text_of(m)]
    return users, agent


class Replay:
    """A conversation with a plain Target: every step sends the whole history of user turns."""

    def __init__(self, target, seed: int):
        self.target, self.seed, self.said = target, seed, []

    async def ask(self, text: str, *, timeout: float | None = None) -> Turn:
        import asyncio

        from turngate.jobs.target import as_turn

        self.said.append(text)
        try:
            async with asyncio.timeout(timeout):
                return as_turn(await self.target({"turns": list(self.said)}, self.seed))
        except TimeoutError:
            return self._failed("timeout")
        except Exception as exc:  # fail closed: the failed run is scored as one
            return self._failed(f"{type(exc).__name__}: {exc}")

    def _failed(self, why: str) -> Turn:
        return Turn(version=str(getattr(self.target, "version", "?")), model=str(getattr(self.target, "model", "?")),
                    seed=self.seed, error=why)

    async def aclose(self) -> None:
        return None


class Conversations:
    """The Turns one simulate() call produced, by their user turns; shared by its target,
    user simulator and judge (one persona, one seed)."""

    def __init__(self, target, seed: int, timeout: float | None = None):
        self.agent, self.seed, self.timeout = target, seed, timeout
        self.turns: dict[tuple[str, ...], Turn] = {}  # the Turn after each prefix of user turns
        self.live: dict[tuple[str, ...], object] = {}  # open conversations, by the turns so far
        # What the judge concluded depends on the scenario too: keyed (scenario id, turns).
        self.verdicts: dict[tuple[str, tuple[str, ...]], dict[str, Verdict]] = {}
        self.ended: dict[tuple[str, tuple[str, ...]], str] = {}

    async def run(self, turns: list[str]) -> Turn:
        key = tuple(turns)
        if key not in self.turns:
            # continue the conversation that produced the previous prefix; a new one otherwise
            conv = self.live.pop(key[:-1], None)
            if conv is None:
                opener = getattr(self.agent, "conversation", None)
                conv = opener(self.seed) if opener is not None else Replay(self.agent, self.seed)
                for earlier in turns[:-1]:
                    await conv.ask(earlier, timeout=self.timeout)
            self.turns[key] = await conv.ask(turns[-1], timeout=self.timeout)
            self.live[key] = conv
        return self.turns[key]

    async def aclose(self) -> None:
        """Release every conversation still open on the server (their Turns are kept here):
        the server never evicts a world with writes, so unreleased ones would add up."""
        live, self.live = list(self.live.values()), {}
        for conv in live:
            await conv.aclose()

    def prefixes(self, turns: list[str]) -> list[Turn]:
        return [self.turns[tuple(turns[:k])] for k in range(1, len(turns) + 1)]

    def target(self):
        async def agent(messages) -> str:
            users, _ = split_roles(messages, "assistant")
            turn = await self.run(users)
            if turn.error and not turn.answer:
                return f"[the agent failed: {turn.error}]"
            return turn.answer or "(no answer)"
        return agent


class ScenarioLookup:
    """Find our scenario again from what evaluatorq hands an injected agent."""

    def __init__(self, scenarios: list[ScenarioSpec]):
        self.by_user_context, self.by_judge_context = {}, {}
        for s in scenarios:
            eq = to_scenario(s)
            self.by_user_context[build_scenario_user_context(eq)] = s
            key = self.judge_key(eq.goal, eq.criteria or [], eq.ground_truth or "")
            if key in self.by_judge_context:
                raise DatasetError(f"scenarios {self.by_judge_context[key].id!r} and {s.id!r} have the same goal, "
                                   "expectations and expected_output; make them differ")
            self.by_judge_context[key] = s

    @staticmethod
    def judge_key(goal: str, crit: list[Criterion], ground_truth: str) -> str:
        return json.dumps([goal, ground_truth, [(c.type, c.description) for c in crit]])


class OfflineUser(UsageTracking):
    """evaluatorq user simulator backed by each scenario's offline user (scripted.user_for; no LLM)."""

    name = "OfflineUserSimulator"

    def __init__(self, persona: PersonaSpec, scenarios: list[ScenarioSpec], seed: int):
        self.persona, self.seed = persona, seed
        self._lookup = ScenarioLookup(scenarios)
        self.user = None
        self.reset_usage()

    def update_context(self, *, persona_context: str | None = None, scenario_context: str | None = None) -> None:
        scenario = self._lookup.by_user_context.get(scenario_context or "")
        if scenario is None:
            raise RuntimeError("OfflineUser: evaluatorq passed a scenario this simulator was not built with")
        self.user = user_for(self.persona, scenario, self.seed)

    async def generate_first_message(self, messages=None) -> str:
        decision = self.user.decide([], False)
        if decision.move is None:
            raise RuntimeError(f"OfflineUser: the user stopped before its first message ({decision.ended})")
        return decision.move.text

    async def respond_async(self, messages, *, llm_purpose: str | None = None, **_) -> str:
        # Roles arrive inverted: the agent's answers are 'user' rows here.
        _, answers = split_roles(messages, "user")
        decision = self.user.decide(answers, False)
        if decision.move is None:  # the judge ends the conversation before this; reaching here is a bug
            raise RuntimeError(f"OfflineUser asked to speak after it stopped ({decision.ended})")
        return decision.move.text


class SimJudge(UsageTracking):
    """evaluatorq judge: ends the conversation when the user would, and reports each
    criterion's occurrence from the gate scorer that decides it (convert.criteria)."""

    name = "GateScorerJudge"

    def __init__(self, persona: PersonaSpec, scenarios: list[ScenarioSpec], seed: int, convs: Conversations,
                 evaluators: list[dict], max_turns: int, stop_rule=None):
        self.persona, self.seed, self.convs = persona, seed, convs
        self.evaluators, self.max_turns = evaluators, max_turns
        self.stop_rule = stop_rule  # for an LLM-played user: (scenario, answers, reached) -> reason | None
        self._lookup = ScenarioLookup(scenarios)
        self.scenario: ScenarioSpec | None = None
        self.reset_usage()

    def update_context(self, *, goal: str, criteria: list[Criterion], ground_truth: str) -> None:
        self.scenario = self._lookup.by_judge_context.get(ScenarioLookup.judge_key(goal, criteria, ground_truth))
        if self.scenario is None:
            raise RuntimeError("SimJudge: evaluatorq passed a scenario this judge was not built with")

    def _stop(self, answers: list[str], reached: bool) -> str | None:
        if self.stop_rule is not None:
            return self.stop_rule(self.scenario, answers, reached)
        decision = user_for(self.persona, self.scenario, self.seed).decide(answers, reached)
        return decision.ended if decision.move is None else None

    async def evaluate(self, messages) -> Judgment:
        users, answers = split_roles(messages, "assistant")
        key = tuple(users)
        turn = await self.convs.run(users)  # the target ran these turns already: a cache hit
        check = self.scenario.goal_reached
        reached = goal_reached(check, turn) if check is not None else False
        ended = self._stop(answers, reached) or ("max_turns" if len(users) >= self.max_turns else None)
        if ended is None:
            return Judgment(should_terminate=False, reason="the user goes on", goal_achieved=reached,
                            rules_broken=[], goal_completion_score=float(reached), criteria_verdicts=None)
        self.convs.ended[(self.scenario.id, key)] = ended
        row = conversation_row(self.scenario, users, row_id=self.scenario.id)
        verdicts = await score(row, turn, self.evaluators, check)
        self.convs.verdicts[(self.scenario.id, key)] = verdicts
        audit, broken = [], []
        for i, c in enumerate(criteria(self.scenario)):
            v = verdicts.get(c.evaluator)
            passed = v is None or v.passed is not False  # n/a: nothing to check, so nothing broken
            occurred = passed if c.type == "must_happen" else not passed
            audit.append(CriterionVerdict(criterion_id=f"criteria_{i}", occurred=occurred,
                                          evidence=(v.explanation[:200] if v and occurred else "")))
            if not passed:
                broken.append(f"criteria_{i}")
        why = f"user stopped: {ended}; " + (f"failed: {', '.join(n for n, v in verdicts.items() if v.passed is False)}"
                                           if broken else "every gate scorer passed")
        return Judgment(should_terminate=True, reason=why, goal_achieved=reached, rules_broken=broken,
                        goal_completion_score=float(reached), criteria_verdicts=audit)


class QuietHooks(DefaultHooks):
    """No loguru chatter: our command prints its own summary."""

    async def on_confirm(self, meta) -> bool:
        return True

    async def on_run_start(self, meta) -> None: ...
    async def on_stage_start(self, stage, meta) -> None: ...
    async def on_stage_end(self, stage, meta) -> None: ...
    async def on_generate_inputs_ready(self, num_personas, num_scenarios) -> None: ...
    async def on_datapoint_start(self, datapoint) -> None: ...
    async def on_turn_complete(self, datapoint_id, metrics) -> None: ...
    async def on_datapoint_complete(self, result) -> None: ...
    async def on_evaluator_complete(self, *args, **kwargs) -> None: ...
    async def on_datapoint_error(self, datapoint, exception) -> None: ...
    async def on_run_complete(self, results) -> None: ...
