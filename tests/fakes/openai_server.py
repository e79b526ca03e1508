"""A local OpenAI-compatible chat-completions server for tests (127.0.0.1, no network).

It replays canned completions in order, so the real ChatOpenAI path (HTTP, tool-call
parsing, retries) runs end to end. `fail_first` answers the first N requests with a given
status (e.g. 429) to exercise the client's retries. Every request body is kept.
"""
from __future__ import annotations

import json
import threading

from tests.fakes.local_http import LocalJSONServer


def tool_call_completion(calls: list[tuple[str, dict]]) -> dict:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        for i, (name, args) in enumerate(calls)]}


def text_completion(text: str) -> dict:
    return {"role": "assistant", "content": text}


class FakeOpenAI(LocalJSONServer):
    def __init__(self, replies: list[dict], fail_first: int = 0, fail_status: int = 429):
        self.replies = list(replies)
        self.fail_first = fail_first
        self.fail_status = fail_status
        self.fail_body = "slow down"  # error text; a test may make it echo a secret
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self._lock = threading.Lock()
        super().__init__(self._handle)
        self.url = self.root + "/v1"

    def _handle(self, path: str, headers: dict, body) -> tuple[int, object, dict]:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            if self.fail_first > 0:
                self.fail_first -= 1
                return (self.fail_status, {"error": {"message": self.fail_body, "type": "rate_limit"}},
                        {"retry-after-ms": "10"})
            message = self.replies.pop(0) if self.replies else text_completion("(no more canned replies)")
        return (200, {"id": "cmpl-1", "object": "chat.completion", "created": 0, "model": body.get("model"),
                      "choices": [{"index": 0, "message": message,
                                   "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
                      "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}}, {})
