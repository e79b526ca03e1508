"""`python -m app.refund_agent.serve`: the offline model behind an OpenAI-compatible endpoint,
with a hosted provider's limits, so the real-model path (HTTP, 429s, 5xx, latency) can be
exercised and measured without a key or a network.

    python -m app.refund_agent.serve [--host 127.0.0.1] [--port 8000] [--rpm N] [--tpm N]
        [--latency 300ms] [--jitter 0.2] [--error-rate 0.02] [--seed S] [--die-after N]

Models (GET /v1/models): `offline` (the agent's offline model) and `offline-judge` (answers the
LLM judge's prompt with the offline judge's verdict). POST /v1/chat/completions takes messages
(system, user, assistant with tool_calls, tool), `tools`, `tool_choice` ("none" withholds the
tools, a named function offers only that one), `seed` (default 0) and `temperature` (default:
the offline model's own, 0.25), and answers with tool calls or text and usage counts. The
same messages, tools, seed and temperature give the same reply as the in-process model.

Limits as a provider enforces them: --rpm/--tpm token buckets per model (429 with Retry-After,
retry-after-ms and x-ratelimit-* headers), --error-rate answers that share of admitted requests
500 or 503, --latency/--jitter delay each answer. --die-after N exits at once when request N+1
arrives (a server killed mid-run, for tests). One line `serving on http://HOST:PORT/v1` on
stdout when ready; --port 0 picks a free port.

It stays responsive: the offline model runs in --workers processes plus one kept for bodies up
to 64 KiB (serve_workers.py; never on the event loop, so GET /v1/models and small requests
answer while huge messages are worked on), a client that disconnects has its work stopped, a
body over 4 MiB (MAX_BODY_BYTES, the documented limit) gets a 413 JSON error and one nested
deeper than 64 gets 400 before anything parses it, every error (404 and 405 included) has an
OpenAI-style JSON body, and SIGTERM stops it within about a second even with model work in flight.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import socket
import sys
from dataclasses import dataclass
from itertools import accumulate

from .serve_workers import ClientGone, Workers

MODELS = ("offline", "offline-judge")
MAX_BODY_BYTES = 4 * 1024 * 1024  # a long agent conversation is tens of KB
MAX_DRAIN_BYTES = 256 * 1024 * 1024  # read (and drop) this much of a too-big body so its client sees the 413
MAX_NESTING = 64  # the deepest OpenAI request (tool schemas) nests about 10
SHUTDOWN_GRACE_S = 1.0  # after SIGTERM, requests still running get this long, then are cancelled

_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = [0] * 256
_STEP[ord("[")] = _STEP[ord("{")] = 1
_STEP[ord("]")] = _STEP[ord("}")] = -1


def nesting(body: bytes) -> int:
    """How deep the arrays and objects of a JSON text nest, without parsing it (so without
    recursion): strings dropped, brackets kept, the deepest running count. C-speed loops only."""
    brackets = _JSON_STRING.sub(b"", body).translate(None, _NOT_BRACKETS)
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


class BodyTooLarge(Exception):
    pass


async def read_body(request, limit: int) -> bytes:
    """The request body, or BodyTooLarge once it passes `limit` bytes. The rest is read and
    dropped (up to MAX_DRAIN_BYTES), so a client that sends its whole body before reading
    the answer gets the 413 rather than a reset connection."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_DRAIN_BYTES:
        raise BodyTooLarge
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_DRAIN_BYTES:
            break
        if size <= limit:
            chunks.append(chunk)
    if size > limit:
        raise BodyTooLarge
    return b"".join(chunks)


def model_work(kind: str, body: dict) -> dict:
    """One chat completion (kind "chat") or judge verdict ("judge"): what a worker runs."""
    from .serve_chat import complete, judge

    return asyncio.run((judge if kind == "judge" else complete)(body))


async def client_gone(receive) -> None:
    """Returns when the client disconnects. After the body, an ASGI server's next message for
    the request is its disconnect."""
    while (await receive())["type"] != "http.disconnect":
        pass


@dataclass
class Options:
    host: str = "127.0.0.1"
    port: int = 8000
    rpm: float | None = None
    tpm: float | None = None
    burst: float = 1.0
    latency: float = 0.0
    jitter: float = 0.0
    error_rate: float = 0.0
    seed: int = 0
    die_after: int | None = None
    log_requests: bool = False
    workers: int = 0  # model processes; 0: a thread of this process (in-process tests)
    reserved: int = 1  # more model processes, for bodies up to serve_workers.SMALL_BODY_BYTES only
    max_body: int = MAX_BODY_BYTES


def _error(status: int, message: str, kind: str, code: str | None = None, headers: dict | None = None):
    from starlette.responses import JSONResponse

    return JSONResponse({"error": {"message": message, "type": kind, "param": None, "code": code}},
                        status_code=status, headers=headers)


def _estimate_tokens(body: dict) -> int:
    return max(1, (len(json.dumps(body.get("messages", ""))) + len(json.dumps(body.get("tools") or []))) // 4)


class ChatServer:
    def __init__(self, opts: Options, pool: Workers | None = None):
        from .serve_limits import Limits

        self.opts = opts
        self.pool = pool  # model worker processes; None: a thread per request
        self.limits = {m: Limits(opts.rpm, opts.tpm, opts.burst) for m in MODELS}
        self.rng = random.Random(opts.seed)  # latency jitter and injected errors, reproducible
        self.requests = 0

    def _log(self, n: int, model: str, status: int) -> None:
        if self.opts.log_requests:
            print(f"request {n} {model} {status}", flush=True)

    async def chat(self, request):
        from starlette.responses import JSONResponse

        if not request.headers.get("authorization", "").removeprefix("Bearer ").strip():
            return _error(401, "missing API key (send any key: Authorization: Bearer local)",
                          "invalid_request_error", "invalid_api_key")
        try:
            raw = await read_body(request, self.opts.max_body)
        except BodyTooLarge:
            return _error(413, f"request body is larger than {self.opts.max_body} bytes",
                          "invalid_request_error", "request_too_large")
        if nesting(raw) > MAX_NESTING:
            return _error(400, f"request body nests deeper than {MAX_NESTING} levels", "invalid_request_error")
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
            return _error(400, "request body is not JSON", "invalid_request_error")
        if not isinstance(body, dict):
            return _error(400, "request body must be a JSON object", "invalid_request_error")
        model = body.get("model")
        if model not in MODELS:
            return _error(404, f"model {model!r} does not exist; models: {', '.join(MODELS)}",
                          "invalid_request_error", "model_not_found")
        self.requests += 1
        n = self.requests
        if self.opts.die_after is not None and n > self.opts.die_after:
            print(f"dying: --die-after {self.opts.die_after} reached", file=sys.stderr, flush=True)
            os._exit(3)  # like a killed process: no goodbye to requests in flight
        limits = self.limits[model]
        wait = limits.admit(_estimate_tokens(body))
        if wait > 0:
            self._log(n, model, 429)
            return _error(429, f"rate limit reached for {model}; try again in {wait * 1000:.0f}ms",
                          "requests", "rate_limit_exceeded", headers={**limits.headers(), **limits.retry_headers(wait)})
        if self.opts.error_rate and self.rng.random() < self.opts.error_rate:
            status = self.rng.choice((500, 503))
            self._log(n, model, status)
            return _error(status, "the server had an error while processing your request (injected)",
                          "server_error", headers=limits.headers())
        if self.opts.log_requests:
            print(f"request {n} {model} working", flush=True)  # handed to the model (tests wait for this)
        try:
            reply = await self._work("judge" if model == "offline-judge" else "chat", body, len(raw), request)
        except ClientGone:  # nobody to answer; the work was stopped
            self._log(n, model, 499)
            return _error(499, "the client closed the connection", "invalid_request_error")
        except ValueError as exc:
            self._log(n, model, 400)
            return _error(400, str(exc), "invalid_request_error")
        delay = self.opts.latency * (1 + self.opts.jitter * self.rng.uniform(-1, 1))
        if delay > 0:
            await asyncio.sleep(delay)
        self._log(n, model, 200)
        return JSONResponse(reply, headers=limits.headers())

    async def _work(self, kind: str, body: dict, size: int, request) -> dict:
        """The model's CPU work, off the event loop: in a worker process, stopped if the client
        leaves; without workers (in-process tests) in a thread."""
        if self.pool is None:
            return await asyncio.to_thread(model_work, kind, body)
        gone = asyncio.ensure_future(client_gone(request.receive))
        try:
            return await self.pool.run(kind, body, size, gone)
        finally:
            gone.cancel()

    async def models(self, request):
        from starlette.responses import JSONResponse

        return JSONResponse({"object": "list", "data": [
            {"id": m, "object": "model", "created": 0, "owned_by": "northwind-evals"} for m in MODELS]})

    def app(self):
        from starlette.applications import Starlette
        from starlette.exceptions import HTTPException
        from starlette.routing import Route

        async def http_error(request, exc: HTTPException):  # 404, 405 ...: JSON, as every other error
            kind = "not_found_error" if exc.status_code == 404 else "invalid_request_error"
            return _error(exc.status_code, f"{request.method} {request.url.path}: {exc.detail}", kind,
                          headers=getattr(exc, "headers", None))

        async def server_error(request, exc: Exception):
            return _error(500, f"the server had an error while processing your request ({type(exc).__name__})",
                          "server_error")

        return Starlette(routes=[Route("/v1/chat/completions", self.chat, methods=["POST"]),
                                 Route("/v1/models", self.models, methods=["GET"])],
                         exception_handlers={HTTPException: http_error, Exception: server_error})


class _OneLineParser(argparse.ArgumentParser):
    def error(self, message: str):
        print(f"error: {message}", file=sys.stderr)
        sys.exit(2)


def _seconds(value: str) -> float:
    from .models import _seconds as parse

    try:
        return parse(value)
    except Exception as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _fraction(value: str) -> float:
    try:
        x = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if not 0 <= x <= 1:
        raise argparse.ArgumentTypeError(f"{value} is not between 0 and 1")
    return x


def _positive(value: str) -> float:
    try:
        x = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if not x > 0:
        raise argparse.ArgumentTypeError(f"{value} must be positive")
    return x


def parse_args(argv: list[str] | None) -> Options:
    p = _OneLineParser(prog="python -m app.refund_agent.serve", description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000, help="0 picks a free port (printed when ready)")
    p.add_argument("--rpm", type=_positive, help="requests per minute per model (default: unlimited)")
    p.add_argument("--tpm", type=_positive, help="tokens per minute per model (default: unlimited)")
    p.add_argument("--burst", type=_positive, default=1.0,
                   help="seconds of budget a bucket holds (default 1: 600 rpm admits ~10 per second)")
    p.add_argument("--latency", type=_seconds, default=0.0, help="delay per answer, e.g. 300ms (default 0)")
    p.add_argument("--jitter", type=_fraction, default=0.0, help="latency varies by +-this share (default 0)")
    p.add_argument("--error-rate", type=_fraction, default=0.0, help="share of requests answered 500/503")
    p.add_argument("--seed", type=int, default=0, help="seeds the jitter and the injected errors")
    p.add_argument("--die-after", type=int, metavar="N", help="exit at once when request N+1 arrives")
    p.add_argument("--log-requests", action="store_true",
                   help="stdout lines per chat request: when the model starts on it, and its status")
    p.add_argument("--workers", type=int, default=min(4, os.cpu_count() or 1),
                   help="processes running the offline model (default: the CPU count, at most 4; "
                        "one more is kept for bodies up to 64 KiB)")
    a = p.parse_args(argv)
    if a.die_after is not None and a.die_after < 0:
        p.error("--die-after must be 0 or more")
    if a.workers < 1:
        p.error("--workers must be 1 or more")
    return Options(host=a.host, port=a.port, rpm=a.rpm, tpm=a.tpm, burst=a.burst, latency=a.latency,
                   jitter=a.jitter, error_rate=a.error_rate, seed=a.seed, die_after=a.die_after,
                   log_requests=a.log_requests, workers=a.workers)


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    pool = Workers(opts.workers, opts.reserved)  # before the socket exists: no worker holds it open
    try:
        try:
            sock = bind(opts.host, opts.port)
        except OSError as exc:
            print(f"error: cannot listen on {opts.host}:{opts.port}: {exc.strerror or exc}", file=sys.stderr)
            return 2
        import uvicorn

        address = f"http://{opts.host}:{sock.getsockname()[1]}/v1"

        class Server(uvicorn.Server):
            async def startup(self, sockets=None):
                await super().startup(sockets)
                if self.started:
                    print(f"serving on {address}", flush=True)

            async def shutdown(self, sockets=None):
                await super().shutdown(sockets)
                # Before uvicorn re-raises the SIGTERM it caught: work in flight dies with its worker.
                pool.terminate()

        config = uvicorn.Config(ChatServer(opts, pool).app(), log_level="warning", access_log=False,
                                lifespan="off", timeout_keep_alive=30, timeout_graceful_shutdown=SHUTDOWN_GRACE_S)
        try:
            asyncio.run(Server(config).serve(sockets=[sock]))
        except KeyboardInterrupt:
            pass
        return 0
    finally:
        pool.terminate()


if __name__ == "__main__":
    sys.exit(main())
