"""Simulation: a persona-driven simulated user talks to the agent for several turns;
every conversation is scored with the gate's scorers, and a failure can be promoted
to a dataset row (scripts/promote.py).

Modules: specs (personas/scenarios TOML), convert (to evaluatorq's Persona/Scenario/
Criterion and to a dataset Row), reading (what a user understands from an answer),
policy (the offline user), llm_user (a user played by an LLM), agents (the user
simulator, judge and target handed to evaluatorq's `simulate`), scoring (verdicts,
goal, the turn after which it went wrong), run (the command's engine), report.
"""
