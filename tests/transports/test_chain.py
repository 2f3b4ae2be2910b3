"""The Responses chain round (`chain_round`) on its own, sans-IO, and its two shells."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
import openai
import pytest

from bot_toolsearch._transports.chain import (
    Round,
    chain_round,
    continue_from,
    drive,
    drive_async,
    is_missing_call_output_error,
)

LOST = "No tool call found for function call output with call_id call_1."
NEW = [{"type": "function_call_output", "call_id": "call_1", "output": "42"}]
FULL = [{"role": "user", "content": "hi"}, {"type": "function_call", "call_id": "call_1"}, *NEW]
BASE = {"model": "m", "tools": [{"type": "function", "name": "f"}]}


@dataclass
class State:
    previous_response_id: str | None = None
    stateless: bool = False
    stateless_replays: int = 0


def bad_request(message: str, param: str | None = "input") -> openai.BadRequestError:
    request = httpx.Request("POST", "http://127.0.0.1/v1/responses")
    response = httpx.Response(400, request=request)
    body = {"message": message, "type": "invalid_request_error", "param": param}
    return openai.BadRequestError(message, response=response, body=body)


def round_of(state: State, new: list[dict[str, Any]] = NEW) -> Round[str]:
    return chain_round(state, BASE, new=lambda: new, full=lambda: FULL)


def finish(flow: Round[str], reply: str) -> str:
    with pytest.raises(StopIteration) as stop:
        flow.send(reply)
    value: str = stop.value.value
    return value


def test_a_round_with_a_previous_response_sends_only_the_new_items() -> None:
    state = State("resp_1")
    flow = round_of(state)
    assert next(flow) == {**BASE, "previous_response_id": "resp_1", "input": NEW}
    assert finish(flow, "reply") == "reply"
    assert state == State("resp_1")


def test_a_round_with_nothing_to_continue_from_sends_the_whole_input() -> None:
    flow = round_of(State())
    assert next(flow) == {**BASE, "input": FULL}
    assert finish(flow, "reply") == "reply"


def test_a_stateless_chain_sends_the_whole_input_and_no_previous_id() -> None:
    flow = round_of(State("resp_1", stateless=True))
    assert next(flow) == {**BASE, "input": FULL}


def test_lost_calls_are_resent_once_statelessly_and_the_chain_stays_stateless(
    caplog: pytest.LogCaptureFixture,
) -> None:
    state = State("resp_1")
    flow = round_of(state)
    next(flow)
    assert flow.throw(bad_request(LOST)) == {**BASE, "input": FULL}
    assert (state.stateless, state.stateless_replays) == (True, 1)
    assert "lost the calls of response resp_1" in caplog.text
    assert finish(flow, "reply") == "reply"
    # The next round of the chain starts stateless.
    continue_from(state, "resp_2")
    assert next(round_of(state)) == {**BASE, "input": FULL}


def test_a_second_lost_call_error_after_the_resend_is_raised() -> None:
    flow = round_of(State("resp_1"))
    next(flow)
    flow.throw(bad_request(LOST))
    error = bad_request(LOST)
    with pytest.raises(openai.BadRequestError) as raised:
        flow.throw(error)
    assert raised.value is error


@pytest.mark.parametrize(
    ("state", "new", "error"),
    [
        (State("resp_1"), NEW, bad_request("Invalid value for 'tools'.", param="tools")),
        (State("resp_1"), NEW, bad_request(LOST, param="tools")),
        (State("resp_1"), [{"role": "user", "content": "again"}], bad_request(LOST)),
        (State(), NEW, bad_request(LOST)),
    ],
    ids=["another-400", "another-param", "no-call-output", "stateless-round"],
)
def test_any_other_error_is_raised_unchanged(
    state: State, new: list[dict[str, Any]], error: openai.BadRequestError
) -> None:
    before = State(state.previous_response_id, state.stateless, state.stateless_replays)
    flow = round_of(state, new)
    next(flow)
    with pytest.raises(openai.BadRequestError) as raised:
        flow.throw(error)
    assert raised.value is error
    assert state == before


def test_continue_from_a_response_without_an_id_makes_the_chain_stateless() -> None:
    state = State("resp_1")
    continue_from(state, "resp_2")
    assert state == State("resp_2")
    continue_from(state, None)
    assert state == State(None, stateless=True)


def test_the_missing_call_error_is_recognised_by_message_and_param() -> None:
    assert is_missing_call_output_error(bad_request(LOST))
    assert is_missing_call_output_error(bad_request(LOST.upper(), param=None))
    assert not is_missing_call_output_error(bad_request(LOST, param="tools"))
    assert not is_missing_call_output_error(bad_request("Unknown parameter."))


class Upstream:
    """A sender that fails with ``errors`` first, then answers with the request count."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.requests: list[dict[str, Any]] = []

    def __call__(self, **request: Any) -> str:
        self.requests.append(request)
        if self.errors:
            raise self.errors.pop(0)
        return f"reply {len(self.requests)}"

    async def send_async(self, **request: Any) -> str:
        return self(**request)


def test_drive_resends_a_lost_chain_and_returns_the_reply() -> None:
    upstream = Upstream(bad_request(LOST))
    assert drive(round_of(State("resp_1")), upstream) == "reply 2"
    assert upstream.requests == [
        {**BASE, "previous_response_id": "resp_1", "input": NEW},
        {**BASE, "input": FULL},
    ]


async def test_drive_async_resends_a_lost_chain_and_returns_the_reply() -> None:
    upstream = Upstream(bad_request(LOST))
    assert await drive_async(round_of(State("resp_1")), upstream.send_async) == "reply 2"
    assert [r.get("previous_response_id") for r in upstream.requests] == ["resp_1", None]


async def test_the_shells_raise_what_the_round_does_not_recover() -> None:
    error = bad_request("Invalid value for 'tools'.", param="tools")
    with pytest.raises(openai.BadRequestError) as raised:
        drive(round_of(State("resp_1")), Upstream(error))
    assert raised.value is error
    upstream = Upstream(error)
    with pytest.raises(openai.BadRequestError) as raised:
        await drive_async(round_of(State("resp_1")), upstream.send_async)
    assert raised.value is error
    assert len(upstream.requests) == 1
