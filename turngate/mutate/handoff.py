"""Survivors handed to `evals review` (`evals mutate ... --review DIR`).

A survivor is a plausible edit whose changed behaviour no scorer failed: a failure mode the suite
is missing. The review workbench is where a failure mode is named and turned into a scorer (its
taxonomy export writes a skeleton and a test for every mode no scorer covers), so each survivor
becomes a draft of one, in a folder `evals review` opens as it stands:

    DIR/<mutant id>.json        each survivor's runs its behaviour was compared on (copied: the
                                review keys notes by a record's digest, so a copy reads the same,
                                and DIR stays whole when OUT is cleaned)
    DIR/mutate.review.jsonl     a review file (turngate/review@1): per survivor a mode, its changed
                                runs noted (what changed, before -> after; why no scorer failed;
                                the suggested row) and assigned to it; the page opens on the first

Every note is of a survivor's own run: the baseline's runs are not noted (the note quotes what
they did), so each observation in the taxonomy is a changed run and its shares count only those.

No run is labelled: whether a changed run is a failure is the reviewer's verdict, and labels are
what the judge is calibrated against. The notes and modes are drafts to rename, merge and
rewrite. Where behaviour was compared at temperature 0 (runner.py), those runs are handed over.
"""
from __future__ import annotations

import hashlib
import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from turngate.core.atomic_write import write_atomic
from turngate.core.errors import ConfigError
from turngate.mutate.classify import SURVIVED
from turngate.mutate.runner import MutationRun

REVIEW_FILE = "mutate.review.jsonl"
_MAX = 3900  # under the review file's 4,000 characters of a note or a definition


@dataclass(frozen=True)
class Handoff:
    folder: Path
    review: Path
    records: list[Path]
    survivors: int
    runs: int  # the survivors' changed runs noted

    @property
    def command(self) -> str:
        return shlex.join(["evals", "review", *map(str, self.records), "--notes", str(self.review), "--sample", "0"])


def check_folder(path: str | Path, force: bool = False) -> Path:
    """Before any gate runs: DIR may exist, but its review file holds a reviewer's work, never
    replaced without --force."""
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"--review {path}: not a directory")
    if (folder / REVIEW_FILE).exists() and not force:
        raise ConfigError(f"--review {path}: {REVIEW_FILE} already exists (it may hold notes); use --force to "
                          "replace it, or another folder")
    return folder


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "mutant"


def _mode_id(mutant_id: str) -> str:
    return "m-" + hashlib.sha256(mutant_id.encode()).hexdigest()[:12]


def _cut(text: str) -> str:
    return text if len(text) <= _MAX else text[:_MAX - 1] + "…"


def write_handoff(run: MutationRun, folder: str | Path) -> Handoff:
    """The survivors of `run` as a review folder (above). Every file is made before any is written,
    each written whole; a survivor's results file that cannot be read is one line (ConfigError)."""
    from turngate.review.items import load_items
    from turngate.review.store import SCHEMA, now, parse_event

    folder = Path(folder)
    survivors = [o for o in run.outcomes if o.result.status == SURVIVED and o.results]
    if not survivors:  # nothing to review: no folder of empty files
        return Handoff(folder, folder / REVIEW_FILE, [], 0, 0)
    copies = {folder / f"{_safe(o.mutant.id)}.json": o.probe or o.results for o in survivors}  # dest -> source
    blobs = {}
    for dest, src in copies.items():
        try:
            blobs[dest] = Path(src).read_bytes()
        except OSError as exc:
            raise ConfigError(f"{src}: cannot read {dest.stem}'s results file ({exc.strerror or exc})") from None
    for dest, data in blobs.items():
        write_atomic(dest, data, what="a survivor's results file")
    records = list(copies)  # in mutant order
    items = {(Path(it.source.path), it.row_id, it.trial): it for it in load_items(records)
             if it.stage == "gate"}  # the gate's own seeds: what behaviour was compared on

    events: list[dict] = []
    noted = 0
    for o, mine in zip(survivors, records, strict=True):
        mode = _mode_id(o.mutant.id)
        changed = o.result.changed
        events.append({"op": "mode.create", "mode": mode, "name": f"{o.mutant.id} survives",
                       "definition": _cut(f"{o.mutant.description}: behaviour changed on {len(changed)} row(s) and "
                                          "the gate passed (evals mutate; a draft: name the failure it shows, or "
                                          "merge it with another survivor's mode)")})
        for change in changed:
            for trial in change.seeds:  # RowChange.seeds: the trials that differ
                it = items.get((mine, change.row_id, trial))
                if it is None:
                    continue
                text = f"[evals mutate {o.mutant.id}] {change.what}; {change.why or 'the gate passed'}" + (
                    f"; would catch it: {change.suggest}" if change.suggest else "")
                events += [{"op": "note", "source": it.source.digest, "run": it.run, "text": _cut(text)},
                           {"op": "assign", "source": it.source.digest, "run": it.run, "mode": mode}]
                noted += 1
    first = next((e for e in events if e["op"] == "assign"), None)
    if first is not None:
        events.append({"op": "position", "source": first["source"], "run": first["run"]})
    stamp = now()
    sources = list({it.source.digest: {"digest": it.source.digest, "path": it.source.path, "kind": it.source.kind}
                    for it in items.values()}.values())
    lines = [json.dumps({"schema": SCHEMA, "op": "header", "at": stamp, "sources": sources}, ensure_ascii=False)]
    for e in events:
        parse_event({**e, "at": stamp})  # the review's own rules: a draft it would refuse is a bug here
        lines.append(json.dumps({**e, "at": stamp}, ensure_ascii=False))
    review = write_atomic(folder / REVIEW_FILE, "\n".join(lines) + "\n", what="the review file", private=True)
    return Handoff(folder, review, records, len(survivors), noted)
