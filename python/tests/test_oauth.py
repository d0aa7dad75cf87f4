"""The client's OAuth calls against a live authorization server: a code redeemed with the key's DPoP proof gives
a bound token, which acts with that key; the bound grant refreshes only with the key's proof; the bound token is
exchanged (RFC 8693) with its holder's proof."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import secrets
from collections.abc import Generator
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import httpx2
import mcp_types as types
import pytest
from conftest import LiveServer
from crm_server import serving
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from pydantic import AnyHttpUrl
from starlette.applications import Starlette

import mandate
from mandate import AgentKey, AsyncMandate, Mandate, MandateError
from mandate.client import Attempt, Relay
from mandate.mcp import DPoPAuthentication, MandateTokenVerifier, ToolGrant, mandate_tool

RESOURCE = "https://mcp.example.com/mcp"
#: The MCP server's origin as its clients reach it (a proxy in front of the test's server on loopback).
PUBLIC = "https://mcp.example.com"
REDIRECT = "http://127.0.0.1:8976/callback"


def claims_of(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))


def code_for(owner: Mandate, server: LiveServer, client_id: str, verifier: str) -> str:
    """The code a developer's consent gives `client_id` for `read delegate crm:*`."""
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    query = urlencode(
        {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": REDIRECT,
            "scope": "read delegate crm:*",
            "resource": RESOURCE,
            "state": "s-1",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
    )
    to_consent = httpx.get(f"{server.base_url}/v1/oauth/authorize?{query}", follow_redirects=False)
    assert to_consent.status_code == 303
    sealed = parse_qs(urlsplit(to_consent.headers["location"]).query)["request"][0]
    developer = owner.keys.create({"role": "developer", "email": "dev@example.com"})["api_key"]
    with Mandate(server.base_url, api_key=developer) as human:
        decided = human.oauth.decide_request(
            {
                "request": sealed,
                "decision": "approve",
                "grant": {"actions": ["read", "delegate"], "resources": ["crm:*"]},
            }
        )
    redirect: str = decided["redirect"]
    callback = parse_qs(urlsplit(redirect).query)
    assert callback["iss"] == [server.base_url]
    return callback["code"][0]


def test_tokens_bound_to_a_key_by_its_proof_at_the_token_endpoint(oauth_server: LiveServer) -> None:
    key = AgentKey.generate()
    verifier = secrets.token_urlsafe(48)
    with Mandate(oauth_server.base_url, api_key=oauth_server.api_key) as owner:
        client_id = owner.oauth.create_client({"name": "py-client", "redirect_uris": ["http://127.0.0.1/callback"]})[
            "client_id"
        ]
        code = code_for(owner, oauth_server, client_id, verifier)
    with Mandate(oauth_server.base_url) as client:
        tokens = client.oauth.token(
            {
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": REDIRECT,
                "client_id": client_id,
                "code_verifier": verifier,
                "resource": RESOURCE,
            },
            dpop_key=key,
        )
        assert tokens["token_type"] == "DPoP"
        assert claims_of(tokens["access_token"])["cnf"] == {"jkt": key.jkt}
        acted = client.as_agent(tokens["access_token"], key=key).authorize({"action": "read", "resource": "crm:a"})
        assert acted["authorized"] is True

        refresh = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": client_id}
        with pytest.raises(MandateError) as unproved:
            client.oauth.token(refresh)
        assert (unproved.value.status, unproved.value.code) == (400, "dpop_required")
        with pytest.raises(MandateError) as other_key:
            client.oauth.token(refresh, dpop_key=AgentKey.generate())
        assert other_key.value.code == "dpop_key_mismatch"
        refreshed = client.oauth.token(refresh, dpop_key=key)
        assert claims_of(refreshed["access_token"])["cnf"] == {"jkt": key.jkt}

        exchange = {
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "subject_token": refreshed["access_token"],
            "subject_token_type": "urn:ietf:params:oauth:token-type:access_token",
            "scope": "read",
            "mandate_grant": json.dumps({"agent_id": "py-helper"}),
        }
        with pytest.raises(MandateError) as not_the_holder:
            client.oauth.token(exchange, dpop_key=AgentKey.generate())
        assert not_the_holder.value.code == "dpop_key_mismatch"
        child = client.oauth.token(exchange, dpop_key=key)
        assert child["issued_token_type"] == "urn:ietf:params:oauth:token-type:access_token"
        assert claims_of(child["access_token"])["sub"] == "agent:py-helper"
        assert claims_of(child["access_token"])["cnf"] == {"jkt": key.jkt}


def test_resources_and_their_relay_keys(oauth_server: LiveServer) -> None:
    gate = AgentKey.generate()
    with Mandate(oauth_server.base_url, api_key=oauth_server.api_key) as owner:
        made = owner.oauth.create_resource({"resource": RESOURCE, "relay_jkts": [gate.jkt]})
        assert made["resource_id"].startswith("ors_")
        assert [(r["resource"], r["relay_jkts"]) for r in owner.oauth.list_resources()["resources"]] == [
            (RESOURCE, [gate.jkt])
        ]
        with pytest.raises(MandateError) as malformed:
            owner.oauth.create_resource({"resource": "not a uri", "relay_jkts": [gate.jkt]})
        assert malformed.value.status == 422
        owner.oauth.delete_resource(made["resource_id"])
        assert owner.oauth.list_resources()["resources"] == []


def relayed_setup(server: LiveServer, owner: Mandate, gates: list[AgentKey]) -> tuple[str, AgentKey]:
    """A token a client obtained by OAuth, bound to the client's own key, for RESOURCE, whose gates' relay keys
    are registered."""
    client_key = AgentKey.generate()
    verifier = secrets.token_urlsafe(48)
    owner.oauth.create_resource({"resource": RESOURCE, "relay_jkts": [gate.jkt for gate in gates]})
    client_id = owner.oauth.create_client({"name": "py-relay", "redirect_uris": ["http://127.0.0.1/callback"]})[
        "client_id"
    ]
    code = code_for(owner, server, client_id, verifier)
    with Mandate(server.base_url) as client:
        tokens = client.oauth.token(
            {
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": REDIRECT,
                "client_id": client_id,
                "code_verifier": verifier,
                "resource": RESOURCE,
            },
            dpop_key=client_key,
        )
    token: str = tokens["access_token"]
    assert claims_of(token)["cnf"] == {"jkt": client_key.jkt}
    return token, client_key


def test_a_gate_relays_the_clients_proof(oauth_server: LiveServer) -> None:
    gate, second_gate, other_gate = AgentKey.generate(), AgentKey.generate(), AgentKey.generate()
    read: Attempt = {"action": "read", "resource": "crm:a"}
    with Mandate(oauth_server.base_url, api_key=oauth_server.api_key) as owner:
        token, client_key = relayed_setup(oauth_server, owner, [gate, second_gate])
        owner.oauth.create_resource({"resource": f"{RESOURCE}/other", "relay_jkts": [other_gate.jkt]})
    with Mandate(oauth_server.base_url) as mandate:

        def proof() -> str:
            return client_key.proof(method="POST", url=f"{RESOURCE}/tools", access_token=token)

        # Without the client's proof, a bound token is refused: the relay key alone cannot act.
        with pytest.raises(MandateError) as alone:
            mandate.records.authorize(read, token=token, relay=Relay(gate))
        assert (alone.value.status, alone.value.code) == (401, "client_proof_required")
        with pytest.raises(MandateError) as keyless:
            mandate.records.authorize(read, token=token)
        assert keyless.value.code == "dpop_key_missing"

        # A key not registered for the token's audience (registered for another resource) relays nothing.
        with pytest.raises(MandateError) as unregistered:
            mandate.records.authorize(read, token=token, relay=Relay(other_gate, proof()), max_retries=0)
        assert (unregistered.value.status, unregistered.value.code) == (403, "relay_not_registered")

        # The registered gate with the client's proof: allowed, recorded with the gate's relay key.
        forwarded = proof()
        answer = mandate.records.authorize(read, token=token, relay=Relay(gate, forwarded), max_retries=0)
        assert answer["authorized"] is True

        # The client's proof is used once.
        with pytest.raises(MandateError) as replayed:
            mandate.records.authorize(read, token=token, relay=Relay(gate, forwarded), max_retries=0)
        assert (replayed.value.status, replayed.value.code) == (401, "client_proof_invalid")
        assert replayed.value.problem.get("reason") == "dpop_replayed"

        # Only the relay that authorized the record (its relay key is kept with it) completes it, with its own
        # proof alone: another gate registered for the same resource may not.
        with pytest.raises(MandateError) as not_yours:
            mandate.records.complete(answer["aar_id"], {"result": "success"}, token=token, relay=Relay(second_gate))
        assert (not_yours.value.status, not_yours.value.code) == (403, "relay_not_yours")
        done = mandate.records.complete(answer["aar_id"], {"result": "success"}, token=token, relay=Relay(gate))
        assert done["status"] == "completed"


class ClientDPoP(httpx2.Auth):
    """A stock client's DPoP (RFC 9449 §7.1): each MCP request carries a fresh proof for the server's public URL."""

    def __init__(self, token: str, key: AgentKey) -> None:
        self.token, self.key = token, key

    def auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response, None]:
        url = f"{PUBLIC}{request.url.path}"
        request.headers["authorization"] = f"DPoP {self.token}"
        request.headers["dpop"] = self.key.proof(method=request.method, url=url, access_token=self.token)
        yield request


def test_the_python_mcp_gate_relays_a_dpop_clients_proof(oauth_server: LiveServer) -> None:
    gate = AgentKey.generate()
    ran: list[str] = []
    with Mandate(oauth_server.base_url, api_key=oauth_server.api_key) as owner:
        token, client_key = relayed_setup(oauth_server, owner, [gate])
        jwks = owner.tokens.jwks()

        def app_for(url: str) -> Starlette:
            client = AsyncMandate(oauth_server.base_url)
            server = MCPServer(
                "crm",
                token_verifier=MandateTokenVerifier(mandate.Verifier(jwks), resource=RESOURCE, audience="required"),
                auth=AuthSettings(
                    issuer_url=AnyHttpUrl(oauth_server.base_url),
                    resource_server_url=AnyHttpUrl(RESOURCE),
                    validate_token_resource=False,
                ),
            )

            @server.tool()
            @mandate_tool(
                client, ToolGrant(action="read", resource=lambda a: f"crm:accounts/{a['account_id']}"), relay_key=gate
            )
            async def read_account(account_id: str) -> str:
                """Read an account."""
                ran.append(account_id)
                return f"account {account_id}"

            app = server.streamable_http_app()
            app.add_middleware(DPoPAuthentication, public_url=PUBLIC)
            return app

        async def tool_call(auth: httpx2.Auth) -> types.CallToolResult:
            async with httpx2.AsyncClient(auth=auth, timeout=30) as http:
                async with Client(streamable_http_client(served, http_client=http)) as mcp:
                    return await mcp.call_tool("read_account", {"account_id": "7"})

        with serving(app_for) as served:
            result = asyncio.run(tool_call(ClientDPoP(token, client_key)))
            assert (result.is_error, ran) == (False, ["7"])
            # The gate completed the record with its relay proof alone.
            agent = claims_of(token)["sub"].removeprefix("agent:")
            (record,) = owner.records.page(agent_id=agent)["records"]
            assert (record["resource"], record["status"], record.get("result")) == (
                "crm:accounts/7",
                "completed",
                "success",
            )
            # The bound token without its holder's proofs: refused at the door, nothing runs.
            bearer = httpx.post(
                served, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers={"authorization": f"Bearer {token}"}
            )
            assert bearer.status_code == 401 and bearer.headers["www-authenticate"].startswith("DPoP")
            unproved = httpx.post(
                served, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers={"authorization": f"DPoP {token}"}
            )
            assert unproved.status_code == 401 and "dpop_required" in unproved.text
            assert ran == ["7"]
