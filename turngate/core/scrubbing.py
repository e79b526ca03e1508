"""Keep API keys out of anything we write: Turn errors, results files, logs, reports, the
model-call cache. (Here, not in the agent: the library scrubs whatever agent it runs.)

Secrets are the values of *_API_KEY / *_TOKEN / *_SECRET variables, and credentials in URLs:
the userinfo of any URL (`https://user:pass@host`) and secret-named query values (`?key=`,
`&api_key=`, `&access_token=` ...), wherever they appear, plus those credentials taken from URLs
in the environment (OPENAI_BASE_URL=http://user:pass@host/v1) wherever they appear alone or as a
Basic-auth header."""
from __future__ import annotations

import base64
import os
import re
from urllib.parse import parse_qsl, unquote, urlsplit

_SECRET_VARS = re.compile(r"(API_KEY|TOKEN|SECRET)$")
MIN_SECRET = 8  # a variable's value shorter than this is not treated as a key
MIN_URL_SECRET = 6  # a URL's password or token: shorter ones would replace ordinary words
_SECRET_PARAM = r"[\w.-]*(?:key|token|secret|password|passwd|pwd|signature|sig|auth|credential)s?"
_SECRET_PARAM_NAME = re.compile(rf"(?i)^{_SECRET_PARAM}$")
# scheme://userinfo@ : the whole userinfo goes (a token is often the user name alone)
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/?#@\"'<>]+@")
# ?key=... &api_key=... ;token=... : the value goes, the name stays
_QUERY_SECRET = re.compile(rf"(?i)([?&;]{_SECRET_PARAM}=)[^&#;\s\"'<>]+")


def _url_credentials(value: str) -> list[str]:
    """The credentials a URL carries: its password (or user name when there is no password,
    as tokens are), secret-named query values, and the Basic-auth header value they make."""
    if "://" not in value:
        return []
    try:
        parts = urlsplit(value.strip())
    except ValueError:
        return []
    found = []
    if parts.username is not None or parts.password is not None:
        user, password = parts.username or "", parts.password
        found += [password, unquote(password)] if password is not None else [user, unquote(user)]
        basic = f"{unquote(user)}:{unquote(password or '')}".encode()
        found.append(base64.b64encode(basic).decode())
    found += [v for k, v in parse_qsl(parts.query, keep_blank_values=False) if _SECRET_PARAM_NAME.match(k)]
    return [f for f in found if len(f) >= MIN_URL_SECRET]


def secret_values() -> list[str]:
    values = {v for k, v in os.environ.items() if _SECRET_VARS.search(k) and len(v) >= MIN_SECRET}
    for v in os.environ.values():
        values.update(_url_credentials(v))
    return sorted(values, key=len, reverse=True)


def scrub_urls(text: str) -> str:
    """Credentials in URLs: userinfo and secret-named query values become [secret]."""
    if "://" in text:
        text = _URL_USERINFO.sub(r"\1[secret]@", text)
    return _QUERY_SECRET.sub(r"\1[secret]", text) if "=" in text else text


def scrub(text: str, values: list[str] | None = None) -> str:
    """Replace every secret env value, URL credential (and bearer tokens) in text. Pass
    `values` (from secret_values()) when scrubbing many texts at once: reading the
    environment is the cost."""
    for value in secret_values() if values is None else values:
        text = text.replace(value, "[secret]")
    text = scrub_urls(text)
    return re.sub(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}", r"\1[secret]", text)
