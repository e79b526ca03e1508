"""`python evals/merge.py`: Northwind's own entry point for `evals merge`, run from the repository."""
import _launch

_launch.run("merge")
