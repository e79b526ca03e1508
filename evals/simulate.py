"""`python evals/simulate.py`: Northwind's own entry point for `evals simulate`, run from the repository."""
import _launch

_launch.run("simulate")
