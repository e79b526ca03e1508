"""Errors that are the user's to fix (bad version, model spec, missing key).

Commands print them as one line and exit 2; they never become a traceback.
"""


class ConfigError(Exception):
    """A setting the user gave cannot be used as it is."""


class DatasetError(ValueError):
    """A dataset problem, as one line: '<where>: <what is wrong>'."""


class RecordError(Exception):
    """A results file that cannot be read as a results record."""
