"""A tiny FAQ bot: about the smallest agent the gate can run.

One tool, `search_faq`, over an in-module FAQ; no server, no model, deterministic. It is a
turngate Target as it stands: `async target(inputs, seed) -> Turn`, named by its import path:

    evals gate --agent examples.faq_bot:target \\
        --dataset examples/faq_bot/dataset.jsonl --thresholds examples/faq_bot/thresholds.toml

It is mutable too (`evals mutate --agent examples.faq_bot:target ...`, docs/mutate.md): its FAQ
is the text the edits change, one entry a line, and `greet` (small talk answered without a
search) its one switch.

`broken_target` is the same bot with a regression (it answers from memory instead of
searching, and gets facts wrong); the same command with it exits 1. It imports only the public
plug-in API (turngate.plugin), so this file works as it stands as a project's own
`app/agent.py` (tests/test_standalone.py gates it that way, through the installed wheel).
"""
from __future__ import annotations

import re
from typing import Any

from turngate.plugin import Message, ToolCall, Turn, user_turns

FAQ = {
    "returns": ("How long do I have to return an item?",
                "You can return an item within 30 days of delivery for a full refund."),
    "shipping": ("How long does shipping take?",
                 "Standard shipping takes 3 to 5 business days; express takes 1 business day."),
    "hours": ("When is support open?", "Support is open Monday to Friday, 9:00 to 17:00 CET."),
    "warranty": ("Is there a warranty?", "Every product has a 2-year warranty against defects."),
    "payment": ("Which payment methods do you accept?", "We accept credit cards, PayPal and bank transfer."),
    "password": ("How do I reset my password?",
                 "Use 'Forgot password' on the sign-in page; the reset link is valid for 24 hours."),
    "cancel": ("Can I cancel an order?", "Orders can be cancelled until they ship, from your account page."),
    "international": ("Do you ship abroad?", "We ship to every EU country; outside the EU we do not ship yet."),
}
_STOP = {"a", "an", "the", "i", "my", "do", "you", "is", "to", "can", "how", "what", "of", "for", "it",
         "and", "or", "in", "on", "does", "there", "your", "me", "when", "which", "long", "much", "have"}
_SMALLTALK = {"hi", "hello", "hey", "thanks", "thank", "bye", "goodbye", "that", "all", "s", "ok", "great", "there"}


def _words(text: str) -> set[str]:
    words = set(re.findall(r"[a-z]+", text.lower())) - _STOP
    return words | {w[:-1] for w in words if w.endswith("s") and len(w) > 3}  # "returns" ~ "return"


def search_faq(query: str, faq: dict | None = None) -> list[dict[str, str]]:
    """The tool: FAQ entries sharing a content word with the query, best first (at most 2)."""
    q = _words(query)
    scored = []
    for key, (question, answer) in (FAQ if faq is None else faq).items():
        score = 2 * len(q & (_words(question) | {key})) + len(q & _words(answer))  # the question weighs more
        if score:
            scored.append((-score, key, {"id": key, "question": question, "answer": answer}))
    return [entry for *_, entry in sorted(scored)[:2]]


def _reply(text: str, calls: list[ToolCall], faq: dict | None = None, greet: bool = True) -> str:
    if greet and not _words(text) - _SMALLTALK:  # nothing to look up
        return "You're welcome! Anything else about our shop?" if "thank" in text.lower() else "Hello! Ask me anything about our shop."
    hits = search_faq(text, faq)
    calls.append(ToolCall(name="search_faq", arguments={"query": text}, result={"ok": True, "results": hits}))
    if not hits:
        return "I could not find that in our FAQ; a colleague from support will follow up."
    return hits[0]["answer"]


async def target(inputs: dict[str, Any], seed: int) -> Turn:
    """One conversation: each user message is answered from the best FAQ hit."""
    messages, calls = [], []
    for text in user_turns(inputs):
        messages += [Message(role="user", content=text), Message(role="assistant", content=_reply(text, calls))]
    return Turn(version="faq-bot", model="rules", seed=seed, answer=messages[-1].content, messages=messages,
                tool_calls=calls)


target.name = "faq-bot"
target.model = "rules"
target.tool_names = frozenset({"search_faq"})


# --- mutable (turngate/mutate/protocol.py): the FAQ as text, one "- [id] question? answer" a line
def faq_text(faq: dict) -> str:
    return "FAQ:\n" + "\n".join(f"- [{key}] {q} {a}" for key, (q, a) in faq.items())


def parse_faq(text: str) -> dict:
    """A line an edit broke (its [id] gone) is no entry: the bot no longer knows it."""
    found = (re.match(r"- \[(\w+)\]\s*(?:(.*?\?)\s+)?(.*)$", line.strip()) for line in text.splitlines())
    return {m[1]: (m[2] or "", m[3]) for m in found if m}


def _mutable():
    from turngate.plugin import Mutable  # on first use: the bot itself runs on a turngate without it

    return Mutable(instructions=faq_text(FAQ), switches={"greet": True})


def _mutant(edited, label: str):
    faq, greet = parse_faq(edited.instructions), edited.switches.get("greet", True)

    async def mutant(inputs: dict[str, Any], seed: int) -> Turn:
        messages, calls = [], []
        for text in user_turns(inputs):
            messages += [Message(role="user", content=text),
                         Message(role="assistant", content=_reply(text, calls, faq, greet))]
        return Turn(version=label, model="rules", seed=seed, answer=messages[-1].content, messages=messages,
                    tool_calls=calls)

    mutant.name = mutant.version = label
    mutant.model = "rules"
    mutant.tool_names = target.tool_names
    return mutant


target.mutable = _mutable
target.mutant = _mutant


async def broken_target(inputs: dict[str, Any], seed: int) -> Turn:
    """A regression: answers from memory (no search) and gets the return window wrong."""
    turns = user_turns(inputs)
    answer = "Returns are accepted within 14 days. For anything else, mail help@example.com."
    messages = [m for t in turns for m in (Message(role="user", content=t), Message(role="assistant", content=answer))]
    return Turn(version="faq-bot-broken", model="rules", seed=seed, answer=answer, messages=messages)


broken_target.name = "faq-bot-broken"
broken_target.tool_names = frozenset({"search_faq"})
