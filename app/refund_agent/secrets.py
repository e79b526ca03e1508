"""Secret scrubbing lives in the evals library (evals/core/scrubbing.py); the agent uses it from there."""
from evals.core.scrubbing import scrub, secret_values

__all__ = ["scrub", "secret_values"]
