"""Regex scans that stay linear in the text, with the matches of the plain patterns.

CPython's regex engine retries a pattern from every start position, so `[\\w.+-]+@...`
(an email) costs the square of any long run of word characters that has no "@" after it:
"x" * 16_000 took seconds. Scan: an email may only start in the run of local-part characters
right before an "@", at the run's start or where the previous match ended, and nowhere else.
RunStarts: alternatives that start with `\\s+` are tried only where a run of spaces starts.
Both find exactly the matches of the plain patterns (tests/test_offline_scan.py and
tests/test_offline_linear.py check that on generated texts). gaps() bounds the sentence gaps
of the intent patterns instead: the same matches on every message the model is evaluated and
tested on, not on sentences longer than GAP.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from re import _constants as _c  # _parser and _constants: to read the plain letters a pattern needs
from re import _parser

# A pattern like `\bchange\b[^.?!]*\baddress\b` is retried at every "change" and each try reads
# to the sentence's end: "change " * 9000 in one sentence took seconds. Such gaps are read at most
# GAP characters (gaps() rewrites `[^...]*` as `[^...]{0,GAP}`): twice the longest sentence of any
# message the model is evaluated or tested on and of the prompts (234 characters), so their answers
# are those of the unbounded patterns (tests/test_offline_linear.py checks that on all of them).
GAP = 500
_GAP = re.compile(r"(\[\^(?!\\S)(?:\\.|[^\]\\])+\])\*")  # not [^\S\n]* (spaces but newlines: no sentence)


BOUNDED: dict[str, str] = {}  # every pattern gaps() was given -> what it made of it (tests compare them)


def gaps(pattern: str) -> str:
    """The pattern with every negated class repeated `*` bounded to GAP characters."""
    out = BOUNDED.get(pattern)
    if out is None:
        out = BOUNDED[pattern] = _GAP.sub(lambda m: f"{m.group(1)}{{0,{GAP}}}", pattern)
    return out

EMAIL_PATTERN = r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
# A whole run of local-part characters followed by "@domain.tld" (exactly when an email can start
# in it): tried only where a run starts (the lookbehind), read without backtracking (`++`), so one
# C-level scan finds the candidates and "a@a@a@..." (64 KB, no email) costs no Python loop per run.
_CANDIDATE = r"(?<![\w.+-])[\w.+-]++(?=@[\w-]+\.[\w-])"


class Scan:
    """`head|EMAIL_PATTERN` (the email tried last, as in the alternation), or the email alone
    (head None): finditer, findall and sub as a compiled pattern gives them."""

    def __init__(self, head: str | None = None, flags: int = 0):
        self.email = re.compile(EMAIL_PATTERN, flags)
        self.local = re.compile(r"[\w.+-]+", flags)
        self.candidate = re.compile(_CANDIDATE, flags)
        self.head = re.compile(head, flags) if head is not None else None
        self.plain = re.compile(f"{head}|{EMAIL_PATTERN}" if head is not None else EMAIL_PATTERN, flags)
        self.pattern = self.plain.pattern

    def _emails(self, text: str, pos: int) -> Iterator[re.Match]:
        """Email matches from pos on, each at the first place in its run it can start."""
        if text.find("@", pos) < 0:  # no "@" left: no email, and no run to walk through
            return
        n = len(text)
        while True:
            # pos inside a run (at the start, or after a match that ended in one): the rest of
            # that run is a candidate the lookbehind cannot see
            if 0 < pos < n and self.local.match(text, pos - 1, pos) and self.local.match(text, pos, pos + 1):
                run_end = self.local.match(text, pos).end()
                m = self.email.match(text, pos) if text.startswith("@", run_end) else None
                if m:
                    yield m
                    pos = m.end()
                    continue
                pos = run_end
            candidate = self.candidate.search(text, pos)
            if candidate is None:
                return
            m = self.email.match(text, candidate.start())
            if m:  # always: the lookahead is the email's own condition
                yield m
            pos = m.end() if m else candidate.end()

    def finditer(self, text: str) -> Iterator[re.Match]:
        if self.head is None:
            yield from self._emails(text, 0)
            return
        # The next match of each part from pos on; one found stays the next one until pos
        # passes its start, and a part with none left has none later either.
        pos, head, email, heads_left, emails_left = 0, None, None, True, True
        while True:
            if heads_left and (head is None or head.start() < pos):
                head = self.head.search(text, pos)
                heads_left = head is not None
            if emails_left and (email is None or email.start() < pos):
                email = next(self._emails(text, pos), None)
                emails_left = email is not None
            if not (heads_left or emails_left):
                return
            # at one position the alternation tries the head first
            m = head if not emails_left or (heads_left and head.start() <= email.start()) else email
            if m.end() == m.start():
                raise ValueError(f"Scan: {self.pattern!r} matched the empty string")
            yield m
            pos = m.end()

    def findall(self, text: str) -> list[str]:
        return [m.group(0) for m in self.finditer(text)]

    def sub(self, repl: str | Callable[[re.Match], str], text: str) -> str:
        out, last = [], 0
        for m in self.finditer(text):
            out += [text[last:m.start()], repl(m) if callable(repl) else m.expand(repl)]
            last = m.end()
        return "".join(out) + text[last:]


class RunStarts:
    """finditer of `pattern`, some of whose alternatives start with `\\s+`: each was retried at
    every position of a run of spaces, reading to its end ("refund" + " " * 16_000 took
    seconds). `guarded` is the same pattern with `(?<!\\s)` before those alternatives, so they
    are tried only where a run starts. From inside a run such an alternative matches exactly
    when it does from the run's start, which is tried first, so the matches are the same;
    only where scanning resumes inside a run (after a match that ended in one, or at `pos`)
    is the plain pattern tried once."""

    def __init__(self, pattern: str, guarded: str, flags: int = 0):
        self.plain = re.compile(pattern, flags)
        self.guarded = re.compile(guarded, flags)
        self.pattern = pattern

    def finditer(self, text: str, pos: int = 0, endpos: int | None = None) -> Iterator[re.Match]:
        end = len(text) if endpos is None else endpos
        while True:
            m = self.plain.match(text, pos, end) if 0 < pos < end and text[pos - 1].isspace() else None
            m = m or self.guarded.search(text, pos, end)
            if m is None:
                return
            if m.end() == m.start():
                raise ValueError(f"RunStarts: {self.pattern!r} matched the empty string")
            yield m
            pos = m.end()


# --- pieces a pattern needs ---------------------------------------------------------------
# A pattern whose every match holds one of a few pieces of plain letters ("refund", "money back",
# ...) cannot match a text holding none of them: a substring test, far cheaper than a search, tells.
# Under re.I that holds on text lower() leaves as it is, unless it holds a character re.I folds onto
# one of these letters: FOLDS (tests/test_offline_linear.py derives them from all of Unicode).
NEEDLE_LETTERS = "a-zäöüßéèêàçñáíóúâîôûëïü' "
FOLDS = ("ı", "ſ")  # dotless i, long s: re.I matches them with i and s
_LETTER = re.compile(f"[{NEEDLE_LETTERS}]")


def _required(items) -> list[frozenset[str]]:
    """Sets of strings, each holding one that every match of the parsed sequence contains."""
    out: list[frozenset[str]] = []
    run = ""

    def close() -> None:
        nonlocal run
        if run:
            out.append(frozenset([run]))
        run = ""
    for op, arg in items:
        if op is _c.LITERAL and _LETTER.fullmatch(chr(arg)):
            run += chr(arg)
            continue
        if op is _c.AT:
            continue  # takes no characters: the letters on both sides are adjacent
        close()
        if op is _c.SUBPATTERN and not arg[1] and not arg[2]:  # a group, no flags of its own: once
            out += _required(arg[3])
        elif op is _c.BRANCH:
            alts = [_best(_required(alt)) for alt in arg[1]]
            if all(alts):
                out.append(frozenset().union(*alts))
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT) and arg[0] >= 1:  # at least once
            out += _required(arg[2])
    close()
    return out


def _best(sets: list[frozenset[str]]) -> frozenset[str] | None:
    """The set whose shortest string is longest (the rarest test)."""
    return max(sets, key=lambda x: min(map(len, x)), default=None)


def pieces(pattern: str, flags: int = 0) -> tuple[str, ...] | None:
    """Strings one of which every match of the pattern holds, or None when it has none to offer."""
    best = _best(_required(_parser.parse(pattern, flags)))
    return tuple(sorted(best)) if best else None


_LAST: tuple[str | None, bool] = (None, False)  # the last text `_lowered` read, and what it found


def _lowered(text: str) -> bool:
    """Does re.I match the pieces' letters in the text only with themselves? (A text is searched
    by many patterns in a row: read once.)"""
    global _LAST
    last = _LAST
    if last[0] is not text:
        last = _LAST = (text, text == text.lower() and not any(f in text for f in FOLDS))
    return last[1]


class Gated:
    """A compiled pattern that is not run on a text holding none of its pieces (it could not
    match there): search, match, fullmatch, finditer, findall and sub as the pattern gives them.
    The pieces are looked for by one search of them all, cheaper than a test per piece."""

    def __init__(self, pattern: str, flags: int = 0):
        self.rx = re.compile(pattern, flags)
        self.pattern, self.flags = self.rx.pattern, self.rx.flags
        self.pieces = pieces(pattern, flags)
        self._gate = re.compile("|".join(map(re.escape, self.pieces))) if self.pieces else None
        self._folds = bool(self.flags & re.I)

    def _absent(self, text: str) -> bool:
        return self._gate is not None and not self._gate.search(text) and (not self._folds or _lowered(text))

    def search(self, text: str, *args) -> re.Match | None:
        return None if self._absent(text) else self.rx.search(text, *args)

    def match(self, text: str, *args) -> re.Match | None:
        return None if self._absent(text) else self.rx.match(text, *args)

    def fullmatch(self, text: str, *args) -> re.Match | None:
        return None if self._absent(text) else self.rx.fullmatch(text, *args)

    def finditer(self, text: str, *args) -> Iterator[re.Match]:
        return iter(()) if self._absent(text) else self.rx.finditer(text, *args)

    def findall(self, text: str, *args) -> list:
        return [] if self._absent(text) else self.rx.findall(text, *args)

    def sub(self, repl, text: str, count: int = 0) -> str:
        return text if self._absent(text) else self.rx.sub(repl, text, count)
