"""`python evals/calibrate.py`: Northwind's own entry point for `evals calibrate`, run from the repository."""
import _launch

_launch.run("calibrate")
