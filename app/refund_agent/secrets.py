"""Secret scrubbing lives in the evals library (evals/scrubbing.py); the agent uses it from there."""
from evals.scrubbing import scrub, secret_values

__all__ = ["scrub", "secret_values"]
