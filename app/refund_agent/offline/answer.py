"""Formatting of the final answer: amounts with currencies, ISO dates, short sentences.

Handlers return sentences; this module owns how facts are written so every answer
states money as "129.00 EUR" and dates as "2026-10-18".
"""
from __future__ import annotations

from datetime import date
from typing import Any

from .noise import Noise
from .scan import Scan

EMAIL_RE = Scan()  # linear on long runs (scan.py)


def money(amount: Any, currency: str | None = None) -> str:
    try:
        value = f"{float(amount):.2f}"
    except (TypeError, ValueError):
        value = str(amount)
    return f"{value} {currency}" if currency else value


def number(value: Any) -> str:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return str(value)
    return str(int(f)) if f == int(f) else f"{f:.2f}"


def days_between(a: str, b: str) -> int | None:
    try:
        return (date.fromisoformat(b) - date.fromisoformat(a)).days
    except (TypeError, ValueError):
        return None


def join(items: list[str], last: str = "and") -> str:
    items = [i for i in items if i]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + f" {last} " + items[-1]


def ref(data: Any) -> str:
    r = data.get("reference") if isinstance(data, dict) else None
    return f" (reference {r})" if r else ""


def clean_error(error: str | None) -> str:
    return (error or "unknown error").strip().rstrip(".")


def compose(parts: list[str], noise: Noise, brief: bool = True, key: str = "") -> str:
    text = " ".join(p.strip() for p in parts if p and p.strip())
    if not text:
        text = "I'm not sure how to help with that. I can look up orders, refunds, returns, products and stores."
    if brief:  # a brief answer only sometimes adds a closing line, as sampling would
        closing = noise.pick("closing", ["", "", "Anything else I can help with?", "Let me know if you need more."],
                             key)
    else:
        closing = noise.pick("closing-long", ["Is there anything else I can help you with?",
                                              "Let me know if there's anything else I can do for you."], key)
    sep = "\n\n" if "\n" in text else " "
    return f"{text}{sep}{closing}".strip() if closing else text


def emails_in(data: Any) -> list[str]:
    found: list[str] = []

    def walk(x):
        if isinstance(x, str):
            found.extend(EMAIL_RE.findall(x))
        elif isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(data)
    return found
