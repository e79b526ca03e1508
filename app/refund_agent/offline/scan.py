"""Regex scans that stay linear in the text, with the matches of the plain patterns.

CPython's regex engine retries a pattern from every start position, so `[\\w.+-]+@...`
(an email) costs the square of any long run of word characters that has no "@" after it:
"x" * 16_000 took seconds. Here a match may only start where one can: an email starts in
the run of local-part characters right before an "@", at the run's start or where the
previous match ended, and nowhere else. The matches (and so every answer) are exactly those
of the plain patterns; tests/test_offline_scan.py checks that on generated texts.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterator

EMAIL_PATTERN = r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
_LOCAL_RUN = re.compile(r"[\w.+-]+")  # the characters an email's local part is made of


class Scan:
    """`head|EMAIL_PATTERN` (the email tried last, as in the alternation), or the email alone
    (head None): finditer, findall and sub as a compiled pattern gives them."""

    def __init__(self, head: str | None = None, flags: int = 0):
        self.email = re.compile(EMAIL_PATTERN, flags)
        self.head = re.compile(head, flags) if head is not None else None
        self.plain = re.compile(f"{head}|{EMAIL_PATTERN}" if head is not None else EMAIL_PATTERN, flags)
        self.pattern = self.plain.pattern

    def _emails(self, text: str, pos: int) -> Iterator[re.Match]:
        """Email matches from pos on, each at the first place in its run it can start."""
        for run in _LOCAL_RUN.finditer(text, pos):
            if text.startswith("@", run.end()):
                m = self.email.match(text, max(run.start(), pos))
                if m:
                    yield m
                    pos = m.end()  # scanning goes on after the match

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
