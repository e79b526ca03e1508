"""`python evals/regression.py`: Northwind's own entry point for `evals gate`, run from the repository."""
import _launch

_launch.run("gate")
