"""One sentence for a model endpoint's failure, the same in ``chat``, ``ask`` and ``demo``.

Every command that talks to a model prints an endpoint error through `describe_endpoint_error`:
where (scheme and host, never the key), what happened, and the server's own message when it
sent one (an unknown model, a quota, a bad request), followed by what to check.
"""

from __future__ import annotations

import openai

__all__ = ["describe_endpoint_error", "endpoint_of", "server_message"]

_MESSAGE_LIMIT = 300
"""Characters of the server's message kept (a proxy may answer with a whole HTML page)."""


def endpoint_of(exc: openai.APIError, default: str = "the model endpoint") -> str:
    """``scheme://host:port`` of the request that failed (no path, query or key)."""
    request = getattr(exc, "request", None)
    url = getattr(request, "url", None)
    if url is None:
        return default
    return f"{url.scheme}://{url.netloc.decode()}"


def server_message(exc: openai.APIStatusError) -> str:
    """The server's ``error.message`` (or its body's text), whitespace collapsed, cut short."""
    body = exc.body
    text = exc.message
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            text = inner["message"]
    flat = " ".join(str(text).split())
    return flat if len(flat) <= _MESSAGE_LIMIT else flat[: _MESSAGE_LIMIT - 1] + "…"


def describe_endpoint_error(
    exc: openai.OpenAIError,
    where: str | None = None,
    *,
    options: tuple[str, str, str] = ("[model] base_url", "[model] name", "[model] api_key"),
) -> str:
    """One line for a failed model request: where, what, the server's text, what to check.

    Args:
        exc: what the ``openai`` SDK raised.
        where: the endpoint to name when the exception carries no request.
        options: how the caller names the endpoint URL, the model name and the key (the
            config keys, or a command's options such as ``--model-url``).
    """
    url_option, model_option, key_option = options
    place = where or "the model endpoint"
    if isinstance(exc, openai.APIError):
        place = endpoint_of(exc, place)
    if isinstance(exc, openai.AuthenticationError):
        return (
            f"{place} rejected the API key (HTTP 401: {server_message(exc)}); "
            f"check {key_option} or OPENAI_API_KEY"
        )
    if isinstance(exc, openai.APITimeoutError):
        return f"{place} did not answer in time"
    if isinstance(exc, openai.APIConnectionError):
        return f"cannot reach the model endpoint {place}; check {url_option}"
    if isinstance(exc, openai.NotFoundError):
        return (
            f"{place} answered HTTP 404: {server_message(exc)}; "
            f"check {model_option} and {url_option}"
        )
    if isinstance(exc, openai.APIStatusError):
        return f"{place} answered HTTP {exc.status_code}: {server_message(exc)}"
    return " ".join(str(exc).split())  # e.g. no API key at all when the client is built
