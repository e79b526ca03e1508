"""--redact-results: mask emails, phone, card and IBAN numbers everywhere in a results record,
for teams that keep results files as CI artifacts. Uses the library's own detector
(turngate/core/pii.py), never the agent's redactor: the record must stay clean where the system under
test's redaction is what failed."""
from __future__ import annotations

from typing import Any

from turngate.core import pii


def mask_text(text: str) -> str:
    prepared = pii.prepare(text)  # one character for one: positions hold in the original text
    spans = []
    for finding in pii.find(text):
        start = 0
        while (i := prepared.find(finding.text, start)) != -1:
            spans.append((i, i + len(finding.text), finding.kind))
            start = i + len(finding.text)
    out, end = [], 0
    for a, b, kind in sorted(spans):
        if a < end:
            continue  # inside a span already masked
        out += [text[end:a], f"[{kind}]"]
        end = b
    return "".join(out) + text[end:]


def mask(value: Any) -> Any:
    """A deep copy of value with every string masked (dict keys included)."""
    if isinstance(value, str):
        return mask_text(value)
    if isinstance(value, dict):
        return {mask(k): mask(v) for k, v in value.items()}
    if isinstance(value, list):
        return [mask(v) for v in value]
    return value
