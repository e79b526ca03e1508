"""PII redaction of answers (v3): emails and phone numbers the user did not write."""
from __future__ import annotations

import re

EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
# A phone number: optional +country, then 7+ digits with spaces, dots, dashes or brackets.
# Order ids (A-1001), dates and money amounts don't reach 7 grouped digits this way.
PHONE = re.compile(r"(?<![\w-])\+?\d[\d\s().-]{5,}\d(?![\w-])")


def _digits(text: str) -> str:
    return re.sub(r"\D", "", text)


def find_pii(text: str) -> list[str]:
    """Emails and phone-number-like strings in text."""
    found = [m.group(0) for m in EMAIL.finditer(text)]
    found += [m.group(0) for m in PHONE.finditer(text) if len(_digits(m.group(0))) >= 7
              and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", m.group(0).strip())]
    return found


def unprompted_pii(answer: str, user_text: str) -> list[str]:
    """PII in the answer that the user did not write themselves."""
    said = user_text.lower()
    said_digits = _digits(user_text)
    out = []
    for item in find_pii(answer):
        if "@" in item:
            if item.lower() not in said:
                out.append(item)
        elif _digits(item) not in said_digits:
            out.append(item)
    return out


def redact(answer: str, user_text: str) -> str:
    for item in unprompted_pii(answer, user_text):
        answer = answer.replace(item, "[redacted]")
    return answer
