"""--redact-results: mask emails and phone numbers everywhere in a results record, for
teams that keep results files as CI artifacts."""
from __future__ import annotations

from typing import Any

from app.refund_agent.redact import EMAIL, find_pii


def mask_text(text: str) -> str:
    text = EMAIL.sub("[email]", text)
    for item in find_pii(text):
        if "@" not in item:
            text = text.replace(item, "[phone]")
    return text


def mask(value: Any) -> Any:
    """A deep copy of value with every string masked (dict keys included)."""
    if isinstance(value, str):
        return mask_text(value)
    if isinstance(value, dict):
        return {mask(k): mask(v) for k, v in value.items()}
    if isinstance(value, list):
        return [mask(v) for v in value]
    return value
