"""`python evals/report.py`: Northwind's own entry point for `evals report`, run from the repository."""
import _launch

_launch.run("report")
