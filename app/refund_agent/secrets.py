"""Secret scrubbing lives in the evals library (turngate/core/scrubbing.py); the agent uses it from there."""
from turngate.core.scrubbing import scrub, secret_values

__all__ = ["scrub", "secret_values"]
