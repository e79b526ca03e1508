"""Shared types and plumbing every layer may use: the Turn, errors, seeds, secret scrubbing."""
