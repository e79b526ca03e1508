"""Rate limits the way a hosted provider enforces them, for the local OpenAI-compatible server.

Token buckets per model: requests per minute and tokens per minute, refilled continuously and
holding at most `burst` seconds' worth (1 s by default: like OpenAI, a per-minute limit is
enforced at a finer grain, so 600 rpm means about 10 requests each second, not 600 at once).
A request over either budget is answered 429 with Retry-After (whole seconds, as HTTP says),
retry-after-ms (exact, as OpenAI sends it) and the x-ratelimit-* headers; every answer
carries the x-ratelimit-* headers so clients can see how close they are.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field


def duration(seconds: float) -> str:
    """OpenAI's reset format: "120ms", "1.5s", "6m0s"."""
    if seconds < 1:
        return f"{max(0, math.ceil(seconds * 1000))}ms"
    if seconds < 60:
        return f"{seconds:.3g}s"
    return f"{int(seconds // 60)}m{int(seconds % 60)}s"


@dataclass
class Bucket:
    per_minute: float
    burst_s: float = 1.0
    clock: object = time.monotonic
    tokens: float = field(init=False)
    updated: float = field(init=False)

    def __post_init__(self):
        self.tokens = self.capacity
        self.updated = self.clock()

    @property
    def rate(self) -> float:  # per second
        return self.per_minute / 60.0

    @property
    def capacity(self) -> float:
        return max(1.0, self.rate * self.burst_s)

    def _refill(self) -> None:
        now = self.clock()
        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
        self.updated = now

    def wait_for(self, n: float) -> float:
        """Seconds until n can be taken (0 when it can now). A request bigger than the
        bucket needs a full bucket, so it is never refused forever."""
        self._refill()
        n = min(n, self.capacity)
        return 0.0 if self.tokens >= n else (n - self.tokens) / self.rate

    def take(self, n: float) -> None:
        self.tokens -= min(n, self.capacity)

    def headers(self, kind: str) -> dict[str, str]:
        self._refill()
        return {f"x-ratelimit-limit-{kind}": str(int(self.per_minute)),
                f"x-ratelimit-remaining-{kind}": str(max(0, int(self.tokens))),
                f"x-ratelimit-reset-{kind}": duration((self.capacity - self.tokens) / self.rate)}


class Limits:
    """Both budgets of one model. `admit` takes from both or from neither."""

    def __init__(self, rpm: float | None, tpm: float | None, burst_s: float = 1.0, clock=time.monotonic):
        self.requests = Bucket(rpm, burst_s, clock) if rpm else None
        self.tokens = Bucket(tpm, burst_s, clock) if tpm else None

    def admit(self, tokens: int) -> float:
        """0 when admitted (budgets charged), else the seconds to wait before retrying."""
        waits = [b.wait_for(n) for b, n in ((self.requests, 1), (self.tokens, tokens)) if b is not None]
        wait = max(waits, default=0.0)
        if wait == 0:
            for b, n in ((self.requests, 1), (self.tokens, tokens)):
                if b is not None:
                    b.take(n)
        return wait

    def headers(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for kind, b in (("requests", self.requests), ("tokens", self.tokens)):
            if b is not None:
                out.update(b.headers(kind))
        return out

    @staticmethod
    def retry_headers(wait: float) -> dict[str, str]:
        return {"retry-after": str(max(1, math.ceil(wait))), "retry-after-ms": str(max(1, math.ceil(wait * 1000)))}
