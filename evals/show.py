"""`python evals/show.py`: Northwind's own entry point for `evals show`, run from the repository."""
import _launch

_launch.run("show")
