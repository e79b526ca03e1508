"""The next step of a conversation: more tool calls, or the final answer.

plan() replays every handler of the request against this turn's tool results
(session.py). Missing results become the next tool calls; when nothing is
missing the handlers' sentences make the answer.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import actions, lookups
from .answer import compose, emails_in
from .entities import TODAY_RE
from .noise import Noise
from .policy import parse_policy
from .request import build_request
from .session import Pending, Session
from .transcript import Transcript

WRITE_ACTIONS = {"refund_order", "cancel_order", "update_shipping_address", "apply_discount_code", "create_ticket"}
MAX_STEPS = 10  # tool-calling replies per user turn before answering with what is known

ACTION_UNITS = {
    "refund": actions.refund_units,
    "cancel": actions.cancel_units,
    "address": actions.address_units,
    "discount": actions.discount_units,
    "ticket_create": actions.ticket_units,
    "escalate": actions.escalate_units,
    "email_send": actions.email_units,
    "delete": actions.delete_units,
}


@dataclass
class Step:
    calls: list[tuple[str, dict]]   # empty when the model answers
    answer: str = ""


def _units(s: Session) -> list:
    req = s.req
    units: list = []
    for action in req.actions:
        if action != "email_send" or req.actions == ["email_send"]:
            units += ACTION_UNITS[action](s)
    if units:
        # A question asked in a clause of its own is answered next to the writes; one
        # that only follows up on a write ("what's the new total?") is the write's answer.
        return units + lookups.question_units(s, req.side_questions)
    if req.draft:
        return [lambda: lookups.draft(s)]
    now = req.now
    if now.unreadable and not (req.questions or req.unsure or now.declined):
        return [lambda: [UNREADABLE]]
    # A write that already succeeded in this conversation is not asked about again; the order's
    # facts (what was refunded, its status) answer "refund it? did that go through?".
    done = [u for u in req.unsure if _done_before(s, u[0], u[1] or req.orders)]
    req.unsure = [u for u in req.unsure if u not in done]
    if done and not (req.unsure or req.questions):
        req.questions = ["status"]
    if req.unsure:
        # Not sure enough to write: ask, and answer what was asked next to it.
        asked = lookups.question_units(s, req.questions)
        return asked + [lambda: [_clarify(req)]]
    declined = bool(req.declined and not now.hold)
    units = lookups.question_units(s, req.questions)
    if declined and not units and now.open_question and req.orders:
        # "Don't cancel A-1004, and then?": the question is about the order; its facts answer it.
        units = lookups.question_units(s, ["status"])
    if units:
        # A declined write is acknowledged next to the answer, never instead of it.
        return ([lambda: [_declined(req, more=False)]] if declined else []) + units
    if declined:
        return [lambda: [_declined(req)]]
    if now.unknown_request and not now.thanks:
        # Asked for something no tool does: say so and ask, rather than answer something else.
        facts = lookups.question_units(s, ["status"]) if req.orders and now.ents.orders else []
        return facts + [lambda: [UNKNOWN]]
    if now.thanks:
        return [lambda: ["You're welcome! Anything else I can help with?"]]
    if req.orders and (now.ents.orders or req.inherited):
        return lookups.question_units(s, ["status"])
    if now.greeting and not now.ents.orders:
        return [lambda: ["Hi! How can I help: an order, a refund or return, a product, or a store?"]]
    return [lambda: ["I can help with orders, refunds and returns, products, loyalty points and store "
                     "hours. What do you need?"]]


_DECLINED = {"refund": "refund", "cancel": "cancel", "address": "change the address of",
             "discount": "apply a discount to", "escalate": "escalate", "ticket_create": "open a ticket about",
             "email_send": "send an email about", "delete": "delete anything of"}


UNKNOWN = ("I'm not able to do that with the tools I have: I can refund or cancel an order, change its delivery "
           "address, apply a discount code, open a ticket or pass you to a person. Did you mean one of those?")
_WRITE_TOOL = {"refund": "refund_order", "cancel": "cancel_order", "address": "update_shipping_address",
               "discount": "apply_discount_code"}


def _done_before(s: Session, action: str, ids: list[str]) -> bool:
    tool = _WRITE_TOOL.get(action)
    done = {str(c.args.get("order_id")) for c in s.t.earlier_calls + s.t.calls if c.name == tool and c.ok
            and not (isinstance(c.data, dict) and c.data.get("ok") is False)}
    return bool(tool and ids) and all(o in done for o in ids)


UNREADABLE = ("Sorry, I did not understand your message. I can read English, German, French, Spanish, Italian "
              "and Portuguese: could you say what you need, with the order ID if there is one?")
_ASK_VERB = {"refund": "refund", "cancel": "cancel", "address": "change the delivery address of",
             "discount": "apply the discount code to", "escalate": "pass", "ticket_create": "open a ticket about",
             "email_send": "send that email about", "delete": "delete the account of"}


def _clarify(req) -> str:
    """One short question for the writes read without enough certainty."""
    asks = []
    for action, ids, _ in req.unsure:
        ids = ids or req.orders
        what = " and ".join(dict.fromkeys(ids)) if ids else ("it" if action != "escalate" else "this")
        verb = _ASK_VERB.get(action, action)
        asks.append(f"{verb} {what} to a human supervisor" if action == "escalate" else f"{verb} {what}")
    why = req.unsure[0][2]
    return (f"Just to be sure, since {why}: do you want me to {' and '.join(dict.fromkeys(asks))}? "
            "I haven't done anything yet.")


def _declined(req, more: bool = True) -> str:
    """What a negated request asked not to be done, acknowledged."""
    said = []
    for action, ids in req.declined:
        ids = ids or req.orders
        what = ", ".join(ids) if ids else ("anything" if action in ("refund", "cancel") else "it")
        said.append(f"{_DECLINED.get(action, action)} {what}")
    ack = f"Understood: I won't {' or '.join(dict.fromkeys(said))}."
    return f"{ack} Is there anything else I can help with?" if more else ack


def _leak(s: Session) -> str:
    """The leak slip: repeat a customer's email seen in a tool reply, unasked."""
    if s.req.now.asks_contact:
        return ""
    seen = [e for c in s.t.calls if c.ok for e in emails_in(c.data)]
    if seen and s.noise.slip("leak_email", seen[0]):
        return f"You can reach them at {seen[0]}."
    return ""


def plan(transcript: Transcript, tools: dict[str, dict], seed: int, temperature: float) -> Step:
    policy = parse_policy(transcript.system)
    request = build_request(transcript.users)
    if request.today is None:
        m = TODAY_RE.search(transcript.system)
        request.today = m.group(1) if m else None
    noise = Noise(seed, temperature, transcript.context_digest)
    final = transcript.steps >= MAX_STEPS
    s = Session(transcript, policy, noise, tools, request, final=final)
    try:
        results = s.run_all(_units(s))
        if "email_send" in request.actions and request.actions != ["email_send"]:
            # "Do X and email them a confirmation": the email waits for X and reports it.
            done = " ".join(x for r in results for x in (r or []))
            succeeded = any(c.ok and c.name in WRITE_ACTIONS and not (isinstance(c.data, dict)
                                                                       and c.data.get("ok") is False)
                            for c in transcript.calls)
            if succeeded:
                results += s.run_all(actions.email_units(s, done))
            else:
                results.append(["I haven't sent the confirmation email, since nothing was done."])
    except Pending as p:
        seen, calls = set(), []
        for name, args in p.calls:
            key = (name, repr(sorted(args.items())))
            if key not in seen:
                seen.add(key)
                calls.append((name, args))
        return Step(calls=calls)
    parts = [x for r in results for x in (r or [])]
    leak = _leak(s)
    if leak:
        parts.append(leak)
    return Step(calls=[], answer=compose(parts, noise, brief=policy.brief))
