"""A local OpenAI-compatible chat-completions server for tests (127.0.0.1, no network).

It replays canned completions in order, so the real ChatOpenAI path (HTTP, tool-call
parsing, retries) runs end to end. `fail_first` answers the first N requests with a given
status (e.g. 429) to exercise the client's retries. Every request body is kept.
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def tool_call_completion(calls: list[tuple[str, dict]]) -> dict:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        for i, (name, args) in enumerate(calls)]}


def text_completion(text: str) -> dict:
    return {"role": "assistant", "content": text}


class FakeOpenAI:
    def __init__(self, replies: list[dict], fail_first: int = 0, fail_status: int = 429):
        self.replies = list(replies)
        self.fail_first = fail_first
        self.fail_status = fail_status
        self.fail_body = "slow down"  # error text; a test may make it echo a secret
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                with owner._lock:
                    owner.requests.append(body)
                    owner.headers.append(dict(self.headers))
                    if owner.fail_first > 0:
                        owner.fail_first -= 1
                        self._send(owner.fail_status, {"error": {"message": owner.fail_body, "type": "rate_limit"}},
                                   extra={"retry-after-ms": "10"})
                        return
                    message = owner.replies.pop(0) if owner.replies else text_completion("(no more canned replies)")
                self._send(200, {"id": "cmpl-1", "object": "chat.completion", "created": 0, "model": body.get("model"),
                                 "choices": [{"index": 0, "message": message,
                                              "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
                                 "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}})

            def _send(self, status, payload, extra=None):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in (extra or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
