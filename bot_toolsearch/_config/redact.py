"""Credentials out of a URL before it is shown or stored: userinfo and secret query values.

Every URL the config names (the proxy's upstream, an embeddings ``base_url``) may carry a
``user:password@`` or a ``?api-key=...``; what is printed or logged is `redact_url` of it.
"""

from __future__ import annotations

from urllib.parse import unquote, urlsplit, urlunsplit

__all__ = ["REDACTED", "SECRET_WORDS", "redact_query", "redact_url"]

REDACTED = "REDACTED"
SECRET_WORDS = ("key", "token", "secret", "password", "passwd", "auth", "sig", "credential")
"""A query parameter whose name holds one of these (any case) has its value redacted."""


def redact_query(query: str) -> str:
    """``query`` (no ``?``) with the values of secret-looking parameters replaced.

    >>> redact_query("api-key=abc&page=2")
    'api-key=REDACTED&page=2'
    """
    parts = []
    for item in query.split("&"):
        name, equals, _ = item.partition("=")
        lowered = unquote(name).lower()
        secret = equals and any(word in lowered for word in SECRET_WORDS)
        parts.append(f"{name}={REDACTED}" if secret else item)
    return "&".join(parts)


def redact_url(url: str) -> str:
    """``url`` with its userinfo and the values of secret query parameters replaced.

    >>> redact_url("https://user:pw@example.com/v1?key=abc&x=1")
    'https://REDACTED@example.com/v1?key=REDACTED&x=1'
    >>> redact_url("http://127.0.0.1:8080/v1")
    'http://127.0.0.1:8080/v1'
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return REDACTED
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rpartition('@')[2]}"
    query = redact_query(parts.query) if parts.query else parts.query
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
