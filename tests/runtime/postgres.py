"""A fresh schema on the test PostgreSQL server per test, or a skip saying why there is none.

`.ci/services.sh` starts the server from Debian's packages and exports its URL as
``BOT_TOOLSEARCH_TEST_POSTGRES``; a machine without it skips these tests with that reason.
"""

from __future__ import annotations

import os
import uuid
from urllib.parse import quote

import pytest

ENV = "BOT_TOOLSEARCH_TEST_POSTGRES"
SKIP = f"no PostgreSQL server: {ENV} is unset (.ci/services.sh starts one; .ci/run does)"


def server_url() -> str:
    """The test server's URL, or a skip."""
    url = os.environ.get(ENV, "")
    if not url:
        pytest.skip(SKIP)
    pytest.importorskip("psycopg", reason="the postgres extra (psycopg) is not installed")
    return url


async def fresh_database() -> str:
    """A URL whose tables live in a new, empty schema of their own."""
    url = server_url()
    import psycopg

    schema = f"t_{uuid.uuid4().hex}"
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(f"CREATE SCHEMA {schema}")  # type: ignore[arg-type]
    separator = "&" if "?" in url else "?"
    return f"{url}{separator}options={quote(f'-csearch_path={schema}')}"
