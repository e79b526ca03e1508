"""`python evals/calibrate_judge.py`: Northwind's own entry point for `evals calibrate-judge`, run from the repository."""
import _launch

_launch.run("calibrate-judge")
