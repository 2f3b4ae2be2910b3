"""A round posted with the SDK's HTTP client directly keeps the SDK's retry, timeout and
errors (issue 44).

Each case runs twice against the same hostile scripted upstream on 127.0.0.1 (raw sockets):
once through the SDK's own ``with_raw_response.create`` and once through the direct path
(`bot_toolsearch._wrap.send.post_async`, which `bot_toolsearch._wrap.direct` serves for a
plain client), and both must see the same requests and end the same way.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any

import httpx
import httpx2
import openai
import pytest

from bot_toolsearch import BotSettings, ModelReplyError, wrap_openai
from bot_toolsearch._wrap import direct
from bot_toolsearch._wrap.send import post_async
from tests.proxy._raw import Script, answer, reset, stall, status

OK = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 0,
    "model": "m",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
    ],
}
REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
ERROR = {"error": {"message": "busy now", "type": "server_error", "code": "busy"}}


Via = Callable[[openai.AsyncOpenAI], Any]


async def _sdk(client: openai.AsyncOpenAI) -> Any:
    return await client.chat.completions.with_raw_response.create(**REQUEST)  # type: ignore[call-overload]


async def _direct(client: openai.AsyncOpenAI) -> Any:
    return await post_async(client.chat.completions, "chat", REQUEST)


VIAS = {"sdk": _sdk, "direct": _direct}


async def _run(via: str, script: Script, **options: Any) -> tuple[Any, BaseException | None]:
    """The call through ``via`` (after one good call that finds the SDK's platform headers)."""
    url = f"{script.upstream.url}/v1"
    client = openai.AsyncOpenAI(base_url=url, api_key="k", **options)
    try:
        await client.chat.completions.with_raw_response.create(**REQUEST)  # type: ignore[call-overload]
        script.upstream.received.clear()
        script.times.clear()
        try:
            return await VIAS[via](client), None
        except openai.OpenAIError as exc:
            return None, exc
        finally:
            assert (client in direct._TEMPLATES) is (via == "direct")
    finally:
        await client.close()
        script.upstream.close()


@pytest.mark.parametrize("via", VIAS)
async def test_the_same_request_as_the_sdks(via: str) -> None:
    script = Script(answer(OK), answer(OK))
    raw, _ = await _run(via, script, default_headers={"X-Team": "a"})
    head, _, body = script.upstream.received[0].partition(b"\r\n\r\n")
    lines = sorted(head.decode("latin-1").lower().split("\r\n")[1:])
    sdk = Script(answer(OK), answer(OK))
    await _run("sdk", sdk, default_headers={"X-Team": "a"})
    sdk_head, _, sdk_body = sdk.upstream.received[0].partition(b"\r\n\r\n")
    sdk_lines = sorted(sdk_head.decode("latin-1").lower().split("\r\n")[1:])
    host = [line for line in lines if not line.startswith("host:")]
    assert host == [line for line in sdk_lines if not line.startswith("host:")]
    assert "x-team: a" in lines
    assert "authorization: bearer k" in lines
    assert json.loads(body) == json.loads(sdk_body) == REQUEST
    assert raw.http_response.status_code == 200
    assert raw.parse().choices[0].message.content == "hi"


@pytest.mark.parametrize("via", VIAS)
async def test_a_429_is_retried_after_its_retry_after(via: str) -> None:
    script = Script(answer(OK), status(429, ERROR, headers="retry-after-ms: 400\r\n"), answer(OK))
    raw, error = await _run(via, script, max_retries=1)
    assert error is None
    assert raw.http_response.status_code == 200
    assert script.retry_counts == ["0", "1"]
    assert script.times[1] - script.times[0] >= 0.35  # the upstream's wait, not a backoff


@pytest.mark.parametrize("via", VIAS)
async def test_500s_are_retried_max_retries_times(
    via: str, caplog: pytest.LogCaptureFixture
) -> None:
    script = Script(answer(OK), status(500, ERROR), status(500, ERROR), answer(OK))
    with caplog.at_level(logging.INFO, logger="openai"):
        raw, error = await _run(via, script, max_retries=2)
    said = [r.getMessage() for r in caplog.records if r.name == "openai._base_client"]
    # "Retrying request in …" (openai 3) or "Retrying request to /chat/completions in …" (2.x)
    assert len([m for m in said if m.startswith("Retrying request")]) == 2
    assert error is None
    assert raw.http_response.status_code == 200
    assert script.retry_counts == ["0", "1", "2"]


@pytest.mark.parametrize("via", VIAS)
async def test_the_last_500_is_the_error_with_its_body(via: str) -> None:
    script = Script(answer(OK), status(500, ERROR), status(500, ERROR), answer(OK))
    _, error = await _run(via, script, max_retries=1)
    assert isinstance(error, openai.InternalServerError)
    assert error.status_code == 500
    assert error.body == ERROR["error"]
    assert "busy now" in error.message
    assert script.retry_counts == ["0", "1"]  # the third answer is never asked for


@pytest.mark.parametrize("via", VIAS)
async def test_a_400_is_not_retried(via: str) -> None:
    script = Script(answer(OK), status(400, ERROR), answer(OK))
    _, error = await _run(via, script, max_retries=2)
    assert isinstance(error, openai.BadRequestError)
    assert error.body == ERROR["error"]
    assert script.retry_counts == ["0"]


async def test_a_long_retry_after_is_never_waited_for_and_treated_as_the_sdk_treats_it() -> None:
    """An hour's ``retry-after`` is never waited for; what happens instead is the SDK's own
    rule (openai 3 gives up with the 429; 2.x retries after its own backoff), the same on
    both paths."""
    outcomes = []
    for via in VIAS:
        script = Script(answer(OK), status(429, ERROR, headers="retry-after: 3600\r\n"), answer(OK))
        _, error = await _run(via, script, max_retries=2)
        assert error is None or isinstance(error, openai.RateLimitError)
        outcomes.append((type(error), script.retry_counts))
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("via", VIAS)
async def test_a_stalled_upstream_times_out_after_its_retry(via: str) -> None:
    release = threading.Event()
    script = Script(answer(OK), stall(release), stall(release))
    try:
        _, error = await _run(via, script, max_retries=1, timeout=0.3)
    finally:
        release.set()
    assert isinstance(error, openai.APITimeoutError)
    assert script.retry_counts == ["0", "1"]


@pytest.mark.parametrize("via", VIAS)
async def test_a_reset_connection_is_retried(via: str) -> None:
    script = Script(answer(OK), reset, answer(OK))
    raw, error = await _run(via, script, max_retries=1)
    assert error is None
    assert raw.http_response.status_code == 200
    assert script.retry_counts == ["0", "1"]


@pytest.mark.parametrize("via", VIAS)
async def test_a_reset_on_the_last_attempt_is_a_connection_error(via: str) -> None:
    script = Script(answer(OK), reset, reset)
    _, error = await _run(via, script, max_retries=1)
    assert type(error) is openai.APIConnectionError
    assert script.retry_counts == ["0", "1"]


async def test_a_malformed_200_through_the_wrapper_is_a_model_reply_error() -> None:
    script = Script(answer(OK), answer(b'{"id": "chatcmpl-1", "choices": ['))
    inner = openai.AsyncOpenAI(base_url=f"{script.upstream.url}/v1", api_key="k")
    settings = BotSettings.model_validate({"skills": {"tool_search_enabled": True}})
    client = wrap_openai(inner, settings=settings)
    try:
        await inner.chat.completions.create(**REQUEST)  # type: ignore[call-overload]
        with pytest.raises(ModelReplyError, match="not valid JSON"):
            await client.chat.completions.create(
                **REQUEST, tools=[{"type": "function", "function": {"name": "f"}}]
            )
    finally:
        await client.close()
        script.upstream.close()
    assert inner in direct._TEMPLATES  # the round took the direct path


async def test_a_call_with_headers_of_its_own_takes_the_sdks_post() -> None:
    script = Script(answer(OK), answer(OK))
    client = openai.AsyncOpenAI(base_url=f"{script.upstream.url}/v1", api_key="k")
    try:
        await client.chat.completions.create(**REQUEST)  # type: ignore[call-overload]
        await post_async(
            client.chat.completions, "chat", {**REQUEST, "extra_headers": {"X-B": "2"}}
        )
    finally:
        await client.close()
        script.upstream.close()
    assert b"x-b: 2" in script.upstream.received[1].lower()
    assert client not in direct._TEMPLATES


async def test_a_template_is_made_again_when_the_clients_key_changes() -> None:
    script = Script(answer(OK), answer(OK), answer(OK))
    client = openai.AsyncOpenAI(base_url=f"{script.upstream.url}/v1", api_key="k1")
    try:
        await client.chat.completions.create(**REQUEST)  # type: ignore[call-overload]
        await post_async(client.chat.completions, "chat", REQUEST)
        client.api_key = "k2"
        await post_async(client.chat.completions, "chat", REQUEST)
    finally:
        await client.close()
        script.upstream.close()
    keys = [raw.partition(b"\r\n\r\n")[0].lower() for raw in script.upstream.received]
    assert [b"bearer k2" in head for head in keys] == [False, False, True]
    assert client in direct._TEMPLATES


async def test_a_template_is_made_again_when_the_clients_base_url_changes() -> None:
    # `_source` reads the base URL where the SDK's ``base_url`` property keeps it.
    first, second = Script(answer(OK), answer(OK)), Script(answer(OK))
    client = openai.AsyncOpenAI(base_url=f"{first.upstream.url}/v1", api_key="k")
    try:
        await client.chat.completions.create(**REQUEST)  # type: ignore[call-overload]
        await post_async(client.chat.completions, "chat", REQUEST)
        client.base_url = f"{second.upstream.url}/v2"
        raw = await post_async(client.chat.completions, "chat", REQUEST)
    finally:
        await client.close()
        first.upstream.close()
        second.upstream.close()
    assert len(first.upstream.received) == 2
    assert second.upstream.received[0].startswith(b"POST /v2/chat/completions ")
    assert raw.http_response.request.url == f"{second.upstream.url}/v2/chat/completions"
    assert direct._TEMPLATES[client]["/chat/completions"].source == direct._source(client)


async def test_headers_and_cookies_the_http_client_gains_later_are_sent() -> None:
    # The first attempt copies the headers the template merged; a client whose own headers,
    # cookies (an upstream's Set-Cookie) or query changed since is built anew, as httpx does.
    script = Script(answer(OK), answer(OK), answer(OK))
    client = openai.AsyncOpenAI(base_url=f"{script.upstream.url}/v1", api_key="k")
    try:
        await client.chat.completions.create(**REQUEST)  # type: ignore[call-overload]
        await post_async(client.chat.completions, "chat", REQUEST)
        client._client.headers["x-later"] = "b"
        client._client.cookies.set("s", "1")
        await post_async(client.chat.completions, "chat", REQUEST)
    finally:
        await client.close()
        script.upstream.close()
    heads = [raw.partition(b"\r\n\r\n")[0].lower() for raw in script.upstream.received]
    assert [b"x-later: b" in head for head in heads] == [False, False, True]
    assert [b"cookie: s=1" in head for head in heads] == [False, False, True]
    assert client in direct._TEMPLATES


async def test_a_client_with_hooks_of_its_own_takes_the_sdks_post() -> None:
    script = Script(answer(OK), answer(OK))
    client = openai.AsyncAzureOpenAI(
        azure_endpoint=script.upstream.url, api_key="k", api_version="2024-10-21"
    )
    try:
        await client.chat.completions.create(**REQUEST)  # type: ignore[call-overload]
        await post_async(client.chat.completions, "chat", REQUEST)
    finally:
        await client.close()
        script.upstream.close()
    assert client not in direct._TEMPLATES
    assert b"/openai/deployments/m/chat/completions" in script.upstream.received[1]


@pytest.mark.parametrize("library", [httpx, httpx2], ids=["httpx", "httpx2"])
async def test_the_first_attempt_is_the_request_build_request_makes(library: Any) -> None:
    # Made from headers built once (`direct._request`): the same request in every part.
    http = library.AsyncClient(headers={"X-Own": "1"})
    script = Script(answer(OK))
    try:
        client = openai.AsyncOpenAI(
            base_url=f"{script.upstream.url}/v1",
            api_key="k",
            default_headers={"X-Team": "a"},
            http_client=http,
        )
    except TypeError as exc:  # openai 2 takes only httpx's client
        script.upstream.close()
        await http.aclose()
        pytest.skip(f"this SDK takes no {library.__name__} client: {exc}")
    try:
        await client.chat.completions.create(**REQUEST)  # type: ignore[call-overload]
        template = direct._template(client, "/chat/completions")
        assert template is not None
        assert template.first is not None
        for content in (b'{"a":"\xc3\xa9"}', b"{}", b"x" * 70_000):
            made = direct._request(http, template, content)
            built = http.build_request(
                "POST",
                template.url,
                headers=[*template.headers, ("x-stainless-retry-count", "0")],
                content=content,
                extensions=template.extensions,
            )
            assert (made.method, made.url, made.extensions) == (
                built.method,
                built.url,
                built.extensions,
            )
            assert made.headers.raw == built.headers.raw
            assert made.headers.encoding == built.headers.encoding
            assert made.content == built.content == content
            assert [part async for part in made.stream] == [content]
            assert type(made.stream) is type(built.stream)
            assert type(made) is type(built)
            assert vars(made).keys() == vars(built).keys()
            again = direct._request(http, template, content)  # each request has its own
            assert again.headers is not made.headers
            assert again.extensions is not made.extensions
        items = [(key, value) for key, _, value in template.first[3]]
        assert items == made.headers.raw[:-1]
        # A cookie set and deleted may leave the jar's folders: built anew, the same request.
        http.cookies.set("s", "1", domain="127.0.0.1", path="/")
        http.cookies.delete("s", domain="127.0.0.1", path="/")
        assert http.cookies.jar._cookies
        assert direct._request(http, template, content).headers.raw == built.headers.raw
    finally:
        await client.close()
        script.upstream.close()
