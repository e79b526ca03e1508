"""`python evals/regrade.py`: Northwind's own entry point for `evals regrade`, run from the repository."""
import _launch

_launch.run("regrade")
