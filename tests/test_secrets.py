"""Credentials in URLs never reach a file: a password in OPENAI_BASE_URL is in no file a gate
writes (model-call cache, results, report, step summary) nor in its output, and the cache
file is private (0600)."""
from __future__ import annotations

import base64
import stat

from tests.serve_helpers import served
from turngate.commands import regression
from turngate.core.scrubbing import scrub, scrub_urls

PASSWORD = "SECRET"  # upper case: the placeholder is "[secret]"


def test_url_credentials_are_scrubbed_wherever_they_appear(monkeypatch):
    text = ('base "http://user:hunter22@api.example/v1" https://ghp_tok3n@github.com/x '
            "https://h/v1?api_key=k-123456&page=2&token=t0k3n99#top wss://h/?access_token=abcdefg "
            "ana@example.com https://h/p?page=2")
    out = scrub_urls(text)
    for leaked in ("hunter22", "ghp_tok3n", "k-123456", "t0k3n99", "abcdefg"):
        assert leaked not in out
    assert "http://[secret]@api.example/v1" in out and "page=2&token=[secret]#top" in out
    assert "ana@example.com" in out and out.endswith("https://h/p?page=2")  # not credentials: kept
    monkeypatch.setenv("SOME_BASE_URL", "http://bob:pa55word@10.0.0.1/v1?key=qwertyuiop")
    basic = base64.b64encode(b"bob:pa55word").decode()
    alone = scrub(f"auth failed for pa55word (Basic {basic}), key qwertyuiop")
    assert "pa55word" not in alone and basic not in alone and "qwertyuiop" not in alone


def test_no_file_the_gate_writes_holds_a_password_from_the_base_url(tmp_path, monkeypatch, capsys):
    out, cache, report, steps = tmp_path / "out", tmp_path / "cache.sqlite", tmp_path / "r.html", tmp_path / "s.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(steps))
    with served() as server:
        host = server.url.removeprefix("http://")
        monkeypatch.setenv("OPENAI_BASE_URL", f"http://user:{PASSWORD}@{host}")
        monkeypatch.setenv("OPENAI_API_KEY", "local")
        args = ["--version", "v3", "--only", "status", "refund_ok", "--model", "openai:offline",
                "--judge", "openai:offline-judge", "--cache", str(cache), "--report", str(report),
                "--no-upload", "--quiet", "--out", str(out)]
        first = regression.main(args)
        again = regression.main([*args[:-1], str(tmp_path / "out2"), "--report", str(tmp_path / "r2.html")])
    assert first in (0, 1) and again == first  # judged, and the second run was served from the cache
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert cache in written and report in written and list(out.glob("*.json"))
    leaks = [str(p) for p in written if PASSWORD.encode() in p.read_bytes()]
    assert leaks == []
    printed = capsys.readouterr()
    assert PASSWORD not in printed.out + printed.err
    assert "served from cache" in printed.out  # the cache was used, keyed without the password
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    for sidecar in tmp_path.glob("cache.sqlite-*"):  # SQLite's journals take the database's mode
        assert stat.S_IMODE(sidecar.stat().st_mode) & 0o077 == 0


def test_an_existing_world_readable_cache_becomes_private(tmp_path):
    from turngate.jobs.model_cache import CountingCache

    path = tmp_path / "old.sqlite"
    path.touch(mode=0o644)
    path.chmod(0o644)
    CountingCache(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
