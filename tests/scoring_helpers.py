"""Hand-written rows and Turns for scorer tests: the row and Turn formats users write."""
from __future__ import annotations

from turngate.sources.dataset import Row


def row(expect: dict, message: str = "Refund order A-1001 in full.", expected_output: str = "Refunds 129 EUR.",
        **inputs) -> Row:
    data = {"id": "r1", "inputs": {"message": message, "tags": ["refund"], "source": "manual", "expect": expect,
                                   **inputs}, "expected_output": expected_output}
    return Row.model_validate(data)


def call(name: str, result=None, error=None, **arguments) -> dict:
    return {"name": name, "arguments": arguments, "result": result, "error": error}


def turn(answer: str = "Done.", calls=(), writes=(), error=None, user="Refund order A-1001 in full.") -> dict:
    return {"version": "test", "model": "offline", "seed": 0, "answer": answer,
            "messages": [{"role": "user", "content": user}, {"role": "assistant", "content": answer}],
            "tool_calls": list(calls), "writes": list(writes),
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "llm_calls": 1}, "seconds": 0.0, "error": error}


def refund_ok(order_id="A-1001", amount=129.0, ref="W-0001"):
    return (call("refund_order", {"ok": True, "action": "refund", "reference": ref, "order_id": order_id,
                                  "amount": amount}, order_id=order_id, amount=amount),
            {"action": "refund", "order_id": order_id, "amount": amount, "reference": ref})
