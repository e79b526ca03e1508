"""The review workbench's local server: one page (turngate/review/page/) and a small JSON API
over the runs read (items.py) and the sidecar (store.py). Starlette, served by uvicorn on
127.0.0.1 only (`evals review`, turngate/commands/review.py).

Every request carries the session's token: `?t=` on the page and its static files (a browser
navigation cannot add a header), the `X-Review-Token` header on API calls (the page's fetch
adds it). Without it, or with a Host that is not this server's own 127.0.0.1:port (a DNS
rebinding page), the answer is 403. A write is a POST with a JSON body (a form of another page
cannot send one without a preflight nobody answers) and, when the browser names it, an Origin
of this server. Every answer carries a Content-Security-Policy that runs only the page's own
script: the transcripts are text, put in the page with textContent, never markup.

    GET  /?t=TOKEN               the page
    GET  /static/<file>?t=TOKEN  its script and style sheet
    GET  /api/queue              what to read, failing runs first: small items
    GET  /api/run?source=&run=   one run's transcript (items.transcript)
    GET  /api/state[?events=N]   notes, labels, modes, assignments, position, events (same: N unchanged)
    POST /api/event              one sidecar event; 409 when it no longer applies, 400 when malformed
    GET  /api/taxonomy           the modes with counts, Wilson intervals and coverage (taxonomy.py)
    POST /api/suggest            groups of similar notes (grouping.py)
    POST /api/export             the taxonomy, scorer skeletons, judge labels, rows (export.py)
"""
from __future__ import annotations

import hmac
import inspect
import json
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from turngate.core.errors import ConfigError

from .items import Item, queue, transcript
from .store import ReviewStore
from .taxonomy import reviewed, summarise

PAGE = Path(__file__).with_name("page")
STATIC = {"app.js": "text/javascript; charset=utf-8", "app.css": "text/css; charset=utf-8"}
TOKEN_HEADER = "x-review-token"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
HEADERS = {"content-security-policy": CSP, "x-content-type-options": "nosniff", "referrer-policy": "no-referrer",
           "x-frame-options": "DENY", "cache-control": "no-store", "cross-origin-opener-policy": "same-origin",
           "cross-origin-resource-policy": "same-origin"}
RUN_OPS = {"note", "label", "assign", "position"}
WRITES = {"/api/event", "/api/suggest", "/api/export"}
READS = {"/", "/api/queue", "/api/run", "/api/state", "/api/taxonomy"}
MAX_BODY = 1 << 20  # bytes of one POST: a split of every run of a big record still fits


@dataclass
class Session:
    """What one `evals review` serves: the runs read, the sidecar, the token."""
    items: list[Item]
    store: ReviewStore
    sample: int = 20
    seed: int = 0
    export_dir: Path | None = None
    model: str | None = None
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    hosts: set[str] = field(default_factory=set)  # Host headers this server answers: 127.0.0.1:port
    dataset: Any = None
    coverage: Any = None  # rescore.Coverage: today's suite scores a mode's runs (None: the verdicts recorded)
    page: str = "taxonomy.md"  # the export's taxonomy page (--page)

    def __post_init__(self) -> None:
        self.by_key = {it.key: it for it in self.items}
        self.sources: list[Any] = []
        self._source_at: dict[str, int] = {}
        for it in self.items:
            if it.source.digest not in self._source_at:
                self._source_at[it.source.digest] = len(self.sources)
                self.sources.append(it.source)
        self.lock = threading.Lock()  # the store is one file descriptor: one writer at a time
        self._queue: list[Item] | None = None
        self._queue_keys: set = set()

    def bind(self, port: int) -> None:
        self.hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}

    def url(self, port: int) -> str:
        return f"http://127.0.0.1:{port}/?t={self.token}"

    def queue(self) -> list[Item]:
        """items.queue, kept while no run outside it is annotated (another server on the same
        sidecar may annotate a passing run this one did not draw: it joins the queue)."""
        state = self.store.state
        keep = {k for k in reviewed(state) | ({state.position} if state.position else set()) if k in self.by_key}
        if self._queue is None or not keep <= self._queue_keys:
            self._queue = queue(self.items, self.sample, self.seed, keep)
            self._queue_keys = {it.key for it in self._queue}
        return self._queue


# --- answers ---------------------------------------------------------------------------------

def _json(data: Any, status: int = 200):
    from starlette.responses import Response

    try:
        body = orjson.dumps(data)
    except TypeError:  # what orjson cannot write (an int past 64 bits in a row): as json writes it
        body = json.dumps(data, ensure_ascii=False, default=str).encode()
    return Response(body, status_code=status, media_type="application/json", headers=HEADERS)


def _error(status: int, why: str, **extra):
    return _json({"error": why, **extra}, status)


def _page(session: Session):
    from starlette.responses import Response

    html = (PAGE / "index.html").read_text(encoding="utf-8").replace("{{TOKEN}}", session.token)
    return Response(html, media_type="text/html; charset=utf-8", headers=HEADERS)


def _static(name: str):
    from starlette.responses import Response

    if name not in STATIC:
        return _error(404, f"no file {name}")
    return Response((PAGE / name).read_bytes(), media_type=STATIC[name], headers=HEADERS)


def queue_json(session: Session) -> dict[str, Any]:
    """The queue, small per item: where it is (source index, run key), what it is, what the
    sidecar says of it now."""
    state = session.store.state
    out = []
    for it in session.queue():
        k = it.key
        out.append({"s": session._source_at[it.source.digest], "run": it.run, "row": it.row_id, "version": it.version,
                    "trial": it.trial, "stage": it.stage, "failed": it.failed, "failing": list(it.failing),
                    "label": state.labels.get(k), "noted": k in state.notes, "mode": state.assigned.get(k)})
    return {"sources": [{"digest": s.digest, "label": s.label, "kind": s.kind, "path": s.path}
                        for s in session.sources],
            "items": out, "runs": len(session.items), "failing": sum(it.failed for it in session.items),
            "sample": session.sample, "seed": session.seed}


def state_json(session: Session) -> dict[str, Any]:
    st = session.store.state
    return {"events": st.events, "stale": st.stale,
            "notes": [[s, r, t] for (s, r), t in st.notes.items()],
            "labels": [[s, r, v] for (s, r), v in st.labels.items()],
            "assigned": [[s, r, m] for (s, r), m in st.assigned.items()],
            "modes": [{"id": m.id, "name": m.name, "definition": m.definition} for m in st.modes.values()],
            "position": list(st.position) if st.position else None}


def taxonomy_json(session: Session) -> dict[str, Any]:
    st = session.store.state
    modes = []
    today = session.coverage.verdicts(st, session.by_key) if session.coverage is not None else None
    for m in summarise(st, session.by_key, today):
        modes.append({"id": m.id, "name": m.name, "definition": m.definition, "count": m.count,
                      "reviewed": m.reviewed, "share": m.share, "interval": list(m.interval),
                      "coverage": m.coverage, "covered_by": m.covered_by,
                      "agreement": [{"scorer": a.scorer, "failed": a.failed, "judged": a.judged, "runs": a.runs,
                                     "share": a.share} for a in m.agreement],
                      "runs": [list(k) for k in m.runs]})
    return {"modes": modes, "reviewed": len(reviewed(st)), "events": st.events,
            "unassigned_notes": sum(1 for k in st.notes if k not in st.assigned)}


def _accepts(fn, name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def suggest_json(session: Session, notes: dict) -> dict[str, Any]:
    """grouping.suggest over the notes (groups of two or more first, then the notes like no
    other, one each), named by --model through grouping.name_groups when one is given. Blocking
    (a model call): the endpoint runs it in a thread."""
    from turngate.review import grouping  # written beside this module; absent: 501

    groups = list(grouping.suggest(notes))
    names = [(g.name, getattr(g, "definition", "") or "") for g in groups]
    warnings: list[str] = []
    if session.model and session.model != "offline" and groups and hasattr(grouping, "name_groups"):
        kwargs = {"warn": warnings.append} if _accepts(grouping.name_groups, "warn") else {}
        named = grouping.name_groups(groups, session.model, **kwargs)
        names = [(str(n), getattr(n, "definition", "") or d) for n, (_, d) in zip(named, names, strict=True)]
    return {"suggestions": [{"name": name, "definition": definition, "runs": [list(k) for k in g.runs],
                             "notes": list(g.notes), "score": getattr(g, "score", None)}
                            for g, (name, definition) in zip(groups, names, strict=True)],
            "warnings": warnings}


def export_paths(session: Session, out_dir: Path, rows: set | None = None) -> tuple[list[Path], list[str]]:
    """export.export into out_dir: (the paths written, its report: one line per thing left out)."""
    from turngate.review.export import export

    kwargs: dict[str, Any] = {"rows": rows, "page": session.page}
    if session.dataset is not None:
        kwargs["dataset"] = session.dataset
    if session.coverage is not None:
        kwargs["verdicts"] = session.coverage.verdicts(session.store.state, session.by_key)
    written = export(session.store.state, session.items, out_dir, **kwargs)
    return list(written), [str(line) for line in getattr(written, "report", []) or []]


# --- the application -------------------------------------------------------------------------

def _header(scope, name: bytes) -> str | None:
    for k, v in scope.get("headers") or []:
        if k == name:
            return v.decode("latin-1")
    return None


def _same(given: str | None, token: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


def build_app(session: Session):
    """The ASGI application: the guard (host, token, method, content type, origin) around the routes."""
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.routing import Route

    async def page(request: Request):
        return _page(session)

    async def static(request: Request):
        return _static(request.path_params["name"])

    async def api_queue(request: Request):
        with session.lock:
            session.store.refresh()
            return _json(queue_json(session))

    async def api_run(request: Request):
        key = (request.query_params.get("source", ""), request.query_params.get("run", ""))
        item = session.by_key.get(key)
        if item is None:
            return _error(404, f"no run {key[1]!r} of source {key[0][:12]!r} in the files read")
        return _json(transcript(item))

    async def api_state(request: Request):
        with session.lock:
            st = session.store.refresh()
            since = request.query_params.get("events")
            if since is not None and since == str(st.events):
                return _json({"events": st.events, "same": True})
            return _json(state_json(session))

    async def api_event(request: Request):
        data, bad = await _body(request)
        if bad is not None:
            return bad
        if data.get("op") in RUN_OPS and (data.get("source"), data.get("run")) not in session.by_key:
            return _error(400, f"no run {data.get('run')!r} of source {str(data.get('source'))[:12]!r} in the files read",
                          events=session.store.state.events)
        with session.lock:
            try:
                ok, why = session.store.append(data)
            except ValueError as exc:
                return _error(400, f"not a review event: {exc}", events=session.store.state.events)
            except ConfigError as exc:  # the sidecar cannot be written: nothing was saved
                return _error(507, str(exc), events=session.store.state.events)
            events = session.store.state.events
        if not ok:
            return _error(409, why, events=events)
        return _json({"ok": True, "events": events})

    def taxonomy_now() -> dict[str, Any]:
        with session.lock:
            session.store.refresh()
            return taxonomy_json(session)

    async def api_taxonomy(request: Request):  # in a thread: today's suite may score runs (its own event loop)
        return _json(await run_in_threadpool(taxonomy_now))

    async def api_suggest(request: Request):
        data, bad = await _body(request)
        if bad is not None:
            return bad
        with session.lock:
            notes = dict(session.store.refresh().notes)
            events = session.store.state.events
        try:
            out = await run_in_threadpool(suggest_json, session, notes)
        except ImportError as exc:
            return _error(501, f"grouping is not available ({exc})")
        except ConfigError as exc:
            return _error(400, str(exc))
        out["events"] = events
        return _json(out)

    async def api_export(request: Request):
        data, bad = await _body(request)
        if bad is not None:
            return bad
        rows = data.get("rows")
        if rows is not None:
            if not isinstance(rows, list) or not all(isinstance(k, list) and len(k) == 2 and all(
                    isinstance(x, str) for x in k) for k in rows):
                return _error(400, "rows: a list of [source, run] pairs")
            rows = {(s, r) for s, r in rows}
        if session.export_dir is None:
            return _error(400, "no export folder for this session (evals review --out DIR)")
        def export_now():
            with session.lock:
                session.store.refresh()
                return export_paths(session, session.export_dir, rows)

        try:  # in a thread: today's suite may score runs (its own event loop)
            paths, report = await run_in_threadpool(export_now)
        except ImportError as exc:
            return _error(501, f"export is not available ({exc})")
        except (ConfigError, OSError) as exc:
            return _error(400, str(exc))
        return _json({"paths": [str(p) for p in paths], "report": report, "dir": str(session.export_dir),
                      "events": session.store.state.events})

    routes = [Route("/", page), Route("/static/{name}", static), Route("/api/queue", api_queue),
              Route("/api/run", api_run), Route("/api/state", api_state),
              Route("/api/event", api_event, methods=["POST"]), Route("/api/taxonomy", api_taxonomy),
              Route("/api/suggest", api_suggest, methods=["POST"]), Route("/api/export", api_export, methods=["POST"])]
    return Guard(Starlette(routes=routes), session)


async def _body(request):
    """(the request's JSON object, None), or (None, the error answer)."""
    raw = await request.body()
    if len(raw) > MAX_BODY:
        return None, _error(413, f"a request body is at most {MAX_BODY} bytes")
    try:
        data = json.loads(raw or b"{}")
    except (ValueError, UnicodeDecodeError) as exc:
        return None, _error(400, f"not JSON ({exc})")
    if not isinstance(data, dict):
        return None, _error(400, "the body is one JSON object")
    return data, None


class Guard:
    """Refuses, before any route runs: a Host that is not this server's (403), a missing or
    wrong token (403), a write that is not a JSON POST (405, 415) or comes from another origin
    (403). The answer to a refusal says why and carries the same security headers."""

    def __init__(self, app, session: Session) -> None:
        self.app, self.session = app, session

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                return await self.app(scope, receive, send)
            return  # no websockets
        why = self.refused(scope)
        if why is not None:
            status, text = why
            return await _error(status, text)(scope, receive, send)
        return await self.app(scope, receive, send)

    def refused(self, scope) -> tuple[int, str] | None:
        s = self.session
        host = _header(scope, b"host")
        if s.hosts and host not in s.hosts:
            return 403, "this server answers only at its own address (127.0.0.1:port)"
        path, method = scope.get("path", ""), scope.get("method", "GET")
        api = path.startswith("/api/")
        if api:
            token = _header(scope, TOKEN_HEADER.encode())
        else:
            from urllib.parse import parse_qs

            token = (parse_qs(scope.get("query_string", b"").decode("latin-1")).get("t") or [None])[0]
        if not _same(token, s.token):
            return 403, ("no session token (the X-Review-Token header)" if api else
                         "no session token: open the address `evals review` printed (it ends in ?t=...)")
        if path != "/" and not path.startswith("/static/") and path not in READS | WRITES:
            return 404, "not found"
        if path in WRITES:
            if method != "POST":
                return 405, f"{path} is a POST"
            ctype = (_header(scope, b"content-type") or "").split(";")[0].strip().lower()
            if ctype != "application/json":
                return 415, "a write's body is JSON (Content-Type: application/json)"
            origin = _header(scope, b"origin")
            if origin is not None and origin.removeprefix("http://") not in s.hosts:
                return 403, f"a write from another page ({origin}) is refused"
            site = _header(scope, b"sec-fetch-site")
            if site is not None and site not in ("same-origin", "none"):
                return 403, f"a write from another site ({site}) is refused"
        elif method not in ("GET", "HEAD"):
            return 405, f"{path} is read with GET"
        return None


# --- serving ---------------------------------------------------------------------------------

def listen(port: int = 0):
    """A listening socket on 127.0.0.1 (a free port for 0). ConfigError when it cannot be had."""
    import socket

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ConfigError(f"--port {port}: cannot listen on 127.0.0.1:{port} ({exc.strerror or exc})") from None
    sock.set_inheritable(False)
    return sock


def serve(session: Session, sock, on_ready=None) -> None:
    """Serve until Ctrl-C or SIGTERM (or should_exit): then stop accepting, let the requests
    in flight finish (a few seconds at most) and return. Every event was on disk (fsync) before
    its request was answered, so nothing acknowledged is lost however the process ends."""
    import contextlib
    import signal

    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self):
            # uvicorn's own re-raises the signal once stopped (the command's handler: exit 2);
            # here a stop asked for by the user ends the session, exit 0
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            previous = {sig: signal.signal(sig, self._stop) for sig in (signal.SIGINT, signal.SIGTERM)}
            try:
                yield
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

        def _stop(self, signum, frame) -> None:
            if self.should_exit:
                self.force_exit = True
            self.should_exit = True

        async def startup(self, sockets=None) -> None:
            await super().startup(sockets)
            if on_ready is not None and self.started:
                on_ready()

    config = uvicorn.Config(build_app(session), log_level="warning", access_log=False, lifespan="off",
                            timeout_graceful_shutdown=5, server_header=False, date_header=False)
    server = Server(config)
    session.server = server
    server.run(sockets=[sock])
