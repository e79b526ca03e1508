"""The job layer: a Target turns (inputs, seed) into a Turn; the runner, workers and provider calls."""
