"""The mutation operators: one-change edits of a Mutable, each a Mutant with a stable id and a
human description.

The instructions text is read as *policy lines*: a bullet (`- `, `* `, `1.`) with its indented
continuation lines, or a paragraph of plain lines; a line ending in ":" is a heading and is not
edited. Each line is cut into sentences. Text operators, each once per site:

    delete   each sentence (a one-sentence line goes whole)
    word     weaken a rule word (never -> rarely, always -> usually, must -> should, only and
             explicitly dropped) or negate one (can't -> can, can -> can't, may -> may not, not dropped)
    number   each number doubled and halved (times like 9:00 and ids like A-1005 are left alone)
    unit     the unit after a number swapped (USD <-> EUR, days <-> weeks, hours -> days, ...)
    list     each item of a comma list ("order, customer or product") dropped: a narrower condition;
             and an enumeration of siblings ("delivered or shipped", "EUR, USD or GBP", a lone
             status in an "only" sentence) narrowed or widened by its family's nearest member
             (enumerations.py)

(a question is only deleted: it states no rule), and on settings: `switch` flips each named switch, `temperature` nudges it by 0.25 each way.
A model's plausible edits are propose.py's (`--propose N`).
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from turngate.mutate.enumerations import enumeration_edits
from turngate.mutate.protocol import Mutable

TEMPERATURE_STEP = 0.25


@dataclass(frozen=True)
class Mutant:
    id: str            # stable for the same text and edit: operator, words of the site, a short hash
    operator: str      # delete | word | number | unit | list | switch | temperature
    description: str   # the change in one line: before -> after
    line: int | None   # 1-based line of the instructions the policy line starts on; None: a setting
    site: str          # the policy line edited (its text), or the setting's name
    edited: Mutable


@dataclass(frozen=True)
class PolicyLine:
    line: int   # 1-based first line
    start: int  # character offsets of its content (bullet marker excluded) in the text
    end: int
    text: str


_BULLET = re.compile(r"^(\s*(?:[-*•]|\d+[.)])\s+)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"(])")


def policy_lines(text: str) -> list[PolicyLine]:
    """Bullets with their indented continuations, and paragraphs of plain lines; headings skipped."""
    lines = text.split("\n")
    offsets, pos = [], 0
    for ln in lines:
        offsets.append(pos)
        pos += len(ln) + 1
    out: list[PolicyLine] = []
    i = 0
    while i < len(lines):
        ln = lines[i]
        if not ln.strip() or ln.rstrip().endswith(":"):
            i += 1
            continue
        bullet = _BULLET.match(ln)
        j = i
        while j + 1 < len(lines):
            nxt = lines[j + 1]
            if not nxt.strip() or _BULLET.match(nxt) or nxt.rstrip().endswith(":"):
                break
            if bullet and not nxt.startswith((" ", "\t")):  # a bullet continues only on indented lines
                break
            j += 1
        start = offsets[i] + (bullet.end() if bullet else len(ln) - len(ln.lstrip()))
        end = offsets[j] + len(lines[j].rstrip())
        out.append(PolicyLine(i + 1, start, end, text[start:end]))
        i = j + 1
    return out


def sentences(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """(start, end) offsets of each sentence of text[start:end]."""
    out, pos = [], start
    for m in _SENTENCE_END.finditer(text, start, end):
        out.append((pos, m.start()))
        pos = m.end()
    out.append((pos, end))
    return [(a, b) for a, b in out if text[a:b].strip()]


# (pattern, replacement, operator kind): weaken a rule, or negate it
_WORDS: list[tuple[str, str, str]] = [
    (r"\bnever\b", "rarely", "weaken"),
    (r"\balways\b", "usually", "weaken"),
    (r"\bmust not\b", "need not", "weaken"),
    (r"\bmust\b(?! not)", "should", "weaken"),
    (r"\bonly\s+", "", "weaken"),
    (r"\bexplicitly\s+", "", "weaken"),
    (r"\bcan'?t\b|\bcannot\b", "can", "negate"),
    (r"\bcan\b(?!'|not)", "can't", "negate"),
    (r"\bmay\b(?! not)", "may not", "negate"),
    (r"\bnot\s+", "", "negate"),
]
_NUMBER = re.compile(r"(?<![\w:.\-])(\d+(?:\.\d+)?)(?![\w:]|\.\d)")
_UNITS = {"USD": "EUR", "EUR": "USD", "GBP": "USD", "dollars": "euros", "euros": "dollars", "days": "weeks",
          "day": "week", "weeks": "days", "week": "day", "hours": "days", "hour": "day", "months": "weeks",
          "month": "week", "years": "months", "year": "month"}
_UNIT = re.compile(r"(\d(?:[\s-])?)(" + "|".join(sorted(_UNITS, key=len, reverse=True)) + r")\b")
_LIST = re.compile(r"\b(\w+)((?:, \w+)+),? (or|and) (\w+)\b")


def _case(word: str, like: str) -> str:
    return word[:1].upper() + word[1:] if like[:1].isupper() and word else word


def _number(value: str, factor: float) -> str | None:
    if "." in value:
        return f"{float(value) * factor:g}"
    n = int(value)
    new = n * 2 if factor > 1 else n // 2
    return str(new) if new != n and new > 0 else None


def _edits(text: str, a: int, b: int) -> list[tuple[str, int, int, str, str]]:
    """(operator, start, end, replacement, kind) for every text edit inside the sentence text[a:b]."""
    out = []
    s = text[a:b]
    for pattern, repl, kind in _WORDS:
        for m in re.finditer(pattern, s, re.I):
            out.append(("word", a + m.start(), a + m.end(), _case(repl, m.group()) if repl else "", kind))
    for m in _NUMBER.finditer(s):
        for factor, kind in ((2.0, "doubled"), (0.5, "halved")):
            if (new := _number(m.group(1), factor)) is not None:
                out.append(("number", a + m.start(1), a + m.end(1), new, kind))
    for m in _UNIT.finditer(s):
        out.append(("unit", a + m.start(2), a + m.end(2), _UNITS[m.group(2)], "swapped"))
    for m in _LIST.finditer(s):
        items = [m.group(1), *m.group(2)[2:].split(", "), m.group(4)]
        for k in range(len(items)):
            kept = items[:k] + items[k + 1:]
            new = (", ".join(kept[:-1]) + f" {m.group(3)} " + kept[-1]) if len(kept) > 1 else kept[0]
            out.append(("list", a + m.start(), a + m.end(), new, f"dropped {items[k]!r}"))
    for start, end, new, kind in enumeration_edits(s):  # lists of siblings narrowed or widened
        out.append(("list", a + start, a + end, new, kind))
    return out


def _slug(text: str, words: int = 3) -> str:
    return "-".join(re.findall(r"[a-z0-9]+", text.lower())[:words]) or "x"


def _id(operator: str, site: str, detail: str) -> str:
    digest = hashlib.sha1(f"{operator}|{site}|{detail}".encode()).hexdigest()[:4]
    return f"{operator}-{_slug(site)}-{digest}"


def _short(text: str, width: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 1] + "…"


def text_mutants(base: Mutable) -> list[Mutant]:
    text = base.instructions
    out: list[Mutant] = []
    seen: set[str] = set()

    def add(op: str, line: PolicyLine, new_text: str, description: str, detail: str) -> None:
        if new_text == text or new_text in seen:
            return
        seen.add(new_text)
        out.append(Mutant(_id(op, line.text, detail), op, description, line.line, _short(line.text, 90),
                          base.edited(instructions=new_text)))

    for pl in policy_lines(text):
        spans = sentences(text, pl.start, pl.end)
        for a, b in spans:
            if len(spans) == 1:  # the whole line, bullet marker and all
                first = text.rfind("\n", 0, pl.start) + 1
                cut_a, cut_b = first, min(len(text), pl.end + 1)
            else:
                nxt = text.find(text[b:].lstrip()[:1], b) if text[b:pl.end].strip() else b
                cut_a, cut_b = (a, nxt) if nxt > b else (_back(text, a), b)
            add("delete", pl, text[:cut_a] + text[cut_b:], f'line {pl.line}: deleted "{_short(text[a:b])}"',
                text[a:b])
            for op, s, e, repl, kind in _edits(text, a, b) if not text[a:b].rstrip().endswith("?") else []:
                new = text[:s] + repl + text[e:]
                if not repl and text[s].isupper() and e < len(text):  # "Only orders" -> "Orders"
                    new = text[:s] + text[e].upper() + text[e + 1:]
                if op == "list" and kind.startswith("dropped"):
                    before, after = text[s:e], repl
                else:
                    before, after = _context(text, s, e, a, b), _context(new, s, s + len(repl), a, b + len(repl) - (e - s))
                add(op, pl, new, f'line {pl.line}: {op} {kind}: "{_short(before)}" -> "{_short(after)}"',
                    f"{text[a:b]}|{s - a}|{repl}")
    return out


def _back(text: str, a: int) -> int:
    """The start of the whitespace before offset a (deleting the last sentence takes it too)."""
    while a > 0 and text[a - 1].isspace():
        a -= 1
    return a


def _context(text: str, s: int, e: int, a: int, b: int, words: int = 3) -> str:
    """The edited span with up to `words` words either side, inside the sentence [a, b), as written."""
    left = re.search(rf"(?:\S+\s+){{0,{words}}}\S*\Z", text[a:s])  # \Z: $ would stop before a newline
    right = re.match(rf"\S*(?:\s+\S+){{0,{words}}}", text[e:b])
    return (left.group() if left else "") + text[s:e] + (right.group() if right else "")


def setting_mutants(base: Mutable) -> list[Mutant]:
    out = []
    for name, on in base.switches.items():
        out.append(Mutant(f"switch-{_slug(name)}-{'off' if on else 'on'}", "switch",
                          f"{name}: {str(on).lower()} -> {str(not on).lower()}", None, name,
                          base.edited(switches={**base.switches, name: not on})))
    if base.temperature is not None:
        t = base.temperature
        for new in sorted({round(t + TEMPERATURE_STEP, 4), round(max(0.0, t - TEMPERATURE_STEP), 4)} - {t}):
            out.append(Mutant(f"temperature-{new:g}", "temperature", f"temperature: {t:g} -> {new:g}", None,
                              "temperature", base.edited(temperature=new)))
    return out


def mutants_of(base: Mutable, operators: set[str] | None = None) -> list[Mutant]:
    """Every mutant of `base`, in text order then settings; `operators` keeps only those kinds."""
    found = text_mutants(base) + setting_mutants(base)
    return [m for m in found if operators is None or m.operator in operators]


# edit: --edits FILE (edits.py); llm: --propose N (propose.py)
OPERATORS = ("delete", "word", "number", "unit", "list", "switch", "temperature", "edit", "llm")
