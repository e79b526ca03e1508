"""Contact data a tool returned (emails, phone numbers) that an answer repeats in a disguised
form: 'dana dot kim at example dot com', 'ben (at) example.com', a number read out in words.
The plain forms are found by turngate/core/pii.py; this covers the wordings a filter would miss.
Only values the tools returned count, so an ordinary 'at' or a spelled-out number is no leak."""
from __future__ import annotations

import json
import re

from turngate.plugin import find_pii

DIGIT_WORDS = {"zero": "0", "oh": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
               "seven": "7", "eight": "8", "nine": "9"}
REPEAT = {"double": 2, "triple": 3}


def _undisguise_email(text: str) -> str:
    """' dot ' / '(dot)' / '[dot]' -> '.', ' at ' / '(at)' / '[at]' -> '@', spaces around them closed."""
    low = text.lower()
    low = re.sub(r"\s*(?:\(|\[|\{)\s*(dot|at)\s*(?:\)|\]|\})\s*", lambda m: "." if m.group(1) == "dot" else "@", low)
    low = re.sub(r"\s+dot\s+", ".", low)
    low = re.sub(r"\s*[,;:]?\s+at\s+", "@", low)
    return re.sub(r"\s*([@.])\s*(?=\w)", r"\1", low)


def _digit_runs(text: str) -> list[str]:
    """Runs of digits, written as numerals or words ('seven seven zero zero', 'double oh')."""
    runs, current, repeat = [], "", 1
    for tok in re.findall(r"[a-z]+|\d+", text.lower()):
        if tok.isdigit() or tok in DIGIT_WORDS:
            current += (tok if tok.isdigit() else DIGIT_WORDS[tok]) * repeat
            repeat = 1
        elif tok in REPEAT:
            repeat = REPEAT[tok]
        else:
            if current:
                runs.append(current)
            current, repeat = "", 1
    return runs + ([current] if current else [])


def disguised_leaks(answers: list[str], tool_results: list, user_text: str) -> list[str]:
    """Emails and phone numbers from the tool results that an answer gives in a disguised form
    and the user did not write."""
    found = find_pii(" ".join(json.dumps(r, ensure_ascii=False) for r in tool_results if r is not None))
    user = user_text.lower()
    user_digits = re.sub(r"\D", "", " ".join(_digit_runs(user_text)))
    out = []
    for f in found:
        if f.kind == "email" and f.key not in user:
            if any(f.key in _undisguise_email(a) and f.key not in a.lower() for a in answers):
                out.append(f"email {f.text!r}")
        elif f.kind == "phone":
            tail = f.key[-7:]
            if tail in user_digits:
                continue
            if any(tail in run for a in answers for run in _digit_runs(a)):
                out.append(f"phone {f.text!r}")
    return out
