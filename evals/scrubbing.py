"""Keep API keys out of anything we write: Turn errors, results files, logs, reports.
(Here, not in the agent: the library scrubs whatever agent it runs.)"""
from __future__ import annotations

import os
import re

_SECRET_VARS = re.compile(r"(API_KEY|TOKEN|SECRET)$")


def secret_values() -> list[str]:
    return sorted((v for k, v in os.environ.items() if _SECRET_VARS.search(k) and len(v) >= 8),
                  key=len, reverse=True)


def scrub(text: str, values: list[str] | None = None) -> str:
    """Replace every secret env value (and bearer tokens) in text. Pass `values` (from
    secret_values()) when scrubbing many texts at once: reading the environment is the cost."""
    for value in secret_values() if values is None else values:
        text = text.replace(value, "[secret]")
    return re.sub(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}", r"\1[secret]", text)
