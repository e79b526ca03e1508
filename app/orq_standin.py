"""`python -m app.orq_standin`: a local stand-in for the orq.ai endpoints this project uses, so
the orq path (`--dataset-id`, the experiment upload, `orq:<model>` through the router) runs
end to end with no key and no network.

    python -m app.orq_standin --dataset ds_northwind=datasets/northwind.jsonl [--port 8100]
        [--page-size 50] [--key KEY] [--log FILE]

Endpoints, with the shapes of orq-ai-sdk's and evaluatorq's own pydantic models:

    GET  /v2/datasets/{id}/datapoints             ListDatasetDatapointsRequest -> ListDatapointsResponse
                                                  (cursor pagination: limit, starting_after, has_more)
    POST /v2/datasets/{id}/datapoints             [DatapointInput] -> [Datapoint1]   (promote.py --upload)
    POST /v2/spreadsheets/evaluations/receive     evaluatorq's SendResultsPayload -> OrqResponse
    POST /v3/router/chat/completions (and /v2/)   CreateChatCompletionRequestBody, answered by the
                                                  offline model (the emulator's app, app/refund_agent/serve.py)
    POST /v2/otel/v1/traces                       accepted and counted (evaluatorq traces when OTEL is installed)

Every request body is validated against those models and must round-trip: the model dumped
back as the client library serialises it equals what arrived (so an unknown or misnamed
field is refused too, with 422 and the reason). Router models are `<provider>/offline` and
`<provider>/offline-judge` (orq names models provider/name), e.g. orq:northwind/offline.
What arrived is kept in `received` (and --log writes it as JSONL); the API key never is.
One line `serving on http://HOST:PORT` on stdout when ready; --port 0 picks a free port.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from pydantic import BaseModel, ValidationError

ROUTER_PREFIXES = ("/v3/router", "/v2/router")
START_TIMEOUT_S = 60  # a bound on the wait for uvicorn's startup, not a guess at how long it takes


class Refused(Exception):
    """A request the real API would refuse: its status and message."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def unalias(model: type[BaseModel], data: Any) -> Any:
    """A serialised payload (wire names: `_name`, `jobResults` ...) back to the field names the
    model validates with, recursively through nested models and lists of them. Keys that are
    neither a field nor its alias are kept, so the round-trip check sees and refuses them."""
    if not isinstance(data, dict):
        return data
    names = {(f.serialization_alias or n): n for n, f in model.model_fields.items()}
    out = {}
    for key, value in data.items():
        name = names.get(key, key)
        sub = _model_of(model.model_fields[name].annotation) if name in model.model_fields else None
        if sub is not None:
            value = [unalias(sub, v) for v in value] if isinstance(value, list) else unalias(sub, value)
        out[name] = value
    return out


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The BaseModel in `M`, `list[M]`, `M | None` (evaluatorq's payload nests only these)."""
    import typing

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        if found := _model_of(arg):
            return found
    return None


def evaluatorq_dump(payload: BaseModel) -> dict:
    """SendResultsPayload as evaluatorq's send_results_to_orq puts it on the wire (its
    model_dump plus the defaults it restores; evaluatorq/send_results.py)."""
    body = payload.model_dump(mode="json", exclude_none=True, by_alias=True)
    for result in body.get("results", []):
        for jr in result.get("jobResults") or []:
            jr.setdefault("output", None)
            jr.setdefault("error", "")
            for es in jr.get("evaluatorScores") or []:
                if "score" in es:
                    es["score"].setdefault("value", None)
                    es["score"].setdefault("explanation", "")
                    es["score"].pop("token_usage", None)
                    es["score"].pop("raw_output", None)
                es.setdefault("error", "")
    return body


def _first_difference(a: Any, b: Any, where: str = "body") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in b:
                return f"{where}.{key}: not a field of the model"
            if key not in a:
                return f"{where}.{key}: missing"
            if a[key] != b[key]:
                return _first_difference(a[key], b[key], f"{where}.{key}")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return _first_difference(x, y, f"{where}[{i}]")
    return f"{where}: {json.dumps(a)[:120]} is not what the model serialises ({json.dumps(b)[:120]})"


def validated(model: type[BaseModel], body: Any, *, dump, where: str, fields=lambda b: b) -> BaseModel:
    """body as `model`, or Refused(422): invalid, or not exactly what `dump` of the model puts
    on the wire. fields: the wire body under the names the model validates with."""
    try:
        obj = model.model_validate(fields(body))
    except ValidationError as exc:
        err = exc.errors()[0]
        raise Refused(422, f"{where}: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
    if (again := dump(obj)) != body:
        raise Refused(422, f"{where}: {_first_difference(body, again)}")
    return obj


@dataclass
class Dataset:
    points: list[dict] = field(default_factory=list)  # Datapoint1 wire form (with _id)


class OrqStandIn:
    """The stand-in's state and its ASGI app; `running()` serves it on 127.0.0.1 in a thread."""

    def __init__(self, *, page_size: int = 50, key: str | None = None, log=None):
        from app.refund_agent.serve import ChatServer, Options

        self.page_size = page_size  # a real server may answer fewer than `limit`: pages are this long at most
        self.key = key  # None: any non-empty bearer token is accepted
        self.datasets: dict[str, Dataset] = {}
        self.received: list[dict] = []  # every request: method, path, query, body (never the key)
        self.experiments: list[dict] = []  # validated upload bodies, as received
        self._chat = ChatServer(Options(workers=0)).app()  # the emulator's own app answers the router
        self._log = log
        self._lock = threading.Lock()
        self._next = 0
        self.url = ""

    # -- datasets ---------------------------------------------------------------------

    def add_dataset(self, dataset_id: str, points: Iterable[dict]) -> list[str]:
        """Datapoints ({inputs, expected_output}, as DatapointInput) into a dataset; their ids."""
        ds = self.datasets.setdefault(dataset_id, Dataset())
        return [self._store(ds, dataset_id, p)["_id"] for p in points]

    def add_jsonl(self, dataset_id: str, path: str) -> list[str]:
        """A project JSONL dataset as orq holds it after promote.py --upload (inputs carry the row id)."""
        points = []
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                points.append({"inputs": {"id": row["id"], **row["inputs"]},
                               "expected_output": row.get("expected_output")})
        return self.add_dataset(dataset_id, points)

    def _store(self, ds: Dataset, dataset_id: str, point: dict) -> dict:
        from orq_ai_sdk.models import Datapoint1

        with self._lock:
            self._next += 1
            n = self._next
        wire = {"_id": f"01STANDIN{n:017d}", "dataset_id": dataset_id, "created_by_id": "standin",
                "updated_by_id": "standin", **{k: v for k, v in point.items() if v is not None}}
        Datapoint1.model_validate(wire)  # what the SDK will parse it as
        ds.points.append(wire)
        return wire

    def list_datapoints(self, dataset_id: str, query: dict) -> dict:
        from orq_ai_sdk.models import ListDatapointsResponse, ListDatasetDatapointsRequest

        try:
            req = ListDatasetDatapointsRequest.model_validate({"dataset_id": dataset_id, **query})
        except ValidationError as exc:
            raise Refused(400, f"query: {exc.errors()[0]['msg']}") from None
        unknown = set(query) - set(ListDatasetDatapointsRequest.model_fields)
        if unknown:
            raise Refused(400, f"query: unknown parameter {sorted(unknown)[0]!r}")
        if dataset_id not in self.datasets:
            raise Refused(404, f"dataset {dataset_id} not found")
        points = self.datasets[dataset_id].points
        start = 0
        if req.starting_after is not None:
            ids = [p["_id"] for p in points]
            if req.starting_after not in ids:
                raise Refused(400, f"starting_after {req.starting_after!r} is not a datapoint of {dataset_id}")
            start = ids.index(req.starting_after) + 1
        size = min(req.limit or 10, self.page_size)
        page = points[start:start + size]
        reply = {"object": "list", "data": page, "has_more": start + size < len(points)}
        return ListDatapointsResponse.model_validate(reply).model_dump(mode="json", by_alias=True, exclude_none=True)

    def create_datapoints(self, dataset_id: str, body: Any) -> list[dict]:
        from orq_ai_sdk.models import DatapointInput

        if not isinstance(body, list) or not body:
            raise Refused(422, "body: a non-empty list of datapoints")
        if dataset_id not in self.datasets:
            raise Refused(404, f"dataset {dataset_id} not found")
        for i, point in enumerate(body):
            validated(DatapointInput, point, dump=lambda m: m.model_dump(mode="json", by_alias=True),
                      where=f"body[{i}]")
        return [self._store(self.datasets[dataset_id], dataset_id, p) for p in body]

    # -- experiments ------------------------------------------------------------------

    def receive_results(self, body: Any) -> dict:
        from evaluatorq.send_results import OrqResponse, SendResultsPayload

        if not isinstance(body, dict):
            raise Refused(422, "body: an object")
        payload = validated(SendResultsPayload, body, dump=evaluatorq_dump, where="body",
                            fields=lambda b: unalias(SendResultsPayload, b))
        if payload.dataset_id is not None and payload.dataset_id not in self.datasets:
            raise Refused(404, f"datasetId {payload.dataset_id} not found")
        with self._lock:
            self.experiments.append(body)
            n = len(self.experiments)
        reply = {"sheet_id": f"sheet_{n}", "manifest_id": f"manifest_{n}", "experiment_name": payload.name,
                 "rows_created": len(payload.results), "workspace_key": "standin",
                 "experiment_url": f"{self.url}/experiments/sheet_{n}"}
        return OrqResponse.model_validate(reply).model_dump(mode="json")

    # -- the router -------------------------------------------------------------------

    def router_body(self, body: Any) -> dict:
        """A router chat body checked against orq-ai-sdk's model, with the model renamed to the
        emulator's (`northwind/offline` -> `offline`)."""
        from orq_ai_sdk.models import CreateChatCompletionRequestBody as Body

        if not isinstance(body, dict):
            raise Refused(422, "body: an object")
        fields = {f.alias or n for n, f in Body.model_fields.items()} | set(Body.model_fields)
        if unknown := sorted(set(body) - fields):
            raise Refused(422, f"body.{unknown[0]}: not a field of the router's chat completions body")
        try:
            Body.model_validate(body)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise Refused(422, f"body: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
        model = str(body.get("model", ""))
        provider, slash, name = model.partition("/")
        if not slash or not provider:
            raise Refused(404, f"model {model!r}: the router names models <provider>/<model>")
        return {**body, "model": name}

    # -- HTTP -------------------------------------------------------------------------

    def _record(self, entry: dict) -> None:
        with self._lock:
            self.received.append(entry)
            if self._log is not None:
                self._log.write(json.dumps(entry) + "\n")
                self._log.flush()

    def _authorised(self, headers: dict) -> bool:
        token = headers.get("authorization", "").removeprefix("Bearer ").strip()
        return bool(token) and (self.key is None or token == self.key)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return
        from starlette.requests import Request
        from starlette.responses import JSONResponse

        request = Request(scope, receive)
        path, method = scope["path"], scope["method"]
        raw = await request.body()
        try:
            body = json.loads(raw) if raw and "json" in request.headers.get("content-type", "") else None
        except ValueError:
            body = None
        query = dict(parse_qsl(scope.get("query_string", b"").decode()))
        entry = {"method": method, "path": path, "query": query, "body": body}
        if path.endswith("/v1/traces"):  # OTLP protobuf: counted, not parsed
            entry["body"] = {"bytes": len(raw)}
        self._record(entry)
        try:
            if not self._authorised(dict(request.headers)):
                raise Refused(401, "missing or wrong API key")
            router = next((p for p in ROUTER_PREFIXES if path.startswith(p + "/")), None)
            if router is not None:
                return await self._forward(scope, send, path.removeprefix(router), body, raw)
            parts = path.strip("/").split("/")
            if parts[:2] == ["v2", "datasets"] and len(parts) == 4 and parts[3] == "datapoints":
                reply = (self.list_datapoints(parts[2], query) if method == "GET"
                         else self.create_datapoints(parts[2], body) if method == "POST" else None)
            elif path == "/v2/spreadsheets/evaluations/receive" and method == "POST":
                reply = self.receive_results(body)
            elif path.startswith("/v2/otel/") and method == "POST":
                reply = {}
            else:
                reply = None
            if reply is None:
                raise Refused(404, f"{method} {path}: not an endpoint of this stand-in")
        except Refused as exc:
            entry["refused"] = f"{exc.status} {exc}"
            response = JSONResponse({"message": str(exc), "code": exc.status}, status_code=exc.status)
            return await response(scope, receive, send)
        return await JSONResponse(reply)(scope, receive, send)

    async def _forward(self, scope, send, rest: str, body: Any, raw: bytes):
        """A router request to the emulator's app (/v1/...), the model renamed."""
        if rest == "/chat/completions" and scope["method"] == "POST":
            raw = json.dumps(self.router_body(body)).encode()
        elif rest != "/models":
            raise Refused(404, f"{scope['method']} {scope['path']}: not a router endpoint of this stand-in")
        headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"content-length"]
        inner = {**scope, "path": f"/v1{rest}", "raw_path": f"/v1{rest}".encode(),
                 "headers": [*headers, (b"content-length", str(len(raw)).encode())]}
        sent = False

        async def receive_once():
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": raw, "more_body": False}

        await self._chat(inner, receive_once, send)

    # -- serving ----------------------------------------------------------------------

    @contextlib.contextmanager
    def running(self, host: str = "127.0.0.1", port: int = 0):
        """Serve on host:port (0: a free port) in a thread; ready when this yields."""
        import asyncio

        import uvicorn

        from app.refund_agent.serve import bind

        sock = bind(host, port)
        self.url = f"http://{host}:{sock.getsockname()[1]}"
        ready = threading.Event()

        class Server(uvicorn.Server):
            def install_signal_handlers(self):  # a thread of the test process: its signals are not ours
                pass

            async def startup(self, sockets=None):
                await super().startup(sockets)
                ready.set()

        server = Server(uvicorn.Config(self, log_level="warning", access_log=False, lifespan="off"))
        thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
        thread.start()
        try:
            if not ready.wait(START_TIMEOUT_S):
                raise RuntimeError("the orq stand-in did not start")
            yield self
        finally:
            server.should_exit = True
            thread.join(30)
            sock.close()

    @property
    def router_url(self) -> str:
        return self.url + ROUTER_PREFIXES[0]

    def env(self) -> dict[str, str]:
        """The variables that point evaluatorq, orq-ai-sdk and the orq: models here."""
        return {"ORQ_BASE_URL": self.url, "ORQ_ROUTER_URL": self.router_url}


def _dataset_arg(value: str) -> tuple[str, str]:
    name, eq, path = value.partition("=")
    if not eq or not name or not path:
        raise argparse.ArgumentTypeError(f"{value!r}: write ID=PATH.jsonl")
    return name, path


def main(argv: list[str] | None = None) -> int:
    import asyncio

    import uvicorn

    from app.refund_agent.serve import bind

    p = argparse.ArgumentParser(prog="python -m app.orq_standin", description=__doc__.splitlines()[0])
    p.add_argument("--dataset", action="append", type=_dataset_arg, default=[], metavar="ID=PATH",
                   help="serve a JSONL dataset under this dataset id (repeatable)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8100, help="0 picks a free port")
    p.add_argument("--page-size", type=int, default=50, help="datapoints per page at most (default 50)")
    p.add_argument("--key", help="accept only this API key (default: any non-empty key)")
    p.add_argument("--log", help="append every request received to this JSONL file")
    a = p.parse_args(argv)
    log = open(a.log, "a", encoding="utf-8") if a.log else None  # noqa: SIM115 (open for the server's life)
    standin = OrqStandIn(page_size=a.page_size, key=a.key, log=log)
    try:
        for name, path in a.dataset:
            standin.add_jsonl(name, path)
    except (OSError, ValueError, KeyError) as exc:
        print(f"error: --dataset: {exc}", file=sys.stderr)
        return 2
    try:
        sock = bind(a.host, a.port)
    except OSError as exc:
        print(f"error: cannot listen on {a.host}:{a.port}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    standin.url = f"http://{a.host}:{sock.getsockname()[1]}"

    class Server(uvicorn.Server):
        async def startup(self, sockets=None):
            await super().startup(sockets)
            if self.started:
                print(f"serving on {standin.url}", flush=True)
                print(" ".join(f"{k}={v}" for k, v in standin.env().items()), flush=True)

    try:
        asyncio.run(Server(uvicorn.Config(standin, log_level="warning", access_log=False,
                                          lifespan="off")).serve(sockets=[sock]))
    except KeyboardInterrupt:
        pass
    finally:
        if log is not None:
            log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
