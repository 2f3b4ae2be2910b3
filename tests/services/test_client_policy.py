"""A named client's policy applied to a settings snapshot, and keys matched by their SHA-256."""

from __future__ import annotations

import hashlib

from bot_toolsearch import BotSettings
from bot_toolsearch._config.settings import ProxyClient
from bot_toolsearch._services.client_policy import CURRENT, ClientPolicy, match, scoped


def client(name: str, key: str, **rest: object) -> ProxyClient:
    return ProxyClient.model_validate(
        {"name": name, "key_sha256": hashlib.sha256(key.encode()).hexdigest(), **rest}
    )


def test_match_finds_the_client_of_a_key_and_no_other() -> None:
    clients = [client("a", "key-a"), client("b", "key-b")]
    assert match(clients, "key-b") is clients[1]
    assert match(clients, "key-c") is None
    assert match(clients, None) is None
    assert match(clients, "") is None
    assert match([client("empty", "")], "") is None  # an empty key is no key


def test_scoped_is_the_snapshot_itself_without_a_client() -> None:
    settings = BotSettings.model_validate({"tools": {"deny": ["x"]}})
    assert scoped(settings) is settings


def test_a_clients_allow_replaces_and_its_deny_adds_to_the_global_ones() -> None:
    settings = BotSettings.model_validate(
        {"tools": {"allow": ["weather.*"], "deny": ["admin.*"]}, "generation": 3}
    )
    own = ClientPolicy("b", allow=("files.*",), deny=("files.secret",))
    token = CURRENT.set(own)
    try:
        narrowed = scoped(settings)
        assert scoped(settings) is narrowed  # made once per snapshot and client
    finally:
        CURRENT.reset(token)
    assert narrowed.tools.allow == ("files.*",)
    assert narrowed.tools.deny == ("admin.*", "files.secret")  # the global deny still holds
    assert narrowed.generation == 3
    assert settings.tools.allow == ("weather.*",)  # the snapshot itself is untouched
    inherit = ClientPolicy("a", allow=None, deny=())
    token = CURRENT.set(inherit)
    try:
        assert scoped(settings).tools.allow == ("weather.*",)
    finally:
        CURRENT.reset(token)
