"""The verdict: pure functions from graded runs to a decision (stats, reference, bars, comparison). No I/O."""
