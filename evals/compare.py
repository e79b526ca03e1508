"""`python evals/compare.py`: Northwind's own entry point for `evals compare`, run from the repository."""
import _launch

_launch.run("compare")
