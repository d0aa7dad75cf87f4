"""The client's OAuth calls against a live authorization server: a code redeemed with the key's DPoP proof gives
a bound token, which acts with that key; the bound grant refreshes only with the key's proof; the bound token is
exchanged (RFC 8693) with its holder's proof."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from conftest import LiveServer

from mandate import AgentKey, Mandate, MandateError

RESOURCE = "https://mcp.example.com/mcp"
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
