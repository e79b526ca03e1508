"""LLM-proposed mutants (`evals mutate --propose N`, operator `llm`): a provider model is asked once
for N plausible one-change edits of the instructions, each replacing one sentence or one policy
line with a new one. The reply is read strictly: an edit whose `before` is not exactly a sentence
or a line of the instructions, whose `after` is empty, spans lines, is too long or changes
nothing, or repeats another, is dropped with the reason (reported, never a crash); the rest
become mutants like the operators' (operators.py).

The call is one chat completion at temperature 0, seed 0, through the provider layer
(turngate.jobs.chat_provider: retries, counts), not counted against --max-model-calls (that budget
is the agent's)."""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any

from turngate.core.errors import ConfigError
from turngate.mutate.classify import changed_part
from turngate.mutate.operators import Mutant, _id, _short, policy_lines, sentences
from turngate.mutate.protocol import Mutable

MAX_AFTER = 400  # characters: a replaced sentence, not a new prompt
MAX_WHY = 80

PROMPT = """You help test an AI agent's evaluation suite. Propose plausible edits of the agent's \
instructions: changes a well-meaning developer might make that alter what the agent does (a rule \
loosened or tightened, a number, unit or condition changed, a sentence reworded so that its meaning shifts).

Propose exactly {n} different edits. Each edit replaces ONE sentence or ONE line of the instructions \
with a new version:
- "before": the sentence or line to replace, copied exactly, character for character (without a leading "- ");
- "after": its replacement, one line, not empty;
- "why": a few words on what the edit changes.

Answer with JSON only, in this form:
{{"edits": [{{"before": "...", "after": "...", "why": "..."}}]}}

The instructions, between the markers:
<<<INSTRUCTIONS
{instructions}
INSTRUCTIONS>>>"""


@dataclass
class Proposal:
    model: str
    asked: int
    mutants: list[Mutant] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # "edit K: why it was dropped"


def sites(text: str) -> dict[str, tuple[int, int, int, str]]:
    """Every replaceable piece of the instructions: each policy line's text and each of its
    sentences -> (start, end, line number, the line's text). A piece found twice is ambiguous: left out."""
    out: dict[str, tuple[int, int, int, str]] = {}
    twice: set[str] = set()
    for pl in policy_lines(text):
        pieces = {(pl.start, pl.end)} | set(sentences(text, pl.start, pl.end))
        for a, b in sorted(pieces):
            piece = text[a:b].strip()
            if piece in out and out[piece][:2] != (a, b):
                twice.add(piece)
            out.setdefault(piece, (a, b, pl.line, pl.text))
    return {k: v for k, v in out.items() if k not in twice}


def _json_object(text: str) -> Any:
    text = re.sub(r"^\s*```(?:json)?\s*|\s*```\s*$", "", text.strip())
    try:
        return json.loads(text)
    except ValueError:
        start, end = text.find("{"), text.rfind("}")
        if start < 0 or end <= start:
            raise ValueError("the reply holds no JSON object") from None
        try:
            return json.loads(text[start:end + 1])
        except ValueError as exc:
            raise ValueError(f"the reply's JSON does not parse ({exc})") from None


def read_edits(reply: str, base: Mutable, asked: int, model: str) -> Proposal:
    """The model's reply -> mutants, and a reason for every edit dropped."""
    got = Proposal(model, asked)
    try:
        data = _json_object(reply)
    except ValueError as exc:
        got.dropped.append(str(exc))
        return got
    edits = data.get("edits") if isinstance(data, dict) else None
    if not isinstance(edits, list):
        got.dropped.append('the reply has no list "edits"')
        return got
    text, known, made = base.instructions, sites(base.instructions), set()
    for k, e in enumerate(edits, 1):
        why = _invalid(e, known, made) if k <= asked else f"more than the {asked} asked for"
        if why:
            got.dropped.append(f"edit {k}: {why}")
            continue
        before, after = e["before"].strip(), " ".join(e["after"].split())
        made.add(before)
        a, b, line, site = known[before]
        reason = " ".join(str(e.get("why") or "").split())[:MAX_WHY]
        old, new = changed_part(before, after)
        got.mutants.append(Mutant(_id("llm", site, f"{before}|{after}"), "llm",
                                  f'line {line}: model edit: "{_short(old)}" -> "{_short(new)}"'
                                  + (f" ({reason})" if reason else ""),
                                  line, _short(site, 90), base.edited(instructions=text[:a] + after + text[b:])))
    return got


def _invalid(e: Any, known: dict, made: set[str]) -> str | None:
    if not isinstance(e, dict):
        return "not an object with before and after"
    before, after = e.get("before"), e.get("after")
    if not isinstance(before, str) or not isinstance(after, str):
        return "before and after must be strings"
    before = before.strip()
    if before not in known:
        return f'before "{_short(before, 50)}" is not exactly one sentence or line of the instructions'
    if "\n" in after.strip() or "\r" in after.strip():
        return "after spans several lines (one sentence or line only)"
    after = " ".join(after.split())
    if not after:
        return "after is empty (deleting is the delete operator's)"
    if len(after) > MAX_AFTER:
        return f"after is longer than {MAX_AFTER} characters"
    if after == " ".join(before.split()):
        return "after is the same as before"
    if before in made:
        return f'a second edit of "{_short(before, 50)}"'
    return None


def chat_for(spec: str, timeout: float):
    """The proposer: openai:<m> (OPENAI_API_KEY, OPENAI_BASE_URL) or orq:<provider/m> (ORQ_API_KEY)."""
    from turngate.jobs.chat_provider import ProviderChatModel
    from turngate.jobs.models import ORQ_ROUTER, parse_spec

    parsed = parse_spec(spec)
    if parsed.provider not in ("openai", "orq"):
        raise ConfigError(f"--proposer {spec}: proposing edits needs a provider model, openai:<m> or orq:<provider/m>")
    key_var = "OPENAI_API_KEY" if parsed.provider == "openai" else "ORQ_API_KEY"
    key = os.environ.get(key_var, "").strip()
    if not key:
        raise ConfigError(f"--proposer {spec}: {key_var} is not set")
    base_url = (os.environ.get("OPENAI_BASE_URL") or None if parsed.provider == "openai"
                else os.environ.get("ORQ_ROUTER_URL") or ORQ_ROUTER)
    options = dict(parsed.options)
    return ProviderChatModel.build(f"{parsed.provider}:{parsed.name}", model=parsed.name, api_key=key,
                                   base_url=base_url, seed=0, temperature=float(options.get("temperature", 0.0)),
                                   retries=2, timeout=timeout, budgeted=False)


def propose(base: Mutable, n: int, spec: str, timeout: float = 120.0, chat=None) -> Proposal:
    """Ask the proposer once for `n` edits of base's instructions. A failed call (no key, the
    network, the provider's error) is a ConfigError: one line, exit 2."""
    from langchain_core.messages import HumanMessage

    chat = chat or chat_for(spec, timeout)
    try:
        reply = chat.invoke([HumanMessage(PROMPT.format(n=n, instructions=base.instructions))])
    except Exception as exc:  # noqa: BLE001  (the provider's own error types: one line, never a traceback)
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise ConfigError(f"--propose: asking {spec} for edits failed: {type(exc).__name__}: {first}") from None
    content = reply.content if isinstance(reply.content, str) else json.dumps(reply.content)
    return read_edits(content, base, n, spec)
