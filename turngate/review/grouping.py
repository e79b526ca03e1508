"""Suggested groups of notes (axial coding's first draft): notes that say the same thing in
similar words, grouped offline, each with a name made of the words they share.

    groups = suggest(state.notes)               # deterministic, no model, no network
    names = name_groups(groups, "openai:gpt-4.1-mini")  # optional: a model names them

How notes are compared: each note is normalised (lower case; order ids, numbers, amounts, dates
and email addresses dropped; tool names split into words; stopwords dropped; a light suffix
stemmer so "refunded", "refunds" and "refund" meet), then every pair is scored with rapidfuzz's
`token_set_ratio` (0-100, as a share 0-1): word overlap that tolerates one note being longer
than the other, and typos. The notes are clustered bottom-up with **average linkage**: the two
groups whose notes are most similar on average merge, until no two groups are at least
`threshold` similar. Every note ends in exactly one suggestion: the groups of two or more notes
first (largest first, then most cohesive), then the notes that joined no group, one suggestion
each (singletons, score 0.0), so a page can show them as "ungrouped".

The threshold, 0.58, was chosen on tuning notes only (tests/data/review/notes_tune.jsonl: 28
notes of our own and the 28 observations of the first, hand-kept evals/TAXONOMY.md, each with the theme a person gave
it): mean B-cubed F1 over the two sets peaks at 0.723 at 0.56 (a 0.02 grid, 0.40-0.80); of the
thresholds within 0.015 of the peak (0.46, 0.52-0.58) the highest, for the purest groups
(precision 0.89 against 0.67 at 0.46: merging two suggestions is one step, splitting one means
rereading its notes). `python scripts/review_grouping_study.py` prints the sweep. Checked, unchanged, on held-out notes written before
any tuning (notes_heldout.jsonl): every theme recovered, no group mixing two themes; docs/review.md
has the numbers. Offline grouping sees words, not meaning: two notes that describe the same
failure in different words ("ok false" / "refused") stay apart. The reviewer merges, splits and
renames; these are only suggestions.

A suggestion's offline name is the informative words most of its notes share, in the order the
notes use them; `name_groups` asks a model (openai:<m> or orq:<provider/m>) for a short mode
name and a one-line definition per group instead, and falls back to the offline names, with a
warning, on any failure.
"""
from __future__ import annotations

import json
import re
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from turngate.core.errors import ConfigError

RunKey = tuple[str, str]

THRESHOLD = 0.58  # chosen on the tuning notes only (module docstring; docs/review.md)
NAME_WORDS = 3  # words in an offline name
MAX_NAME = 80  # characters of a name a model proposes (the store takes 200)
MAX_DEFINITION = 300

STOPWORDS = frozenset("""
a about above after again against all also although am an and any are as at be because been before being
below between both but by can could did do does doing done down during each either else even ever every
few for from further had has have having he her here hers him his how however i if in into is it its
itself just let me more most much my no nor not now of off on once only or other our out over own same
she should so some such than that the their them then there these they this those though through to too
under until up upon us very via was we were what when where whether which while who whom why will with
would yet you your yours instead still again already really without within despite anyway
""".split())
# negations: kept for the similarity ("no escalation" is not "escalation"), left out of names
KEEP = frozenset({"never", "without", "instead", "no", "not"})

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_ID = re.compile(r"\b[a-z]{1,3}-\d+\b")  # order and customer ids: A-1005, C-100, W-0001
_NUMBER = re.compile(r"\b\d[\d.,:/%-]*\w*")  # amounts, dates, percentages, "30-day"
_WORD = re.compile(r"[a-z][a-z']*")


def _stem(word: str) -> str:
    """A light suffix stemmer: enough for "refunded"/"refunds"/"refunding" to meet."""
    word = word.removesuffix("'s").strip("'")
    for suffix, keep in (("ies", "y"), ("ied", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", ""), ("ly", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            return word[: len(word) - len(suffix)] + keep
    return word


def _words(note: str) -> list[tuple[str, str]]:
    """(stem, surface) of the informative words of a note, in order."""
    text = note.lower()
    text = _EMAIL.sub(" email ", text)
    text = _ID.sub(" ", text)
    text = _NUMBER.sub(" ", text)
    text = text.replace("_", " ")
    out = []
    for w in _WORD.findall(text):
        w = w.strip("'")
        if len(w) < 2 or (w in STOPWORDS and w not in KEEP):
            continue
        out.append((_stem(w), w.removesuffix("'s")))
    return out


def normalise(note: str) -> str:
    """A note as the similarity sees it: its informative words, stemmed."""
    return " ".join(s for s, _ in _words(note))


@dataclass
class Suggestion:
    """One suggested group: its runs and their notes (same order), an offline name, its
    cohesion (mean pairwise similarity of its notes, 0-1; 0.0 for a single note) and an
    offline definition (its most typical note: the one most similar to the others)."""
    runs: list[RunKey]
    notes: list[str]
    name: str
    score: float
    definition: str = ""

    def __len__(self) -> int:
        return len(self.runs)


def similarity(texts: Sequence[str]):
    """The pairwise similarity matrix (0-1) of normalised notes: rapidfuzz token_set_ratio."""
    import numpy as np
    from rapidfuzz import fuzz, process

    if not texts:
        return np.zeros((0, 0))
    sim = process.cdist(texts, texts, scorer=fuzz.token_set_ratio, dtype=np.float64, workers=1) / 100.0
    empty = np.array([not t for t in texts])
    sim[empty, :] = 0.0  # a note with no informative word is like no other note
    sim[:, empty] = 0.0
    np.fill_diagonal(sim, 1.0)
    return sim


def cluster(sim, threshold: float, linkage: str = "average") -> list[list[int]]:
    """Agglomerative clustering of a similarity matrix: merge the most similar pair of groups
    (average or complete linkage) while it is at least `threshold`; ties go to the lowest
    indices. Groups as sorted index lists, in order of their first index."""
    import numpy as np

    n = sim.shape[0]
    if n == 0:
        return []
    s = sim.astype(np.float64).copy()
    np.fill_diagonal(s, -np.inf)
    size = np.ones(n)
    alive = np.ones(n, dtype=bool)
    members: dict[int, list[int]] = {i: [i] for i in range(n)}
    while alive.sum() > 1:
        masked = np.where(alive[:, None] & alive[None, :], s, -np.inf)
        flat = int(np.argmax(masked))  # the first maximum in row-major order: deterministic
        i, j = divmod(flat, n)
        if masked[i, j] < threshold - 1e-12:
            break
        i, j = min(i, j), max(i, j)
        if linkage == "average":
            merged = (size[i] * s[i] + size[j] * s[j]) / (size[i] + size[j])
        elif linkage == "complete":
            merged = np.minimum(s[i], s[j])
        else:
            raise ConfigError(f"linkage {linkage!r}: use average or complete")
        s[i, :] = merged
        s[:, i] = merged
        s[i, i] = -np.inf
        alive[j] = False
        s[j, :] = -np.inf
        s[:, j] = -np.inf
        size[i] += size[j]
        members[i] += members.pop(j)
    return sorted((sorted(m) for k, m in members.items() if alive[k]), key=lambda m: m[0])


def offline_name(notes: Sequence[str], words: int = NAME_WORDS) -> str:
    """The informative words most of the notes share (a bigram first when most share one), in
    the order the notes use them: "refunded outside window"."""
    per_note = [_words(n) for n in notes]
    df: Counter[str] = Counter()
    bigrams: Counter[tuple[str, str]] = Counter()
    surface: dict[str, Counter[str]] = {}
    position: dict[str, list[float]] = {}
    first: dict[str, int] = {}
    for ws in per_note:
        for k, (stem, word) in enumerate(ws):
            surface.setdefault(stem, Counter())[word] += 1
            position.setdefault(stem, []).append(k / max(len(ws) - 1, 1))
            first.setdefault(stem, len(first))
        df.update({s for s, w in ws if w not in KEEP})
        bigrams.update({(a[0], b[0]) for a, b in zip(ws, ws[1:], strict=False) if a[0] != b[0]})
    if not df:
        return "(no words)"
    need = 2 if len(notes) > 1 else 1
    chosen: list[str] = []
    if len(notes) > 1 and bigrams:
        (a, b), count = min(bigrams.items(), key=lambda kv: (-kv[1], first[kv[0][0]], first[kv[0][1]]))
        if count >= max(need, (len(notes) + 1) // 2):
            chosen += [a, b]
    ranked = sorted(df, key=lambda s: (-df[s], first[s]))
    for stem in ranked:
        if len(chosen) >= words:
            break
        if stem not in chosen and (df[stem] >= need or not chosen):
            chosen.append(stem)
    if not chosen:
        chosen = ranked[:words]
    chosen.sort(key=lambda s: (sum(position[s]) / len(position[s]), first[s]))
    # a bigram stays in its own order even if the mean positions say otherwise
    return " ".join(surface[s].most_common(1)[0][0] for s in chosen)


def suggest(notes: dict[RunKey, str], *, threshold: float = THRESHOLD, linkage: str = "average") -> list[Suggestion]:
    """Suggested groups of the notes (module docstring). Deterministic: the same notes give the
    same suggestions whatever their order in the dict. Empty notes are left out."""
    if not 0.0 <= threshold <= 1.0:
        raise ConfigError(f"threshold {threshold}: a similarity between 0 and 1")
    keys = sorted(k for k, v in notes.items() if v and v.strip())
    texts = [notes[k].strip() for k in keys]
    norm = [normalise(t) for t in texts]
    sim = similarity(norm)
    out = []
    for group in cluster(sim, threshold, linkage):
        runs = [keys[i] for i in group]
        group_notes = [texts[i] for i in group]
        if len(group) > 1:
            sub = sim[group][:, group]
            pairs = len(group) * (len(group) - 1)
            score = float((sub.sum() - len(group)) / pairs)
            medoid = group[int(((sub.sum(axis=1) - 1) / (len(group) - 1)).argmax())]
        else:
            score, medoid = 0.0, group[0]
        out.append(Suggestion(runs, group_notes, offline_name(group_notes), round(score, 4), texts[medoid]))
    out.sort(key=lambda s: (len(s) == 1, -len(s), -s.score, s.runs[0]))
    return out


# --- naming with a model ----------------------------------------------------------------

PROMPT = """You help with error analysis of an AI agent. A reviewer read failing runs and wrote one
note per run on the first thing that went wrong. The notes below are grouped by similarity.
For each group, give a failure-mode name (2-6 words, no trailing period) and a one-line
definition that says when a run belongs to the mode (pass/fail language, one sentence).

{groups}

Reply with JSON only: {{"modes": [{{"group": 1, "name": "...", "definition": "..."}}, ...]}}, one
entry per group, in order."""

MAX_NOTES_SHOWN = 12  # per group in the prompt
MAX_NOTE_CHARS = 300


class ModeName(str):
    """A name for a group (a str), with a one-line `definition` ("" when there is none)."""
    definition: str = ""

    def __new__(cls, name: str, definition: str = "") -> ModeName:
        obj = super().__new__(cls, name)
        obj.definition = definition
        return obj


def _prompt(suggestions: Sequence[Suggestion]) -> str:
    parts = []
    for n, s in enumerate(suggestions, start=1):
        shown = [f"  - {note[:MAX_NOTE_CHARS]}" for note in s.notes[:MAX_NOTES_SHOWN]]
        more = len(s.notes) - len(shown)
        parts.append(f"Group {n} ({len(s.notes)} notes):\n" + "\n".join(shown) + (f"\n  (+{more} more)" if more > 0 else ""))
    return PROMPT.format(groups="\n\n".join(parts))


def _clean(text: object, limit: int) -> str:
    return " ".join(str(text).split())[:limit].rstrip(" .") if text is not None else ""


def read_names(text: str, count: int) -> list[tuple[str, str] | None]:
    """The (name, definition) per group in a model's reply; None for a group it did not name.
    ValueError when the reply is not the JSON asked for at all."""
    match = re.search(r"\{.*\}", text, re.S)
    if not match:
        raise ValueError(f"the reply is not JSON: {text[:120]!r}")
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError as exc:
        raise ValueError(f"the reply is malformed JSON ({exc.msg})") from None
    modes = data.get("modes") if isinstance(data, dict) else None
    if not isinstance(modes, list):
        raise ValueError("the reply has no list 'modes'")
    out: list[tuple[str, str] | None] = [None] * count
    for k, entry in enumerate(modes):
        if not isinstance(entry, dict):
            continue
        group = entry.get("group", k + 1)
        if not isinstance(group, int) or isinstance(group, bool) or not 1 <= group <= count:
            continue
        name = _clean(entry.get("name"), MAX_NAME)
        if name and out[group - 1] is None:
            out[group - 1] = (name, _clean(entry.get("definition"), MAX_DEFINITION))
    return out


def chat_model(spec: str, *, timeout: float, retries: int):
    """The namer's chat model: openai:<m> (OPENAI_API_KEY, OPENAI_BASE_URL) or orq:<provider/m>
    (ORQ_API_KEY, ORQ_ROUTER_URL), built the way the agent's provider models are
    (turngate.jobs.models), not counted against an agent's --max-model-calls."""
    import os

    from turngate.jobs.models import ORQ_ROUTER, parse_spec

    parsed = parse_spec(spec)
    if parsed.provider not in ("openai", "orq"):
        raise ConfigError(f"model {spec!r}: naming needs openai:<model> or orq:<provider/model>")
    key_var = "OPENAI_API_KEY" if parsed.provider == "openai" else "ORQ_API_KEY"
    key = os.environ.get(key_var, "").strip()
    if not key:
        raise ConfigError(f"{key_var} is not set; model {spec} needs it")
    base_url = (os.environ.get("OPENAI_BASE_URL") or None if parsed.provider == "openai"
                else os.environ.get("ORQ_ROUTER_URL") or ORQ_ROUTER)
    options = dict(parsed.options)
    from turngate.jobs.chat_provider import ProviderChatModel

    return ProviderChatModel.build(f"{parsed.provider}:{parsed.name}", model=parsed.name, api_key=key,
                                   base_url=base_url, seed=0,
                                   temperature=float(options["temperature"]) if "temperature" in options else 0.0,
                                   retries=retries, timeout=timeout, budgeted=False)


def _stderr_warning(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def _fallback(suggestions: Sequence[Suggestion]) -> list[str]:
    return [ModeName(s.name, s.definition) for s in suggestions]


def name_groups(suggestions: Sequence[Suggestion], model: str | None, *, timeout: float = 60.0, retries: int = 2,
                warn: Callable[[str], None] | None = None, chat=None) -> list[str]:
    """One name per suggestion, in order: a model's (each a ModeName: a str with a one-line
    `.definition`), or the offline names when `model` is None, "" or "offline". Never raises for
    the model's sake: no key, an unknown spec, a network error, a timeout or a reply that is not
    the JSON asked for all give the offline names, and `warn` (default: a line on stderr) says
    why; a group the reply leaves out keeps its offline name. `chat`: a LangChain chat model to
    use instead of building one from `model` (tests). Blocking: from async code, run it in a
    thread (or use `aname_groups`)."""
    warn = warn or _stderr_warning
    if not suggestions or (chat is None and (not model or model == "offline")):
        return _fallback(suggestions)
    try:
        from langchain_core.messages import HumanMessage

        chat = chat or chat_model(model or "", timeout=timeout, retries=retries)
        reply = chat.invoke([HumanMessage(_prompt(suggestions))])
    except Exception as exc:  # noqa: BLE001  (naming is a convenience: never crash the review)
        warn(f"naming groups with {model}: {_why(exc)}; using the offline names")
        return _fallback(suggestions)
    return _named(suggestions, reply, model, warn)


async def aname_groups(suggestions: Sequence[Suggestion], model: str | None, *, timeout: float = 60.0,
                       retries: int = 2, warn: Callable[[str], None] | None = None, chat=None) -> list[str]:
    """name_groups for async code (the same fallbacks)."""
    import asyncio

    warn = warn or _stderr_warning
    if not suggestions or (chat is None and (not model or model == "offline")):
        return _fallback(suggestions)
    try:
        from langchain_core.messages import HumanMessage

        chat = chat or chat_model(model or "", timeout=timeout, retries=retries)
        reply = await asyncio.wait_for(chat.ainvoke([HumanMessage(_prompt(suggestions))]), timeout)
    except Exception as exc:  # noqa: BLE001
        warn(f"naming groups with {model}: {_why(exc)}; using the offline names")
        return _fallback(suggestions)
    return _named(suggestions, reply, model, warn)


def _why(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200]}" if text else type(exc).__name__


def _named(suggestions: Sequence[Suggestion], reply, model: str | None, warn: Callable[[str], None]) -> list[str]:
    text = reply.content if isinstance(getattr(reply, "content", None), str) else str(getattr(reply, "content", reply))
    try:
        names = read_names(text, len(suggestions))
    except ValueError as exc:
        warn(f"naming groups with {model}: {exc}; using the offline names")
        return _fallback(suggestions)
    missing = [n for n, got in enumerate(names, start=1) if got is None]
    if missing:
        warn(f"naming groups with {model}: no name for group(s) {', '.join(map(str, missing))}; "
             "those keep their offline names")
    return [ModeName(*got) if got else ModeName(s.name, s.definition) for s, got in zip(suggestions, names, strict=True)]
