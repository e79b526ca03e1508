"""Simulation: a persona-driven simulated user talks to the agent for several turns;
every conversation is scored with the gate's scorers, and a failure can be promoted
to a dataset row (scripts/promote.py).

Nothing here knows the agent under test: the project brings its simulated user and goal
checks through turngate.plugin (register_simulated_user, register_goal_check); without one,
the built-in scripted user says each scenario's script.

Modules: hooks (what a project registers), specs (personas/scenarios TOML), convert (to
evaluatorq's Persona/Scenario/Criterion and to a dataset Row), scripted (the built-in user,
and which user a scenario gets), llm_user (a user played by an LLM), agents (the user
simulator, judge and target handed to evaluatorq's `simulate`), scoring (verdicts, goal,
the turn after which it went wrong), run (the command's engine), report.
"""
