"""The provider-call layer: AIMD concurrency, retries that honour Retry-After, exact counts."""
from __future__ import annotations

import random

import httpx
import openai
import pytest

from turngate.jobs import model_calls as mc


def _status_error(status: int, headers: dict | None = None) -> openai.APIStatusError:
    response = httpx.Response(status, headers=headers or {}, request=httpx.Request("POST", "http://x/v1/chat"))
    cls = {429: openai.RateLimitError, 500: openai.InternalServerError, 400: openai.BadRequestError}.get(
        status, openai.APIStatusError)
    return cls(f"status {status}", response=response, body=None)


def _refused() -> openai.APIConnectionError:
    try:
        raise httpx.ConnectError("[Errno 111] Connection refused")
    except httpx.ConnectError as cause:
        try:
            raise openai.APIConnectionError(request=httpx.Request("POST", "http://x")) from cause
        except openai.APIConnectionError as exc:
            return exc


@pytest.fixture
def clock(monkeypatch):
    """A fake clock and sleep: retries and cooldowns run without waiting."""
    state = {"now": 1000.0, "slept": []}

    async def sleep(seconds):
        state["slept"].append(seconds)
        state["now"] += seconds

    monkeypatch.setattr(mc, "_now", lambda: state["now"])
    monkeypatch.setattr(mc, "_sleep", sleep)
    mc.reset_call_stats()
    yield state
    mc.reset_call_stats()


def _sender(outcomes):
    """send() raising or returning each outcome in turn."""
    it = iter(outcomes)

    async def send():
        out = next(it)
        if isinstance(out, BaseException):
            raise out
        return out
    return send


async def test_429_is_retried_after_at_least_retry_after_and_counted(clock):
    wait = {"retry-after-ms": "1500", "retry-after": "2"}
    send = _sender([_status_error(429, wait), _status_error(500), "answer"])
    assert await mc.call_with_retries("openai:m", send, max_retries=3) == "answer"
    assert clock["slept"][0] >= 1.5  # the exact retry-after-ms, not the rounded-up Retry-After
    st = mc.call_stats()["openai:m"]
    assert (st["requests"], st["ok"], st["rate_limited"], st["server_errors"], st["retries"], st["gave_up"]) == \
        (3, 1, 1, 1, 2, 0)


async def test_retries_run_out_into_one_clear_error(clock):
    send = _sender([_refused(), _refused(), _refused()])
    with pytest.raises(mc.ModelCallFailed, match=r"openai:m: connection failed: .*Connection refused after 2 retries"):
        await mc.call_with_retries("openai:m", send, max_retries=2)
    st = mc.call_stats()["openai:m"]
    assert (st["connection_errors"], st["retries"], st["gave_up"], st["ok"]) == (3, 2, 1, 0)
    assert len(clock["slept"]) == 2 and clock["slept"][0] <= mc.BACKOFF_BASE_S  # two backoffs, short at first


async def test_errors_retrying_cannot_fix_are_raised_at_once(clock):
    send = _sender([_status_error(400), "never"])
    with pytest.raises(openai.BadRequestError):
        await mc.call_with_retries("openai:m", send, max_retries=5)
    assert mc.call_stats()["openai:m"]["requests"] == 1 and not clock["slept"]


def test_aimd_halves_once_per_episode_and_grows_back_by_one(clock):
    stats = mc.CallStats("openai:m")
    limit = mc.AdaptiveLimit(32, stats)
    limit.on_rate_limit(0.1)
    limit.on_rate_limit(0.1)  # the same burst: calls already in flight when we cut
    assert limit.limit == 16
    clock["now"] += mc.COOLDOWN_FLOOR_S + 0.01
    limit.on_rate_limit(0.1)
    assert limit.limit == 8 and stats.min_limit == 8
    clock["now"] += mc.COOLDOWN_FLOOR_S + 0.01
    for _ in range(8):  # a round of clean answers while the limit was full
        limit._peak = 8
        limit.on_success(clean=True)
    assert limit.limit == 9
    for _ in range(9):  # a round while mostly idle: no evidence more would be admitted
        limit._peak = 2
        limit.on_success(clean=True)
    assert limit.limit == 9
    limit.limit = limit.ceiling
    for _ in range(32):
        limit._peak = 32
        limit.on_success(clean=True)
    assert limit.limit == 32  # never above the run's --parallelism


def test_successes_during_the_cooldown_do_not_grow_the_limit(clock):
    limit = mc.AdaptiveLimit(8, mc.CallStats("k"))
    limit.on_rate_limit(5.0)  # Retry-After longer than the floor sets the cooldown
    for _ in range(20):
        limit._peak = 4
        limit.on_success(clean=True)
    assert limit.limit == 4


def test_retry_after_reading():
    assert mc.retry_after({"retry-after-ms": "250"}) == 0.25
    assert mc.retry_after({"Retry-After": "3"}) == 3.0
    assert mc.retry_after({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "6m0s"}) == 360.0
    assert mc.retry_after({"x-ratelimit-remaining-requests": "5", "x-ratelimit-reset-requests": "1s"}) is None
    assert [mc.parse_duration(v) for v in ("120ms", "1.5s", "1m30s", "2h", "bogus")] == [0.12, 1.5, 90.0, 7200.0, None]


def test_backoff_never_shorter_than_the_server_asked():
    rng = random.Random(0)
    assert all(mc.backoff(a, 2.0, rng) >= 2.0 for a in range(8))
    plain = [mc.backoff(a, None, rng) for a in range(10)]
    assert plain[0] <= mc.BACKOFF_BASE_S and max(plain) <= mc.BACKOFF_CAP_S and plain[4] > plain[0]


def test_physical_limit_is_the_rate_limit_only_when_binding():
    st = mc.CallStats("m", ok=300, latency_s=90.0, limit_requests=600).to_dict()
    assert mc.physical_limit(st, 32)[0] == pytest.approx(90.0 / 32)
    st["requests_binding"] = True
    bound, why = mc.physical_limit(st, 32)
    assert bound == pytest.approx(30.0) and "600 per minute" in why
    summary = {"wall_s": 33.0, "parallelism": 32, "models": {"m": {**st, "physical_limit_s": bound,
                                                                        "physical_limit": why}}}
    (line,) = mc.summary_lines(summary)
    assert "300 answered" in line and "wall/limit 1.10" in line
    assert mc.summary_lines(None) == []


async def test_requests_are_paced_at_the_advertised_rate_once_it_binds(clock):
    stats = mc.CallStats("openai:m", limit_requests=600)
    limit = mc.AdaptiveLimit(8, stats)
    for _ in range(3):  # not binding yet: no waiting
        await limit.acquire()
        limit.release()
    assert clock["slept"] == []
    stats.requests_binding = True
    start = clock["now"]
    for _ in range(5):
        await limit.acquire()
        limit.release()
    assert clock["now"] - start == pytest.approx(0.4)  # one request every 1/10 s
    clock["now"] += 2.0  # we were late (a busy CPU): half a second of missed slots may be caught up
    start = clock["now"]
    for _ in range(10):
        await limit.acquire()
        limit.release()
    assert clock["now"] - start == pytest.approx(0.4)  # 6 at once (-0.5 s .. now), then 4 paced


def test_a_cut_keeps_what_the_provider_is_admitting(clock):
    limit = mc.AdaptiveLimit(32, mc.CallStats("openai:m"))
    for _ in range(30):  # 10 answers a second, 0.3 s each: about 3 in flight carry that rate
        clock["now"] += 0.1
        limit.on_success(clean=False, latency=0.3)
    cuts = []
    for _ in range(5):
        limit.on_rate_limit(0.1)
        cuts.append(limit.limit)
        clock["now"] += mc.COOLDOWN_FLOOR_S + 0.01
        limit.on_success(clean=False, latency=0.3)  # the provider still answers 10 a second
        for _ in range(9):
            clock["now"] += 0.1
            limit.on_success(clean=False, latency=0.3)
    # halving alone would go 16, 8, 4, 2, 1; it stops near 10/s x 0.3 s in flight, plus one
    assert cuts[:2] == [16, 8] and min(cuts) >= 4 and cuts[-1] == cuts[-2]
