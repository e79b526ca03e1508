"""Argument validation for the Northwind tools: the annotated types on the tool
signatures (pydantic checks them before a tool runs, and they show in the JSON
schema the model reads), the same checks for code that calls World directly, and a
middleware that turns validation failures into one short ToolError line.

Errors never echo an argument whole: `quote` keeps a short prefix, so a 10 MB id
gives a one-line error, not a 10 MB one.
"""
from __future__ import annotations

import logging
import math
from typing import Annotated, Any

from fastmcp.exceptions import NotFoundError, ToolError
from fastmcp.exceptions import ValidationError as ArgumentsError
from fastmcp.server.middleware import Middleware
from pydantic import AfterValidator, Field
from pydantic import ValidationError as PydanticError

# Limits: ids, names, codes and search terms are short; addresses and free text
# (subjects, reasons) a paragraph; an email body a few pages. Money is bounded so
# that conversions and tax stay finite (1e308 * 1.27 is inf).
MAX_ID = 200
MAX_TEXT = 2000
MAX_BODY = 10_000
MAX_AMOUNT = 1e9
QUOTE_CHARS = 40
MAX_REPORTED = 3  # argument errors named in one message

# The limits are enforced by validators that leave the tools' JSON schemas as the
# seed wrote them: every schema keyword is prompt text a model pays for on every call
# (maxLength/minLength/enum on all 22 tools measured +14% prompt tokens per call).


def _limited(limit: int, *, allow_empty: bool = False) -> AfterValidator:
    def check(value: str) -> str:
        if len(value) > limit:
            raise ValueError(f"at most {limit} characters allowed, got {len(value)}")
        if not allow_empty and not value.strip():
            raise ValueError("must not be empty")
        return value
    return AfterValidator(check)


def _one_of(*allowed: str) -> AfterValidator:
    def check(value: str) -> str:
        if value not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}")
        return value
    return AfterValidator(check)


def _amount(*, zero_ok: bool) -> AfterValidator:
    def check(value: float) -> float:
        if value < 0 or (value == 0 and not zero_ok):
            raise ValueError(f"must be {'zero or more' if zero_ok else 'greater than 0'}")
        if value > MAX_AMOUNT:
            raise ValueError(f"must be at most {MAX_AMOUNT:g}")
        return value
    return AfterValidator(check)


_STRICT = Field(strict=True)  # a string is a JSON string: no numbers or bools coerced
OrderId = Annotated[str, _STRICT, _limited(MAX_ID)]
CustomerId = Annotated[str, _STRICT, _limited(MAX_ID)]
Sku = Annotated[str, _STRICT, _limited(MAX_ID)]
Code = Annotated[str, _STRICT, _limited(MAX_ID)]
Currency = Annotated[str, _STRICT, _limited(MAX_ID)]
CountryCode = Annotated[str, _STRICT, _limited(MAX_ID)]
City = Annotated[str, _STRICT, _limited(MAX_ID)]
Query = Annotated[str, _STRICT, _limited(MAX_ID, allow_empty=True)]  # "" lists everything
Address = Annotated[str, _STRICT, _limited(MAX_TEXT)]
Subject = Annotated[str, _STRICT, _limited(MAX_TEXT)]
Reason = Annotated[str, _STRICT, _limited(MAX_TEXT)]
Body = Annotated[str, _STRICT, _limited(MAX_BODY)]
OptionalOrderId = Annotated[str, _STRICT, _limited(MAX_ID, allow_empty=True)]  # "" = no order
Priority = Annotated[str, _STRICT, _one_of("low", "normal", "high")]
# strict: a JSON number only (true is not 1.0, "NaN" is not a number); finite; bounded
# so that conversions and tax stay finite too.
_NUMBER = Field(strict=True, allow_inf_nan=False)
Amount = Annotated[float, _NUMBER, _amount(zero_ok=False)]
AnyAmount = Annotated[float, _NUMBER, _amount(zero_ok=True)]


def clip(value: Any) -> str:
    """At most QUOTE_CHARS characters of a value (strings as they are, else repr),
    for error messages."""
    text = value if isinstance(value, str) else repr(value)
    return text[:QUOTE_CHARS] + "…" if len(text) > QUOTE_CHARS else text


def quote(value: Any) -> str:
    """clip(value), quoted when it is a string."""
    return repr(clip(value)) if isinstance(value, str) else clip(value)


def amount_in_cents(value: Any, what: str = "amount") -> float:
    """A positive, finite money amount rounded to cents, or a ToolError. For callers
    that reach World without the tool signature's validation."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise tool_error(f"{what} must be a number, got {quote(value)}.")
    if not math.isfinite(value):
        raise tool_error(f"{what} must be a finite number, got {quote(value)}.")
    if value > MAX_AMOUNT:
        raise tool_error(f"{what} {quote(value)} is too large.")
    cents = round(float(value), 2)
    if cents <= 0:
        raise tool_error(f"{what} must be positive, got {quote(value)}.")
    return cents


def text(value: Any, what: str, limit: int = MAX_TEXT, *, allow_empty: bool = False) -> str:
    """A string argument within its length limit, or a ToolError."""
    if not isinstance(value, str):
        raise tool_error(f"{what} must be a string, got {quote(value)}.")
    if len(value) > limit:
        raise tool_error(f"{what} is too long ({len(value)} characters; at most {limit}): {quote(value)}.")
    if not allow_empty and not value.strip():
        raise tool_error(f"{what} must not be empty.")
    return value


def tool_error(message: str) -> ToolError:
    # Model-caused errors are expected (evals provoke them on purpose): log them at
    # DEBUG so a benchmark's stderr is not flooded with "Error calling tool" lines.
    return ToolError(message, log_level=logging.DEBUG)


def describe(error: PydanticError, tool: str) -> str:
    """One line per bad argument: which, why, and a short prefix of what was sent."""
    errors = error.errors(include_url=False)
    parts = []
    for e in errors[:MAX_REPORTED]:
        where = clip(".".join(str(p) for p in e["loc"]) or "arguments")  # a key can be huge too
        got = "" if e["type"] in ("missing", "missing_argument") else f" (got {quote(e['input'])})"
        parts.append(f"{where}: {e['msg'].removeprefix('Value error, ')}{got}")
    if len(errors) > MAX_REPORTED:
        parts.append(f"and {len(errors) - MAX_REPORTED} more")
    return f"Invalid arguments for {clip(tool)}: " + "; ".join(parts) + "."


class ArgumentErrors(Middleware):
    """Validation failures and unknown tools as short ToolErrors: the model reads
    them (they pass mask_error_details), and no error carries a whole argument."""

    async def on_call_tool(self, context, call_next):
        name = context.message.name
        try:
            return await call_next(context)
        except ArgumentsError as exc:
            cause = exc.__cause__
            if isinstance(cause, PydanticError):
                raise tool_error(describe(cause, name)) from None
            raise tool_error(f"Invalid arguments for {clip(name)}.") from None
        except NotFoundError:
            raise tool_error(f"Unknown tool: {quote(name)}.") from None
