"""The offline simulated user of a scenario: the project's registered user it names
(turngate.plugin.register_simulated_user), or the built-in scripted user.

The scripted user says the scenario's `script` in order, one message per agent answer (no
script: it says its goal once), and stops when the goal check holds on the Turn
(`goal_reached`) or its messages run out (`script_done`). Deterministic, no tactics.
"""
from __future__ import annotations

from .hooks import UserDecision, UserMove
from .specs import PersonaSpec, ScenarioSpec, user_of


class ScriptedUser:
    def __init__(self, persona: PersonaSpec, scenario: ScenarioSpec, seed: int):
        self.p, self.s, self.seed = persona, scenario, int(seed)
        self.script = scenario.messages

    def opening(self) -> UserMove:
        return UserMove(self.script[0], "open")

    def decide(self, answers: list[str], goal_reached: bool = False) -> UserDecision:
        if not answers:
            return UserDecision(self.opening())
        if goal_reached:
            return UserDecision(None, "goal_reached")
        if len(answers) >= len(self.script):
            return UserDecision(None, "script_done")
        return UserDecision(UserMove(self.script[len(answers)], "script"))


def user_for(persona: PersonaSpec, scenario: ScenarioSpec, seed: int):
    """The offline user for one conversation: the scenario's project user, or the scripted one."""
    spec = user_of(scenario)
    return ScriptedUser(persona, scenario, seed) if spec is None else spec.factory(persona, scenario, seed)
