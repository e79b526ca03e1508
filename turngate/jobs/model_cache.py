"""--cache: model calls stored on disk through LangChain's own cache layer.

LangChain keys a chat model's cache entry on the serialized messages (system prompt,
conversation, tool replies) and the model's llm_string (its identity, parameters such as
seed and temperature, and the bound tools). So a rerun of an unchanged version makes no
model calls, and a changed prompt misses for exactly the calls it changes. Trials use
seeds 0..N-1, so the trial is part of the key through the seed.

The store is langchain-community's SQLiteCache (any BaseCache would plug in the same way);
the subclass only counts hits and misses so the summary can say what the cache served.
"""
from __future__ import annotations

import json
import os
import sqlite3
import sys
import threading
import warnings
from pathlib import Path

from langchain_core.globals import set_llm_cache

from turngate.core.scrubbing import scrub

DEFAULT_PATH = Path(".cache") / "model-calls.sqlite"


def _sqlite_cache_class():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # langchain-community announces its sunset on import
        from langchain_community.cache import SQLiteCache
    return SQLiteCache


_VOLATILE = ("usage_metadata", "response_metadata")


def _drop_volatile(value):
    if isinstance(value, dict):
        return {k: _drop_volatile(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_drop_volatile(v) for v in value]
    return value


def _stable(prompt: str) -> str:
    """The prompt key without per-call metadata. LangChain zeroes usage on a cache hit, so
    the earlier AI messages of a replayed conversation differ from the first run's in usage
    alone; keyed raw, every call after the first would miss."""
    try:
        return json.dumps(_drop_volatile(json.loads(prompt)), sort_keys=True)
    except ValueError:
        return prompt


def _private_file(path: Path) -> None:
    """The cache file exists with mode 0600 before SQLite opens it (SQLite gives its journal
    files the database's mode): it holds prompts and answers, which can hold customer data."""
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    if path.stat().st_mode & 0o077:
        os.chmod(path, 0o600)  # an older cache created 0644


class CountingCache(_sqlite_cache_class()):
    """Keys are scrubbed (turngate.core.scrubbing): the llm_string names the model's endpoint, so a
    base URL with credentials in it (http://user:pass@host/v1) would otherwise sit in the file."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        _private_file(path)
        super().__init__(database_path=str(path))
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.not_stored = 0  # answers the disk refused (full, read-only): the run goes on without them
        self.path = path

    def lookup(self, prompt: str, llm_string: str):
        found = super().lookup(scrub(_stable(prompt)), scrub(llm_string))
        with self._lock:
            if found is None:
                self.misses += 1
            else:
                self.hits += 1
        return found

    def update(self, prompt: str, llm_string: str, return_val) -> None:
        """Store an answer. A disk that refuses it (full, read-only, vanished) costs the cache
        that entry, never the run: a model call that succeeded must not become a failed Turn."""
        from sqlalchemy.exc import SQLAlchemyError

        try:
            super().update(scrub(_stable(prompt)), scrub(llm_string), return_val)
        except (SQLAlchemyError, sqlite3.Error, OSError) as exc:
            with self._lock:
                self.not_stored += 1
                first = self.not_stored == 1
            if first:
                reason = getattr(exc, "orig", None) or exc
                print(f"warning: --cache {self.path}: cannot store model calls ({reason}); "
                      "running on without storing them", file=sys.stderr)

    def stats(self) -> dict:
        out = {"served_from_cache": self.hits, "model_calls_made": self.misses}
        return {**out, "not_stored": self.not_stored} if self.not_stored else out


def enable_cache(path: str | Path = DEFAULT_PATH) -> CountingCache:
    """Route every LangChain chat model in this process through the on-disk cache."""
    cache = CountingCache(Path(path))
    set_llm_cache(cache)
    return cache


def disable_cache() -> None:
    set_llm_cache(None)
