"""Errors that are the user's to fix (bad version, model spec, missing key).

Commands print them as one line and exit 2; they never become a traceback.
"""


class ConfigError(Exception):
    """A setting the user gave cannot be used as it is."""
