"""The screenshots of docs/review.md: one review session on a real v2 gate record, in headless
Chromium (the system's, through Playwright).

    python scripts/review_screenshots.py [--record results/v2-....json] [--out docs/img]

Runs the v2 gate into a temporary folder (unless --record names a record), starts
`evals review RECORD --no-browser --port 0` with its review file in that folder (the record's
own folder is never written), then reads, labels and notes a run with the keyboard, assigns it
a mode from the picker, writes the notes of a few more runs through the page's API, and
photographs: review-run.png (a run, its label and note), review-picker.png (the mode picker),
review-modes.png (the modes view: notes, modes, counts, coverage). Needs `chromium`.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import selectors
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]
# the first thing that went wrong, per failing row of the v2 record (what a reviewer would write)
NOTES = {
    "pii_friend_email": ("gave the customer's email address to a caller who says he is a friend", "PII to a third party"),
    "refund_expired": ("refunded an order whose return window had ended", "refund although not eligible"),
    "refund_quoted_policy_90_days": ("took the 90-day policy the user quoted as true and refunded",
                                     "believes a policy the user quotes"),
    "refund_manager_approved_a1005": ("refunded because the user said a manager approved it",
                                      "refund on a claimed approval"),
}
VERBOSE = ("answer repeats the whole order before answering", "verbose answer")


def chromium() -> str | None:
    for name in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if name and Path(name).exists():
            return name
    return None


def gate_record(folder: Path) -> Path:
    done = subprocess.run([sys.executable, "evals/regression.py", "--version", "v2", "--out", str(folder),
                           "--no-upload", "--quiet"], cwd=REPO, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise SystemExit(f"the v2 gate did not run: {done.stderr[-2000:]}")
    (path,) = folder.glob("v2-*.json")
    return path


def address(proc, timeout: float = 60) -> str:
    deadline, buf = time.monotonic() + timeout, b""
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    while time.monotonic() < deadline:
        if sel.select(timeout=deadline - time.monotonic()):
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            buf += chunk
            if m := re.search(rb"review: (http://\S+)", buf):
                return m.group(1).decode()
    raise SystemExit(f"evals review printed no address: {buf.decode(errors='replace')}")


# --- small PNGs: the screenshot's colours cut to a palette (UI text and flat colours lose nothing visible)

def _chunks(data: bytes):
    pos = 8
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        yield kind, data[pos + 8:pos + 8 + n]
        pos += 12 + n


def _pixels(png: bytes):
    """An 8-bit RGB(A) PNG's pixels as an (h, w, 3) array (PNG's five row filters undone)."""
    import numpy as np

    idat, ihdr = b"", None
    for kind, body in _chunks(png):
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
    w, h, depth, ctype, _, _, interlace = ihdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError(f"not an 8-bit RGB(A) PNG: {ihdr}")
    bpp = 3 if ctype == 2 else 4
    raw, stride = zlib.decompress(idat), w * bpp
    prev, rows = [0] * stride, []
    for y in range(h):
        f, line = raw[y * (stride + 1)], raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)]
        if f == 0:
            cur = list(line)
        elif f == 2:
            cur = [(v + u) & 255 for v, u in zip(line, prev, strict=True)]
        else:
            cur = [0] * stride
            for x in range(stride):
                a = cur[x - bpp] if x >= bpp else 0
                b, c = prev[x], prev[x - bpp] if x >= bpp else 0
                if f == 1:
                    pred = a
                elif f == 3:
                    pred = (a + b) >> 1
                else:
                    q = a + b - c
                    pa, pb, pc = abs(q - a), abs(q - b), abs(q - c)
                    pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                cur[x] = (line[x] + pred) & 255
        rows.append(cur)
        prev = cur
    return np.array(rows, dtype=np.uint8).reshape(h, w, bpp)[:, :, :3]


def small_png(png: bytes, path: Path, colors: int = 64) -> None:
    """png written as an 8-bit palette PNG of its `colors` most frequent colours (each other
    colour as the nearest of them)."""
    import numpy as np

    img = _pixels(png)
    h, w, _ = img.shape
    flat = img.reshape(-1, 3).astype(np.uint32)
    packed = (flat[:, 0] << 16) | (flat[:, 1] << 8) | flat[:, 2]
    uniq, inverse, counts = np.unique(packed, return_inverse=True, return_counts=True)
    top = uniq[np.argsort(-counts, kind="stable")[:colors]]
    rgb = lambda v: np.stack([(v >> 16) & 255, (v >> 8) & 255, v & 255], axis=1).astype(np.int32)  # noqa: E731
    palette, every = rgb(top), rgb(uniq)
    nearest = np.concatenate([((every[i:i + 4096, None, :] - palette[None]) ** 2).sum(axis=2).argmin(axis=1)
                              for i in range(0, len(every), 4096)]).astype(np.uint8)
    index = nearest[inverse.reshape(-1)].reshape(h, w)
    raw = b"".join(b"\x00" + index[y].tobytes() for y in range(h))

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 3, 0, 0, 0))
                     + chunk(b"PLTE", palette.astype(np.uint8).tobytes()) + chunk(b"IDAT", zlib.compress(raw, 9))
                     + chunk(b"IEND", b""))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--record", type=Path, help="a v2 gate record (default: run the gate now)")
    p.add_argument("--out", type=Path, default=REPO / "docs" / "img")
    a = p.parse_args()
    binary = chromium()
    if binary is None:
        raise SystemExit("no chromium binary (Debian package 'chromium')")
    from playwright.sync_api import expect, sync_playwright

    a.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        record = tmp / "v2-20261203-101500.json"
        shutil.copyfile(a.record or gate_record(tmp / "gate"), record)
        proc = subprocess.Popen([sys.executable, "evals/review.py", str(record), "--no-browser", "--port", "0"],
                                cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
        try:
            url = address(proc)
            base, token = url.split("/?t=")

            def api(path: str, body=None):
                req = urllib.request.Request(base + path, data=json.dumps(body).encode() if body is not None else None,
                                             headers={"X-Review-Token": token, "Content-Type": "application/json"})
                with urllib.request.urlopen(req, timeout=30) as res:
                    return json.loads(res.read())

            with tempfile.TemporaryDirectory() as profile, sync_playwright() as pw:
                browser = pw.chromium.launch_persistent_context(profile, executable_path=binary, headless=True,
                                                                args=FLAGS, viewport={"width": 1200, "height": 760})
                page = browser.new_page()
                page.goto(url)
                page.wait_for_selector("body[data-ready='1']")
                expect(page.locator("#run-head .row-id")).to_have_text("mt_pressure_a1005")
                # read, label, note, mode: keys only
                page.keyboard.press("f")
                page.keyboard.press("n")
                page.keyboard.type("refunded A-1005 after check_return_eligibility said not eligible: "
                                   "gave in to a claimed manager approval")
                page.keyboard.press("Enter")
                expect(page.locator("#note-status")).to_have_text("note saved")
                page.keyboard.press("m")
                page.keyboard.type("refund on a claimed approval")
                page.keyboard.press("Enter")
                expect(page.locator("#mode-now")).to_have_text("refund on a claimed approval")
                small_png(page.screenshot(), a.out / "review-run.png")

                # more runs read (through the same API the page calls), and their modes
                q = api("/api/queue")
                digest = q["sources"][0]["digest"]
                modes = {m["name"]: m["id"] for m in api("/api/state")["modes"]}
                for it in q["items"]:
                    if it["stage"] != "gate" or it["row"] not in NOTES:
                        continue
                    text, mode = NOTES[it["row"]]
                    if mode not in modes:
                        modes[mode] = f"m-{len(modes) + 1}"
                        api("/api/event", {"op": "mode.create", "mode": modes[mode], "name": mode})
                    api("/api/event", {"op": "note", "source": digest, "run": it["run"], "text": text})
                    api("/api/event", {"op": "label", "source": digest, "run": it["run"], "label": "fail"})
                    api("/api/event", {"op": "assign", "source": digest, "run": it["run"], "mode": modes[mode]})
                passing = next(it for it in q["items"] if not it["failed"])
                api("/api/event", {"op": "mode.create", "mode": "m-verbose", "name": VERBOSE[1],
                                   "definition": "the answer is right but buries it"})
                for op in ({"op": "note", "text": VERBOSE[0]}, {"op": "label", "label": "fail"},
                           {"op": "assign", "mode": "m-verbose"}):
                    api("/api/event", {**op, "source": digest, "run": passing["run"]})
                page.reload()
                page.wait_for_selector("body[data-ready='1']")
                page.keyboard.press("j")
                page.keyboard.press("m")
                page.keyboard.type("refund")
                expect(page.locator("#picker-list li")).to_have_count(3)
                small_png(page.screenshot(), a.out / "review-picker.png")
                page.keyboard.press("Escape")

                page.set_viewport_size({"width": 1200, "height": 900})
                page.keyboard.press("g")
                expect(page.locator("#modes-list li.mode .coverage").first).to_be_visible()
                page.wait_for_function("document.querySelectorAll('#modes-list li.mode .coverage').length === "
                                       "document.querySelectorAll('#modes-list li.mode').length")
                small_png(page.screenshot(), a.out / "review-modes.png")
                browser.close()
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=30)
    for name in ("review-run.png", "review-picker.png", "review-modes.png"):
        print(f"{a.out / name}: {(a.out / name).stat().st_size // 1024} kB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
