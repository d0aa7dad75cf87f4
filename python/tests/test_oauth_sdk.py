"""The MCP Python SDK's own OAuth client against Mandate as the authorization server (issue 35; plan row C8).

``mcp.client.auth.OAuthClientProvider`` is the httpx auth of the SDK's streamable-HTTP client to the CRM's MCP
server (crm_server.py, gated by mandate.mcp): it meets the server's 401, finds Mandate in the RFC 9728 metadata,
sends the person to the consent page (``redirect_handler``), where Chromium signs in with a developer key and
approves (web/e2e/consent-driver.mjs, run with ``node``), and redeems the code the browser came back with
(``callback_handler``). The tool runs and its record is in that person's workflow. Mandate's access tokens live
``TTL`` seconds here, so the provider's own refresh (before a request, once the token's ``expires_in`` has passed)
is what makes the second call.

The client is pre-registered (its ``client_id`` in the provider's storage): the SDK would otherwise register by
RFC 7591, which Mandate does not offer. The browser is Debian's Chromium (``CHROMIUM``, which ``cargo xtask
python --test`` sets) driven by web/'s playwright-core; run by bare ``pytest`` without ``CHROMIUM``, the test is
skipped.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx2
import mcp_types as types
import pytest
from conftest import LiveServer, oauth_issuer
from crm_server import Outbox, crm_server, serving
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl

import mandate
from mandate import AsyncMandate, Mandate
from mandate.mcp import META_AAR_ID

WEB = Path(__file__).resolve().parents[2] / "web"
DRIVER = WEB / "e2e" / "consent-driver.mjs"
REDIRECT = "http://127.0.0.1:8976/callback"
#: Mandate's access-token lifetime here, seconds: short, so the provider refreshes within the test.
TTL = 3


def browser() -> tuple[str, str]:
    """Node and Chromium for the consent driver; skipped without ``CHROMIUM``, failed when it is set but unusable."""
    chromium = os.environ.get("CHROMIUM")
    if chromium is None:
        pytest.skip("CHROMIUM is not set: the consent page needs Chromium (cargo xtask python --test sets it)")
    node = shutil.which("node")
    missing = [
        what
        for what, present in [
            (f"Chromium at {chromium}", Path(chromium).exists()),
            ("node on PATH", node is not None),
            (
                "web/node_modules/playwright-core (cargo xtask web installs it)",
                (WEB / "node_modules" / "playwright-core").is_dir(),
            ),
        ]
        if not present
    ]
    if missing or node is None:
        pytest.fail(f"the consent driver needs {', '.join(missing)}")
    return node, chromium


class MemoryStorage:
    """The provider's ``TokenStorage``, in memory, holding a pre-registered client."""

    def __init__(self, client: OAuthClientInformationFull) -> None:
        self.client: OAuthClientInformationFull | None = client
        self.tokens: OAuthToken | None = None
        self.saved: list[OAuthToken] = []

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens
        self.saved.append(tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Person:
    """The human at the consent page: ``redirect_handler`` keeps the URL, ``callback_handler`` has Chromium sign in
    with the key, grant ``read`` on ``crm:*`` and approve, and answers the code, state and issuer the browser came
    back with."""

    def __init__(self, node: str, chromium: str, key: str) -> None:
        self.node, self.chromium, self.key = node, chromium, key
        self.authorization_urls: list[str] = []

    async def redirect(self, url: str) -> None:
        self.authorization_urls.append(url)

    async def callback(self) -> AuthorizationCodeResult:
        driver = await asyncio.create_subprocess_exec(
            self.node,
            str(DRIVER),
            self.authorization_urls[-1],
            self.key,
            # The SDK asks for no scope (the server's metadata lists none): the person names what to grant.
            "read",
            "crm:*",
            cwd=WEB,
            env={**os.environ, "CHROMIUM": self.chromium},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(driver.communicate(), timeout=60)
        assert driver.returncode == 0, err.decode()
        query = parse_qs(urlsplit(out.decode().strip()).query)
        return AuthorizationCodeResult(code=query["code"][0], state=query["state"][0], iss=query["iss"][0])


def test_the_python_sdks_oauth_provider_completes_the_flow_and_refreshes() -> None:
    node, chromium = browser()
    with (
        oauth_issuer(f"access_token_ttl_seconds = {TTL}\n") as server,
        Mandate(server.base_url, api_key=server.api_key) as owner,
    ):
        flow(server, owner, node, chromium)


def flow(server: LiveServer, owner: Mandate, node: str, chromium: str) -> None:
    registered = owner.oauth.create_client({"name": "MCP Python SDK", "redirect_uris": [REDIRECT]})
    developer = owner.keys.create({"role": "developer", "email": "dev@example.com"})["api_key"]
    storage = MemoryStorage(
        OAuthClientInformationFull(
            client_id=registered["client_id"],
            redirect_uris=[AnyUrl(REDIRECT)],
            token_endpoint_auth_method="none",
            grant_types=["authorization_code", "refresh_token"],
        )
    )
    person = Person(node, chromium, developer)
    verifier = mandate.Verifier(owner.tokens.jwks())

    with serving(
        lambda url: crm_server(AsyncMandate(server.base_url), verifier, url, Outbox()).streamable_http_app()
    ) as url:
        provider = OAuthClientProvider(
            server_url=url,
            client_metadata=OAuthClientMetadata(
                client_name="MCP Python SDK",
                redirect_uris=[AnyUrl(REDIRECT)],
                token_endpoint_auth_method="none",
                grant_types=["authorization_code", "refresh_token"],
            ),
            storage=storage,
            redirect_handler=person.redirect,
            callback_handler=person.callback,
        )

        async def calls() -> tuple[types.CallToolResult, types.CallToolResult]:
            async with httpx2.AsyncClient(auth=provider, timeout=60) as http:
                async with Client(streamable_http_client(url, http_client=http)) as mcp:
                    first = await mcp.call_tool("crm_lookup", {"contact_id": "c-1001"})
                    # Past the access token's lifetime: the provider refreshes before the next request.
                    await asyncio.sleep(TTL + 1)
                    second = await mcp.call_tool("crm_lookup", {"contact_id": "c-1001"})
                    return first, second

        first, second = asyncio.run(calls())

    # One consent, for this client and this MCP server, with PKCE.
    (authorization,) = person.authorization_urls
    asked = parse_qs(urlsplit(authorization).query)
    assert (asked["client_id"], asked["resource"], asked["code_challenge_method"]) == (
        [registered["client_id"]],
        [url],
        ["S256"],
    )
    # The code's tokens, then the refresh's: a new access token, the refresh token rotated.
    assert len(storage.saved) == 2
    issued, refreshed = storage.saved
    assert issued.expires_in == TTL and refreshed.expires_in == TTL
    assert refreshed.access_token != issued.access_token
    assert issued.refresh_token is not None and refreshed.refresh_token not in (None, issued.refresh_token)

    assert (first.is_error, second.is_error) == (False, False)
    texts = [c.text for r in (first, second) for c in r.content if isinstance(c, types.TextContent)]
    assert [json.loads(text)["name"] for text in texts] == ["Ada Lovelace", "Ada Lovelace"]
    # Both records completed in the person's workflow: the grant's, whose root the refresh renewed.
    with Mandate(server.base_url, api_key=developer) as human:
        (grant,) = human.oauth.list_grants()["grants"]
        records = [human.records.get(str((r.meta or {})[META_AAR_ID])) for r in (first, second)]
        assert [(r["resource"], r["status"], r.get("result")) for r in records] == [
            ("crm:contact/c-1001", "completed", "success"),
            ("crm:contact/c-1001", "completed", "success"),
        ]
        assert {r["human_ref"] for r in records} == {grant["human_ref"]}
        assert {r["provenance_ref"] for r in records} == {
            w["provenance_ref"] for w in human.records.workflows(human_ref=grant["human_ref"])
        }
        summary = human.records.provenance(records[0]["provenance_ref"])
        assert (summary["total_records"], summary["actions_by_type"]) == (2, {"read": 2})
