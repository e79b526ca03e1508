"""Calls to a model provider (openai:/orq:): adaptive concurrency, retries, counts.

Every provider call goes through `call_with_retries`:

- **Adaptive concurrency (AIMD, as Inspect AI's AdaptiveConcurrencyController).** One limit
  per endpoint and model. It starts at the gate's --parallelism, halves on a 429 (once per
  cooldown: a burst of 429s from calls already in flight is one signal, not ten) but not
  below what the provider is admitting right now (Little's law: answers per second x latency,
  plus one), and grows by one after a round of `limit` clean successes during which it was
  nearly full (growing an idle limit would only test headroom nobody used), up to --parallelism.
- **Pacing.** Once a response shows the request budget binding (a 429, or
  x-ratelimit-remaining-requests 0), requests are spaced at the advertised rate
  (x-ratelimit-limit-requests per minute) instead of being sent to collect 429s.
- **Retries.** 429, 408/409, 5xx and connection errors are retried up to `max_retries` times
  with exponential backoff and jitter; after a 429 the call sleeps at least the server's
  Retry-After (`retry-after-ms` when given, as OpenAI sends it). The slot is released while
  sleeping, so the limit counts requests actually in flight. Anything else (400, 401, 404)
  is the caller's to fix and is raised at once.
- **Counts** per endpoint and model (requests, successes, 429s, 5xx, connection errors,
  retries, calls given up) and the x-ratelimit-* headers seen, so the gate can print wall
  time against the physical limit.

Counts, limits and the `--max-model-calls` budget live in one *limits backend* per process:
`LocalLimits` (this process's event loops) unless an executor installs another, e.g. the Ray
executor's proxy to one actor that every worker asks (turngate/jobs/ray_executor.py), so N workers
against one key share one limit. Worker processes' counts reach the gate through `absorb`.
"""
from __future__ import annotations

import asyncio
import collections
import email.utils
import math
import random
import re
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import TypeVar

T = TypeVar("T")

BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 10.0
DEFAULT_PARALLELISM = 8
DEFAULT_MAX_RETRIES = 8  # enough that rate limiting alone never fails a run
SATURATION = 0.8  # grow only after a round in which this share of the limit was in use
COOLDOWN_FLOOR_S = 1.0  # cut at most once per this long (or per Retry-After, if longer)
RATE_WINDOW_S = 3.0
PACE_CATCH_UP_S = 0.5  # how far back the admitted rate is measured

_settings = {"parallelism": DEFAULT_PARALLELISM}
_now = time.monotonic  # the clocks, replaceable in tests
_sleep = asyncio.sleep


def configure(*, parallelism: int) -> None:
    """The concurrency every provider limit starts at (the gate's --parallelism)."""
    _settings["parallelism"] = max(1, int(parallelism))


class ModelCallFailed(Exception):
    """A provider call failed for good: retries used up, or an error not worth retrying."""


@dataclass
class Failure:
    kind: str  # rate_limit | server_error | connection
    status: int | None
    retry_after: float | None
    headers: dict[str, str]
    text: str


# --- reading the provider's answer ----------------------------------------------------------

_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+(?:\.\d+)?)ms)?$")


def parse_duration(value: str | None) -> float | None:
    """OpenAI's reset format ("1s", "6m0s", "120ms", "0.5s") or plain seconds -> seconds."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    match = _DURATION.match(value)
    if not match or not any(match.groups()):
        return None
    h, m, s, ms = (float(g) if g else 0.0 for g in match.groups())
    return h * 3600 + m * 60 + s + ms / 1000


def retry_after(headers: dict[str, str]) -> float | None:
    """How long the server asks us to wait: retry-after-ms, Retry-After (seconds or an
    HTTP date), else the reset time of the exhausted x-ratelimit budget."""
    h = {k.lower(): v for k, v in headers.items()}
    if h.get("retry-after-ms"):
        try:
            return max(0.0, float(h["retry-after-ms"]) / 1000)
        except ValueError:
            pass
    if h.get("retry-after"):
        try:
            return max(0.0, float(h["retry-after"]))
        except ValueError:
            when = email.utils.parsedate_to_datetime(h["retry-after"]) if h["retry-after"] else None
            if when is not None:
                return max(0.0, when.timestamp() - time.time())
    resets = [parse_duration(h.get(f"x-ratelimit-reset-{k}")) for k in ("requests", "tokens")
              if h.get(f"x-ratelimit-remaining-{k}") == "0"]
    resets = [r for r in resets if r is not None]
    return max(resets) if resets else None


def _root_text(exc: BaseException) -> str:
    """The innermost cause, which names what happened (ConnectionRefusedError ...)."""
    seen, chain = {id(exc)}, exc
    while (nxt := chain.__cause__ or chain.__context__) is not None and id(nxt) not in seen:
        seen.add(id(nxt))
        chain = nxt
    text = str(chain) or type(chain).__name__
    return f"{type(chain).__name__}: {text}" if chain is not exc else text


def classify(exc: BaseException) -> Failure | None:
    """A retryable provider failure, or None for errors retrying cannot fix."""
    import openai

    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        headers = dict(exc.response.headers) if exc.response is not None else {}
        if status == 429:
            return Failure("rate_limit", status, retry_after(headers), headers, "429 rate limited")
        if status in (408, 409) or status >= 500:
            return Failure("server_error", status, retry_after(headers), headers, f"{status} {exc.message}"[:160])
        return None
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        kind = "timeout" if isinstance(exc, openai.APITimeoutError) else "connection failed"
        return Failure("connection", None, None, {}, f"{kind}: {_root_text(exc)}"[:200])
    return None


def backoff(attempt: int, server_wait: float | None, rng: random.Random) -> float:
    """Exponential backoff with jitter, never shorter than what the server asked for."""
    expo = min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2 ** attempt) * rng.uniform(0.5, 1.0)
    if server_wait is None:
        return expo
    # Honour Retry-After, plus a little jitter so callers told the same instant don't collide.
    return server_wait * rng.uniform(1.0, 1.25) + (expo if attempt >= 3 else 0.0)


# --- counts --------------------------------------------------------------------------------

@dataclass
class CallStats:
    """What one endpoint and model saw. `ok` is model calls answered."""
    model: str
    requests: int = 0
    ok: int = 0
    rate_limited: int = 0
    server_errors: int = 0
    connection_errors: int = 0
    retries: int = 0
    gave_up: int = 0
    latency_s: float = 0.0  # summed over answered calls
    tokens: int = 0
    limit_requests: int | None = None  # per minute, from x-ratelimit-limit-requests
    limit_tokens: int | None = None
    requests_binding: bool = False  # a response said no requests (or tokens) were left
    tokens_binding: bool = False
    start_limit: int = 0
    min_limit: int = 0
    final_limit: int = 0

    def read_headers(self, headers: dict[str, str]) -> None:
        h = {k.lower(): v for k, v in headers.items()}
        for kind in ("requests", "tokens"):
            try:
                if h.get(f"x-ratelimit-limit-{kind}"):
                    setattr(self, f"limit_{kind}", int(float(h[f"x-ratelimit-limit-{kind}"])))
                if h.get(f"x-ratelimit-remaining-{kind}") is not None and float(h[f"x-ratelimit-remaining-{kind}"]) <= 0:
                    setattr(self, f"{kind}_binding", True)
            except ValueError:
                continue

    def answered(self, headers: dict[str, str], tokens: int) -> None:
        self.read_headers(headers)
        self.tokens += tokens

    def count(self, failure: Failure) -> None:
        self.read_headers(failure.headers)
        if failure.kind == "rate_limit":
            self.rate_limited += 1
        elif failure.kind == "server_error":
            self.server_errors += 1
        else:
            self.connection_errors += 1

    def to_dict(self) -> dict:
        return asdict(self)


_stats: dict[str, CallStats] = {}
_stats_lock = threading.Lock()


def stats_for(key: str) -> CallStats:
    with _stats_lock:
        return _stats.setdefault(key, CallStats(model=key))


def call_stats() -> dict[str, dict]:
    """A snapshot of every endpoint's counts, keyed by model spec (from the installed backend)."""
    return _backend.snapshot()


def reset_call_stats() -> None:
    _backend.reset()


def physical_limit(stats: dict, parallelism: int) -> tuple[float, str]:
    """The shortest wall time these calls could have taken, and why: calls ÷ the rate
    limit when the server's headers said it was binding, else latency ÷ parallelism."""
    bounds = [(stats["latency_s"] / max(1, parallelism),
               f"{stats['latency_s']:.1f} s of latency ÷ parallelism {parallelism}")]
    if stats["requests_binding"] and stats["limit_requests"]:
        bounds.append((stats["ok"] / (stats["limit_requests"] / 60),
                       f"{stats['ok']} calls ÷ {stats['limit_requests']} per minute"))
    if stats["tokens_binding"] and stats["limit_tokens"]:
        bounds.append((stats["tokens"] / (stats["limit_tokens"] / 60),
                       f"{stats['tokens']} tokens ÷ {stats['limit_tokens']} per minute"))
    return max(bounds)


def run_summary(wall_s: float, parallelism: int) -> dict | None:
    """What the results record keeps (meta.model_calls): per model the counts and the physical
    limit; None when the run made no provider calls (the offline model)."""
    stats = call_stats()
    if not stats:
        return None
    models = {}
    for key, st in stats.items():
        bound, why = physical_limit(st, parallelism)
        models[key] = {**st, "latency_s": round(st["latency_s"], 3), "physical_limit_s": round(bound, 3),
                       "physical_limit": why}
    return {"wall_s": round(wall_s, 3), "parallelism": parallelism, "models": models}


def summary_lines(summary: dict | None) -> list[str]:
    """One line per model for the gate's output."""
    if not summary:
        return []
    wall = summary["wall_s"]
    out = []
    for st in summary["models"].values():
        bound = st["physical_limit_s"]
        ratio = f", wall/limit {wall / bound:.2f}" if bound > 0 else ""
        out.append(f"model calls {st['model']}: {st['ok']} answered of {st['requests']} requests "
                   f"({st['rate_limited']} x 429, {st['server_errors']} x 5xx, "
                   f"{st['connection_errors']} connection errors; {st['retries']} retries, {st['gave_up']} given up); "
                   f"concurrency {st['start_limit']} -> min {st['min_limit']}, end {st['final_limit']}; "
                   f"wall {wall:.1f} s vs physical limit {bound:.1f} s ({st['physical_limit']}){ratio}")
    return out


# --- the adaptive limit ----------------------------------------------------------------------

class AdaptiveLimit:
    def __init__(self, start: int, stats: CallStats):
        import anyio  # a resizable limiter; imported here to keep the gate's start-up cheap

        self.limiter = anyio.CapacityLimiter(start)
        self.limit = self.ceiling = start  # never above --parallelism: more would not be used
        self.stats = stats
        stats.start_limit = stats.start_limit or start
        stats.min_limit = min(stats.min_limit or start, start)
        stats.final_limit = start
        self._successes = 0
        self._peak = 0
        self._cooldown_until = 0.0
        self._next_send = 0.0
        self._answered: collections.deque[tuple[float, float]] = collections.deque()  # (when, latency)

    async def acquire(self, borrower: object = None) -> None:
        """A slot, for the current task or on behalf of `borrower` (an actor serving remote
        callers acquires and releases in different tasks)."""
        if borrower is None:
            borrower = asyncio.current_task()
        await self.limiter.acquire_on_behalf_of(borrower)
        self._peak = max(self._peak, int(self.limiter.borrowed_tokens))
        try:
            await self._paced()
        except BaseException:
            self.limiter.release_on_behalf_of(borrower)
            raise

    async def _paced(self) -> None:
        """Once the provider said its request budget binds, send no faster than the rate it
        advertises (x-ratelimit-limit-requests): each request gets the next 1/rate time slot.
        Sending faster would only buy 429s, which cost a round trip each and, at some
        providers, count against the budget too."""
        st = self.stats
        if not (st.requests_binding and st.limit_requests):
            return
        now = _now()
        self._next_send = self._next_send or now  # pacing starts now: the provider's bucket is empty
        # Slots missed while we were late (a busy CPU) may be caught up for a moment, as the
        # provider's bucket kept refilling meanwhile; not more, or we would burst into 429s.
        at = max(now - PACE_CATCH_UP_S, self._next_send)
        self._next_send = at + 60.0 / st.limit_requests
        if at > now:
            await _sleep(at - now)

    def release(self, borrower: object = None) -> None:
        self.limiter.release_on_behalf_of(borrower if borrower is not None else asyncio.current_task())

    def _set(self, new: int) -> None:
        self.limit = new
        self.limiter.total_tokens = new
        self.stats.final_limit = new
        self.stats.min_limit = min(self.stats.min_limit, new)

    def on_rate_limit(self, wait: float | None) -> None:
        self._successes = 0
        self._peak = 0
        now = _now()
        if now < self._cooldown_until:  # same episode: the calls in flight when we cut
            self._cooldown_until = max(self._cooldown_until, now + (wait or 0.0))
            return
        self._cooldown_until = now + max(wait or 0.0, COOLDOWN_FLOOR_S)
        self._set(max(1, self.limit // 2, min(self.limit, self.admitted_in_flight())))

    def admitted_in_flight(self) -> int:
        """Little's law: the calls in flight that the rate the provider is admitting right now
        needs (answers per second x seconds per answer), plus one. Halving below that would not
        spare the provider anything; it would only leave capacity it grants unused."""
        now = _now()
        while self._answered and now - self._answered[0][0] > RATE_WINDOW_S:
            self._answered.popleft()
        if len(self._answered) < 4:
            return 1
        rate = len(self._answered) / max(now - self._answered[0][0], 0.5)
        latency = sum(lat for _, lat in self._answered) / len(self._answered)
        return math.ceil(rate * latency) + 1

    def on_success(self, clean: bool, latency: float = 0.0) -> None:
        self._answered.append((_now(), latency))
        if not clean or _now() < self._cooldown_until:
            return  # answers to calls sent before the cut say nothing about the new limit
        self._successes += 1
        if self._successes < self.limit:
            return
        saturated = self._peak >= SATURATION * self.limit
        self._successes, self._peak = 0, 0
        if saturated and self.limit < self.ceiling:
            self._set(self.limit + 1)


_limits: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # loop -> {key: AdaptiveLimit}


def limit_for(key: str) -> AdaptiveLimit:
    """One limit per endpoint and model per event loop (anyio's limiter belongs to its loop)."""
    per_loop = _limits.setdefault(asyncio.get_running_loop(), {})
    if key not in per_loop:
        per_loop[key] = AdaptiveLimit(_settings["parallelism"], stats_for(key))
    return per_loop[key]


# --- the model-call budget (--max-model-calls) ------------------------------------------------

BUDGET_SPENT = "model call budget spent"  # in a refused run's error text: the runner drops such runs


class ModelBudgetSpent(Exception):
    """--max-model-calls is reached: this call is refused. Not a failure of the run: the gate
    stops, keeps what finished and drops the runs this cut (they are resumable)."""


class Budget:
    """At most `limit` agent model calls (a call and its retries count once); None: no limit."""

    def __init__(self, limit: int | None = None, used: int = 0):
        self.limit, self.used, self.refused = limit, used, 0
        self.stopped = False  # the gate stopped because of it (set by the runner)

    def take(self) -> bool:
        if self.limit is not None and self.used >= self.limit:
            self.refused += 1
            return False
        self.used += 1
        return True


_budget = Budget()


def set_budget(limit: int | None) -> None:
    """The gate's --max-model-calls (None: none); counted from zero."""
    global _budget
    _budget = Budget(limit)


def budget() -> Budget:
    return _budget


def budget_refusal(limit: int | None) -> ModelBudgetSpent:
    return ModelBudgetSpent(f"{BUDGET_SPENT} (--max-model-calls {limit})")


# --- the limits backend: where limits, counts and the budget live ------------------------------

class LocalLimits:
    """This process's limits (one per endpoint and event loop), counts and budget."""

    def __init__(self, budget: Budget | None = None):
        self._own_budget = budget

    @property
    def budget(self) -> Budget:
        return self._own_budget if self._own_budget is not None else _budget

    async def acquire(self, key: str, budgeted: bool, borrower: object = None) -> object:
        """Wait for a slot (and the pacing); a token to hand back. Raises ModelBudgetSpent."""
        if budgeted and not self.budget.take():
            raise budget_refusal(self.budget.limit)
        limit = limit_for(key)
        token = borrower if borrower is not None else asyncio.current_task()
        await limit.acquire(token)
        limit.stats.requests += 1
        return token

    def release(self, key: str, token: object) -> None:
        limit_for(key).release(token)

    async def failed(self, key: str, token: object, failure: Failure, gave_up: bool) -> None:
        limit = limit_for(key)
        limit.release(token)
        limit.stats.count(failure)
        if failure.kind == "rate_limit":
            limit.on_rate_limit(failure.retry_after)
        if gave_up:
            limit.stats.gave_up += 1
        else:
            limit.stats.retries += 1

    async def answered(self, key: str, token: object, latency: float, clean: bool, headers: dict[str, str],
                       tokens: int) -> None:
        limit = limit_for(key)
        limit.release(token)
        limit.stats.ok += 1
        limit.stats.latency_s += latency
        limit.stats.answered(headers, tokens)
        limit.on_success(clean=clean, latency=latency)

    def snapshot(self) -> dict[str, dict]:
        with _stats_lock:
            return {k: v.to_dict() for k, v in _stats.items() if v.requests}

    def reset(self) -> None:
        """Counts from zero; the limits start afresh too, so none keeps counting into a
        dropped tally (a long-lived loop, as a Ray actor's, would otherwise lose counts)."""
        with _stats_lock:
            _stats.clear()
        _limits.clear()


_backend: LocalLimits = LocalLimits()


def install(backend) -> None:
    """Route this process's provider calls through `backend` (an executor's shared limits);
    None: back to LocalLimits."""
    global _backend
    _backend = backend if backend is not None else LocalLimits()


def absorb(stats: dict[str, dict]) -> None:
    """Add counts made elsewhere (worker processes, a Ray actor) to this process's own."""
    for key, other in (stats or {}).items():
        merge_into(stats_for(key), other)


COUNTERS = ("requests", "ok", "rate_limited", "server_errors", "connection_errors", "retries", "gave_up",
            "latency_s", "tokens")


def merge_into(st: CallStats, other: dict) -> None:
    with _stats_lock:
        for name in COUNTERS:
            setattr(st, name, getattr(st, name) + other.get(name, 0))
        for name in ("limit_requests", "limit_tokens"):
            setattr(st, name, other.get(name) or getattr(st, name))
        st.requests_binding = st.requests_binding or bool(other.get("requests_binding"))
        st.tokens_binding = st.tokens_binding or bool(other.get("tokens_binding"))
        st.start_limit = st.start_limit or other.get("start_limit", 0)
        mins = [m for m in (st.min_limit, other.get("min_limit", 0)) if m]
        st.min_limit = min(mins) if mins else 0
        st.final_limit = other.get("final_limit") or st.final_limit


def stats_between(before: dict[str, dict], after: dict[str, dict]) -> dict[str, dict]:
    """Counts in `after` not yet in `before` (snapshots of one source), per model."""
    out = {}
    for key, st in after.items():
        old = before.get(key, {})
        delta = {**st, **{n: st.get(n, 0) - old.get(n, 0) for n in COUNTERS}}
        if delta["requests"]:
            out[key] = delta
    return out


_rng = random.Random()  # jitter only; never part of a Turn


def _given_up(key: str, failure: Failure, retries: int) -> ModelCallFailed:
    return ModelCallFailed(f"{key}: {failure.text} after {retries} retr{'y' if retries == 1 else 'ies'}")


Seen = Callable[[T], tuple[dict[str, str], int]]  # an answer -> (its headers, tokens it used)


async def call_with_retries(key: str, send: Callable[[], Awaitable[T]], *, max_retries: int,
                            on_success: Seen | None = None, budgeted: bool = True) -> T:
    """Send one model call through the endpoint's adaptive limit, retrying what is worth
    retrying. `on_success` reads the answer's headers and token count, for the counts.
    `budgeted`: the call counts against --max-model-calls (the agent's calls; not the judge's)."""
    limits = _backend
    attempt = 0
    while True:
        token = await limits.acquire(key, budgeted and attempt == 0)
        started = time.monotonic()
        try:
            result = await send()
        except Exception as exc:
            failure = classify(exc)
            if failure is None:
                limits.release(key, token)
                raise
            gave_up = attempt >= max_retries
            await limits.failed(key, token, failure, gave_up)
            if gave_up:
                raise _given_up(key, failure, attempt) from exc
            await _sleep(backoff(attempt, failure.retry_after, _rng))
            attempt += 1
            continue
        except BaseException:
            limits.release(key, token)
            raise
        latency = time.monotonic() - started  # from the send, after any pacing wait
        headers, tokens = on_success(result) if on_success is not None else ({}, 0)
        await limits.answered(key, token, latency, attempt == 0, headers, tokens)
        return result


def call_with_retries_sync(key: str, send: Callable[[], T], *, max_retries: int,
                           on_success: Seen | None = None, budgeted: bool = True) -> T:
    """The same retries for sync callers (no shared limit: sync calls come one at a time;
    counted in this process, against this process's budget)."""
    if budgeted and not _budget.take():
        raise budget_refusal(_budget.limit)
    stats = stats_for(key)
    attempt = 0
    while True:
        started = time.monotonic()
        try:
            stats.requests += 1
            result = send()
        except Exception as exc:
            failure = classify(exc)
            if failure is None:
                raise
            stats.count(failure)
            if attempt >= max_retries:
                stats.gave_up += 1
                raise _given_up(key, failure, attempt) from exc
            stats.retries += 1
            time.sleep(backoff(attempt, failure.retry_after, _rng))
            attempt += 1
            continue
        stats.ok += 1
        stats.latency_s += time.monotonic() - started
        if on_success is not None:
            stats.answered(*on_success(result))
        return result
