"""Northwind's offline policy judge: deterministic checks of the answer and the action trail
against each clause of Northwind's written policy (policy.py), given only what an LLM judge is
given. Registered as `--judge offline` by the plug-in (evals/__init__.py)."""
