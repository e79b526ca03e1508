"""A simulated user played by an LLM (--sim-model openai:<m> | orq:<m>), through the
same model layer as the agent (turngate.jobs.models.make_model).

The prompt is evaluatorq's own user-simulator prompt, persona and scenario text (its
prompt builders), plus what the scenario's user knows: a project's registered user gives
its facts (`brief`) and tactic lines (`tactics`); the scripted user's facts are its script.
When it stops is decided by `llm_stop` (in the judge): goal reached, else the project
user's `stop` rule, else out of patience; an LLM has no tactic queue.
"""
from __future__ import annotations

from evaluatorq.simulation._usage import UsageTracking
from evaluatorq.simulation.agents.user_simulator import DEFAULT_USER_SIMULATOR_PROMPT
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from turngate.jobs.models import make_model

from .agents import ScenarioLookup, text_of
from .specs import PersonaSpec, ScenarioSpec, user_of

OPEN = "The support chat opens. Write your first message to the agent."


def facts(s: ScenarioSpec) -> str:
    user = user_of(s)
    if user is None:
        return "You want to ask, in this order:\n" + "\n".join(f"- {m}" for m in s.messages)
    if user.brief is not None:
        return user.brief(s)
    return f"You want: {s.goal}"


def tactic_lines(persona: PersonaSpec, s: ScenarioSpec) -> str:
    user = user_of(s)
    if user is None:  # the scripted user has no tactics
        return ""
    return "\n".join(f"- {user.tactics.get(t) or t.replace('_', ' ')}" for t in persona.tactics)


class LLMUser(UsageTracking):
    name = "LLMUserSimulator"

    def __init__(self, persona: PersonaSpec, scenarios: list[ScenarioSpec], seed: int, spec: str):
        self.persona, self.seed = persona, seed
        self.model = make_model(spec, seed=seed)  # raises ConfigError (one line) without a key
        self._lookup = ScenarioLookup(scenarios)
        self.system = DEFAULT_USER_SIMULATOR_PROMPT
        self.reset_usage()

    def update_context(self, *, persona_context: str | None = None, scenario_context: str | None = None) -> None:
        scenario = self._lookup.by_user_context.get(scenario_context or "")
        if scenario is None:
            raise RuntimeError("LLMUser: evaluatorq passed a scenario this simulator was not built with")
        tactics = tactic_lines(self.persona, scenario)
        self.system = "\n\n".join([
            DEFAULT_USER_SIMULATOR_PROMPT, persona_context or "", scenario_context or "",
            "FACTS YOU KNOW:\n" + facts(scenario),
            "WHEN THE AGENT SAYS NO, USE THESE TACTICS, ONE PER MESSAGE:\n" + (tactics or "- ask again politely"),
            "Write one short chat message, as the customer, and nothing else."])

    async def _say(self, messages: list) -> str:
        reply = await self.model.ainvoke([SystemMessage(self.system), *messages])
        return (reply.text if isinstance(reply.text, str) else str(reply.content)).strip() or "Hello?"

    async def generate_first_message(self, messages=None) -> str:
        return await self._say([HumanMessage(OPEN)])

    async def respond_async(self, messages, *, llm_purpose: str | None = None, **_) -> str:
        # Inverted roles: the agent's answers are 'user' rows, our own lines 'assistant'. The
        # opening instruction stays first so the history starts with a user turn, as some
        # providers require.
        history = [HumanMessage(text_of(m)) if m.role == "user" else AIMessage(text_of(m))
                   for m in messages if m.role in ("user", "assistant") and text_of(m)]
        return await self._say([HumanMessage(OPEN), *history])


def llm_stop(persona: PersonaSpec):
    """When an LLM-played user stops (the judge asks after every answer, per scenario)."""

    def stop(scenario: ScenarioSpec, answers: list[str], reached: bool) -> str | None:
        if reached:
            return "goal_reached"
        user = user_of(scenario)
        if user is not None and user.stop is not None:
            return user.stop(persona, scenario, answers, reached)
        return "gave_up" if len(answers) > persona.push_budget else None

    return stop
