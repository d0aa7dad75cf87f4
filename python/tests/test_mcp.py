"""mandate.mcp: an MCPServer (mcp 2.3.0) gated by Mandate, over streamable HTTP on 127.0.0.1, called by the SDK's
client."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, cast

import anyio
import httpx
import httpx2
import mcp_types as types
import pytest
from conftest import LiveServer
from crm_server import serving
from mcp import Client
from mcp.client.session import ClientRequestContext, ElicitationFnT
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from pydantic import AnyHttpUrl

import mandate
from mandate import AgentKey, AsyncMandate, Mandate, MandateError, VerifiedToken
from mandate.client import output_hash
from mandate.mcp import (
    META_AAR_ID,
    META_APPROVAL_URL,
    META_DELEGATED_TOKEN,
    META_ERROR,
    META_RESULT_HASH,
    AudiencePolicy,
    MandateTokenVerifier,
    TokenChecker,
    ToolGrant,
    audience_problem,
    jti_hash,
    mandate_tool,
    tool_result_hash,
)


@dataclass
class Crm:
    """The tools' side effects."""

    ran: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    #: Set by a slow tool once it runs.
    started: threading.Event = field(default_factory=threading.Event)


@dataclass
class Served:
    url: str
    crm: Crm


def build(client: AsyncMandate, checker: TokenChecker, crm: Crm, url: str, key: AgentKey | None = None) -> MCPServer:
    server = MCPServer(
        "crm",
        token_verifier=MandateTokenVerifier(checker),
        auth=AuthSettings(
            issuer_url=AnyHttpUrl(client.base_url),
            resource_server_url=AnyHttpUrl(url),
            validate_token_resource=False,
        ),
    )

    @server.tool()
    @mandate_tool(client, ToolGrant(action="read", resource=lambda a: f"crm:accounts/{a['account_id']}"), key=key)
    async def read_account(account_id: str) -> str:
        """Read an account."""
        crm.ran.append(("read_account", {"account_id": account_id}))
        return f"account {account_id}"

    @server.tool()
    @mandate_tool(
        client,
        ToolGrant(action="delete", resource=lambda a: f"crm:accounts/{a['account_id']}"),
        approval_timeout_seconds=20,
    )
    async def delete_account(account_id: str, ctx: Context) -> dict[str, str]:
        """Delete an account (a reviewer approves)."""
        crm.ran.append(("delete_account", {"account_id": account_id, "request": ctx.request_id}))
        return {"deleted": account_id}

    @server.tool()
    @mandate_tool(client, ToolGrant(action="read", resource="crm:accounts/notes"))
    async def read_notes(fail: bool) -> types.CallToolResult:
        """Read the notes: a result of its own, an error one when asked."""
        crm.ran.append(("read_notes", {"fail": fail}))
        return types.CallToolResult(content=[types.TextContent(type="text", text="no notes")], is_error=fail)

    @server.tool()
    @mandate_tool(client, ToolGrant(action="read", resource="crm:accounts/export"), key=key)
    async def export_accounts(rows: int) -> str:
        """Export the accounts, slowly: long enough to be cancelled."""
        crm.ran.append(("export_accounts", {"rows": rows}))
        crm.started.set()
        await anyio.sleep(30)
        return "exported"

    return server


@pytest.fixture
def admin(live_server: LiveServer) -> Iterator[Mandate]:
    with Mandate(live_server.base_url, api_key=live_server.api_key) as client:
        yield client


@contextmanager
def serve(agent_client: AsyncMandate, checker: TokenChecker, key: AgentKey | None = None) -> Iterator[Served]:
    """The gated MCP server on 127.0.0.1, port 0, in a thread (``key``: the server's own)."""
    crm = Crm()
    with serving(lambda url: build(agent_client, checker, crm, url, key).streamable_http_app()) as url:
        yield Served(url, crm)


@pytest.fixture
def served(live_server: LiveServer, admin: Mandate) -> Iterator[Served]:
    with serve(AsyncMandate(live_server.base_url), mandate.Verifier(admin.tokens.jwks())) as running:
        yield running


def issue(admin: Mandate, agent: str) -> str:
    return admin.tokens.issue_root(
        {
            "developer_email": "dev@example.com",
            "agent_id": agent,
            "resources": ["crm:accounts/*"],
            "actions": ["read", "delete"],
            "constraints": {"require_approval": {"actions": ["delete"]}},
        }
    )["compact_jwt"]


def call(
    served: Served,
    token: str,
    name: str,
    arguments: dict[str, Any],
    elicit: ElicitationFnT | None = None,
    mode: str = "auto",
    meta: dict[str, Any] | None = None,
) -> types.CallToolResult:
    """One tool call by the SDK's client: ``auto`` negotiates 2026-07-28 (an approval takes two rounds),
    ``legacy`` the initialize handshake (the page is sent with ``elicitation/create``)."""

    async def go() -> types.CallToolResult:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
            async with Client(
                streamable_http_client(served.url, http_client=http), elicitation_callback=elicit, mode=mode
            ) as client:
                return await client.call_tool(name, arguments, meta=cast(Any, meta))

    return asyncio.run(go())


def text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def test_a_permitted_call_runs_and_is_completed_with_the_outputs_hash(served: Served, admin: Mandate) -> None:
    token = issue(admin, "mcp-read")
    result = call(served, token, "read_account", {"account_id": "7"})
    assert (result.is_error, text(result)) == (False, "account 7")
    assert served.crm.ran == [("read_account", {"account_id": "7"})]
    (record,) = admin.records.page(agent_id="mcp-read")["records"]
    assert (record["action"], record["resource"], record["status"], record.get("args")) == (
        "read",
        "crm:accounts/7",
        "completed",
        {"account_id": "7"},
    )
    assert record.get("result_hash") == output_hash("account 7")


def test_a_call_tool_result_carries_the_record_and_its_hash_in_meta(served: Served, admin: Mandate) -> None:
    token = issue(admin, "mcp-notes")
    result = call(served, token, "read_notes", {"fail": False})
    meta = result.meta or {}
    (record,) = admin.records.page(agent_id="mcp-notes")["records"]
    assert record.get("result_hash") == tool_result_hash(result) == meta[META_RESULT_HASH]
    assert meta[META_AAR_ID] == record.get("aar_id")
    failed = call(served, token, "read_notes", {"fail": True})
    assert failed.is_error and (failed.meta or {})[META_AAR_ID] != meta[META_AAR_ID]
    results = [r.get("result") for r in admin.records.page(agent_id="mcp-notes")["records"]]
    assert sorted(r or "" for r in results) == ["error", "success"]


def test_out_of_scope_is_a_tool_error_with_the_code_and_nothing_runs(served: Served, admin: Mandate) -> None:
    token = admin.tokens.issue_root(
        {
            "developer_email": "dev@example.com",
            "agent_id": "mcp-narrow",
            "resources": ["crm:leads/*"],
            "actions": ["read"],
        }
    )["compact_jwt"]
    result = call(served, token, "read_account", {"account_id": "7"})
    assert result.is_error
    meta = result.meta or {}
    assert meta[META_ERROR] == "resource_not_permitted"
    assert isinstance(meta[META_AAR_ID], str)
    assert served.crm.ran == []


def test_a_forged_token_is_answered_401_and_never_reaches_the_tool(served: Served, admin: Mandate) -> None:
    token = issue(admin, "mcp-forged")
    head, body, signature = token.split(".")
    forged = f"{head}.{body}.{signature[:-4]}AAAA"
    ping = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for presented in (forged, "not-a-token"):
        answer = httpx.post(served.url, json=ping, headers={"Authorization": f"Bearer {presented}"})
        assert answer.status_code == 401
        assert answer.headers["www-authenticate"].startswith("Bearer")
    assert served.crm.ran == []


def test_a_revoked_token_is_refused_offline_by_its_status_list(live_server: LiveServer, admin: Mandate) -> None:
    token = issue(admin, "mcp-revoked")
    claims = mandate.decode_token_unverified(token)["claims"]
    jti, uri = claims["jti"], claims["status"]["status_list"]["uri"]
    assert isinstance(jti, str) and isinstance(uri, str)
    verifier = mandate.Verifier(admin.tokens.jwks(), check_status=True, status_origins=[live_server.base_url])
    name = uri.rsplit("/", 1)[-1]
    verifier.set_status_list(admin.tokens.status_list(name))
    with serve(AsyncMandate(live_server.base_url), verifier) as running:
        assert not call(running, token, "read_account", {"account_id": "1"}).is_error
        admin.tokens.revoke({"jti": jti})
        ping = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        deadline = time.monotonic() + 15
        status = 0
        while status != 401 and time.monotonic() < deadline:
            verifier.set_status_list(admin.tokens.status_list(name))
            status = httpx.post(running.url, json=ping, headers={"Authorization": f"Bearer {token}"}).status_code
            if status != 401:
                time.sleep(0.5)
        assert status == 401
        assert [name for name, _ in running.crm.ran] == ["read_account"]


def test_approval_without_elicitation_is_a_tool_error_naming_the_page(served: Served, admin: Mandate) -> None:
    token = issue(admin, "mcp-pending")
    result = call(served, token, "delete_account", {"account_id": "3"})
    assert result.is_error
    meta = result.meta or {}
    assert meta[META_ERROR] == "approval_pending"
    url = meta[META_APPROVAL_URL]
    assert isinstance(url, str) and url in text(result)
    assert served.crm.ran == []


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_approval_by_url_elicitation_runs_once_approved(served: Served, admin: Mandate, mode: str) -> None:
    token = issue(admin, f"mcp-approve-{mode}")
    asked: list[types.ElicitRequestParams] = []

    async def approve(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        assert isinstance(params, types.ElicitRequestURLParams)
        approval_id = params.url.rsplit("/", 1)[-1]
        await asyncio.to_thread(admin.approvals.decide, approval_id, {"decision": "approve", "note": "ok"})
        return types.ElicitResult(action="accept")

    result = call(served, token, "delete_account", {"account_id": "5"}, approve, mode)
    assert (result.is_error, result.structured_content) == (False, {"deleted": "5"}), result
    (params,) = asked
    assert isinstance(params, types.ElicitRequestURLParams)
    assert params.url.startswith(f"{admin.base_url}/#/approval/")
    assert [name for name, _ in served.crm.ran] == ["delete_account"]
    (record,) = admin.records.page(agent_id=f"mcp-approve-{mode}")["records"]
    assert (record["status"], record.get("result")) == ("completed", "success")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_a_declined_or_denied_approval_never_runs(served: Served, admin: Mandate, mode: str) -> None:
    token = issue(admin, f"mcp-deny-{mode}")

    async def decline(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    declined = call(served, token, "delete_account", {"account_id": "8"}, decline, mode)
    assert (declined.is_error, (declined.meta or {})[META_ERROR]) == (True, "approval_declined")

    async def deny(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestURLParams)
        approval_id = params.url.rsplit("/", 1)[-1]
        await asyncio.to_thread(admin.approvals.decide, approval_id, {"decision": "deny", "note": "no"})
        return types.ElicitResult(action="accept")

    denied = call(served, token, "delete_account", {"account_id": "8"}, deny, mode)
    assert (denied.is_error, (denied.meta or {})[META_ERROR]) == (True, "approval_denied")
    assert served.crm.ran == []


def test_mandate_unreachable_means_the_tool_does_not_run(admin: Mandate) -> None:
    token = issue(admin, "mcp-down")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]
    with serve(AsyncMandate(f"http://127.0.0.1:{dead}", max_retries=0), mandate.Verifier(admin.tokens.jwks())) as down:
        result = call(down, token, "read_account", {"account_id": "1"})
        assert (result.is_error, (result.meta or {})[META_ERROR]) == (True, "network_error")
        assert down.crm.ran == []


def test_a_call_without_a_token_never_runs(admin: Mandate) -> None:
    crm = Crm()
    server = build(AsyncMandate(admin.base_url), mandate.Verifier(admin.tokens.jwks()), crm, "http://127.0.0.1/mcp")

    async def go() -> types.CallToolResult:
        async with Client(server) as client:
            return await client.call_tool("read_account", {"account_id": "1"})

    result = asyncio.run(go())
    assert (result.is_error, (result.meta or {})[META_ERROR]) == (True, "token_required")
    assert crm.ran == []


class Fixed:
    """A checker answering fixed claims, or refusing."""

    def __init__(self, claims: dict[str, Any] | None) -> None:
        self.claims = claims

    def verify(self, token: str) -> VerifiedToken:
        if self.claims is None:
            raise MandateError("bad signature", code="invalid_signature", stage="verify")
        return {"header": {}, "claims": self.claims}


def test_the_token_verifier_checks_audience_binding_and_hides_the_jti() -> None:
    claims: dict[str, Any] = {
        "sub": "agent:crm-bot",
        "jti": "vat_root_abc",
        "exp": 2_000_000_000,
        "aud": "https://mcp.example.com/mcp",
        "svc_scope": {"resources": ["crm:*"], "actions": ["read"]},
        "svc_prov": "prov_x",
    }
    here = MandateTokenVerifier(Fixed(claims), resource="https://MCP.example.com:443/mcp")
    access = asyncio.run(here.verify_token("t"))
    assert access is not None
    assert (access.client_id, access.scopes, access.resource, access.expires_at) == (
        "crm-bot",
        ["read"],
        "https://MCP.example.com:443/mcp",
        2_000_000_000,
    )
    assert access.claims is not None and "jti" not in access.claims
    assert access.claims["jth"] == jti_hash("vat_root_abc")
    bound = MandateTokenVerifier(Fixed({**claims, "cnf": {"jkt": "abc"}}), resource="https://mcp.example.com/mcp")
    assert asyncio.run(bound.verify_token("t")) is None
    assert asyncio.run(MandateTokenVerifier(Fixed(None)).verify_token("t")) is None


AUD = "https://mcp.example.com/mcp"


@pytest.mark.parametrize(
    ("resource", "audience", "aud", "passes"),
    [
        (AUD, "if-present", None, True),
        (AUD, "if-present", AUD, True),
        (AUD, "if-present", "https://mcp.example.com/mcp/tools", False),
        (AUD, "if-present", "https://other.example.com/mcp", False),
        (AUD, "if-present", [AUD], False),
        (None, "if-present", None, True),
        (None, "if-present", AUD, False),
        (AUD, "required", AUD, True),
        (AUD, "required", None, False),
        (AUD, "required", "https://other.example.com/mcp", False),
    ],
)
def test_the_token_verifier_takes_a_token_for_its_resource_only(
    resource: str | None, audience: AudiencePolicy, aud: object, passes: bool
) -> None:
    claims: dict[str, Any] = {"sub": "agent:crm-bot", "jti": "vat_root_abc", "exp": 2_000_000_000}
    if aud is not None:
        claims["aud"] = aud
    verifier = MandateTokenVerifier(Fixed(claims), resource=resource, audience=audience)
    access = asyncio.run(verifier.verify_token("t"))
    assert (access is not None) == passes
    if access is not None:
        assert access.resource == (resource if resource is not None else aud)


def test_audience_problems_name_the_reason() -> None:
    mine = {"aud": AUD}
    other = {"aud": "https://other.example.com/mcp"}
    assert audience_problem(mine, AUD, "required") is None
    assert audience_problem({}, AUD, "if-present") is None
    assert audience_problem({}, AUD, "required") == (
        f"audience_required: the token names no audience (aud); this server takes only tokens issued for {AUD}"
    )
    assert audience_problem(other, AUD, "if-present") == (
        f"audience_mismatch: the token is for https://other.example.com/mcp, not for this server ({AUD})"
    )
    problem = audience_problem(mine, None, "if-present")
    assert problem is not None and problem.startswith("audience_mismatch: ")
    with pytest.raises(ValueError, match="needs the server's resource"):
        MandateTokenVerifier(Fixed({}), audience="required")
    with pytest.raises(ValueError, match='"required" or "if-present"'):
        MandateTokenVerifier(Fixed({}), resource=AUD, audience=cast(AudiencePolicy, "always"))


def test_the_native_audience_match_normalises_as_rfc_3986() -> None:
    assert mandate.audience_matches(AUD, "HTTPS://MCP.example.com:443/mcp")
    assert mandate.audience_matches("https://mcp.example.com", "https://mcp.example.com/")
    assert not mandate.audience_matches(AUD, f"{AUD}/tools")
    assert not mandate.audience_matches(AUD, f"{AUD}?x=1")
    assert not mandate.audience_matches("http://mcp.example.com/mcp", "http://mcp.example.com/mcp")


def records_of(admin: Mandate, agent: str) -> list[dict[str, Any]]:
    return [dict(r) for r in admin.records.page(agent_id=agent)["records"]]


def test_args_the_tokens_rules_refuse_are_refused_offline_with_no_record_and_no_request(
    live_server: LiveServer, admin: Mandate
) -> None:
    rules = [{"actions": ["read"], "pol": [["like", ".account_id", "1*"]]}]
    token = admin.tokens.issue_root(
        {
            "developer_email": "dev@example.com",
            "agent_id": "mcp-offline",
            "resources": ["crm:accounts/*"],
            "actions": ["read"],
            "constraints": {"args": rules},
        }
    )["compact_jwt"]
    sent: list[str] = []

    async def seen(request: httpx.Request) -> None:
        sent.append(request.url.path)

    counted = AsyncMandate(live_server.base_url, http=httpx.AsyncClient(event_hooks={"request": [seen]}))
    with serve(counted, mandate.Verifier(admin.tokens.jwks())) as running:
        refused = call(running, token, "read_account", {"account_id": "9"})
        meta = refused.meta or {}
        assert (refused.is_error, meta[META_ERROR], META_AAR_ID in meta) == (True, "args_not_permitted", False)
        assert text(refused).startswith("Refused by Mandate's rules for this token: args_not_permitted")
        assert running.crm.ran == [] and sent == []
        assert records_of(admin, "mcp-offline") == []
        permitted = call(running, token, "read_account", {"account_id": "12"})
        assert (permitted.is_error, text(permitted)) == (False, "account 12")
        (record,) = records_of(admin, "mcp-offline")
        assert sent == ["/v1/vat/authorize", f"/v1/vat/aar/{record['aar_id']}/complete"]


def delegating_root(admin: Mandate, agent: str) -> str:
    """A root token that may read accounts and delegate."""
    request = {"developer_email": "dev@example.com", "agent_id": agent, "resources": ["crm:accounts/*"]}
    return admin.tokens.issue_root(cast(Any, {**request, "actions": ["read", "delegate"]}))["compact_jwt"]


def delegate(admin: Mandate, parent: str, agent: str, holder: AgentKey | None) -> str:
    request: dict[str, Any] = {"agent_id": agent, "resources": ["crm:accounts/*"], "actions": ["read"]}
    if holder is not None:
        request["holder_key"] = holder.public_jwk
    issued: dict[str, Any] = dict(admin.tokens.delegate(cast(Any, request), token=parent))
    token = issued["compact_jwt"]
    assert isinstance(token, str)
    return token


def test_a_child_delegated_to_the_servers_key_in_meta_is_acted_with_its_proofs(
    live_server: LiveServer, admin: Mandate
) -> None:
    server_key = AgentKey.generate()
    root = delegating_root(admin, "mcp-agent")
    child = delegate(admin, root, "mcp-gate", server_key)
    assert mandate.decode_token_unverified(child)["claims"]["cnf"] == {"jkt": server_key.jkt}
    with serve(AsyncMandate(live_server.base_url), mandate.Verifier(admin.tokens.jwks()), server_key) as running:
        result = call(running, root, "read_account", {"account_id": "4"}, meta={META_DELEGATED_TOKEN: child})
        assert (result.is_error, text(result)) == (False, "account 4"), result
        assert running.crm.ran == [("read_account", {"account_id": "4"})]
        # The record is the child's: the server acted with the delegated token and its own proofs.
        (record,) = records_of(admin, "mcp-gate")
        assert (record["status"], record.get("result")) == ("completed", "success")
        assert [r["action"] for r in records_of(admin, "mcp-agent")] == ["delegate"]
        # A child bound to another key, or the authenticated token itself bound elsewhere: refused, nothing runs.
        stranger = delegate(admin, root, "mcp-stranger", AgentKey.generate())
        other = call(running, root, "read_account", {"account_id": "5"}, meta={META_DELEGATED_TOKEN: stranger})
        assert (other.is_error, (other.meta or {})[META_ERROR]) == (True, "dpop_key_not_held")
        assert "Delegate a child token to this server's key" in text(other)
        # Not the authenticated token's child, or not a string: refused.
        foreign = delegate(admin, delegating_root(admin, "mcp-other-root"), "mcp-foreign", server_key)
        for given in (foreign, 7, "not-a-token"):
            refused = call(running, root, "read_account", {"account_id": "6"}, meta={META_DELEGATED_TOKEN: given})
            assert (refused.is_error, (refused.meta or {})[META_ERROR]) == (True, "delegation_invalid"), given
        assert [name for name, _ in running.crm.ran] == ["read_account"]
        assert records_of(admin, "mcp-stranger") == records_of(admin, "mcp-foreign") == []
    # A server without the key never acts with a bound child.
    with serve(AsyncMandate(live_server.base_url), mandate.Verifier(admin.tokens.jwks())) as keyless:
        result = call(keyless, root, "read_account", {"account_id": "4"}, meta={META_DELEGATED_TOKEN: child})
        assert (result.is_error, (result.meta or {})[META_ERROR]) == (True, "dpop_key_not_held")
        assert keyless.crm.ran == []
    # An unbound child stands in for its parent on any server.
    unbound = delegate(admin, root, "mcp-unbound", None)
    with serve(AsyncMandate(live_server.base_url), mandate.Verifier(admin.tokens.jwks())) as keyless:
        result = call(keyless, root, "read_account", {"account_id": "8"}, meta={META_DELEGATED_TOKEN: unbound})
        assert not result.is_error, result
        assert [r["status"] for r in records_of(admin, "mcp-unbound")] == ["completed"]


def test_the_bearer_token_verifier_refuses_a_bound_token(live_server: LiveServer, admin: Mandate) -> None:
    key = AgentKey.generate()
    bound = admin.tokens.issue_root(
        {
            "developer_email": "dev@example.com",
            "agent_id": "mcp-bound",
            "resources": ["crm:accounts/*"],
            "actions": ["read"],
            "holder_key": cast(Any, key.public_jwk),
        }
    )["compact_jwt"]
    verifier = MandateTokenVerifier(mandate.Verifier(admin.tokens.jwks()))
    assert asyncio.run(verifier.verify_token(bound)) is None
    with serve(AsyncMandate(live_server.base_url), mandate.Verifier(admin.tokens.jwks()), key) as running:
        ping = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        answer = httpx.post(running.url, json=ping, headers={"Authorization": f"Bearer {bound}"})
        assert answer.status_code == 401
        assert running.crm.ran == []


def test_a_request_cancelled_mid_tool_completes_its_record_cancelled(live_server: LiveServer, admin: Mandate) -> None:
    token = issue(admin, "mcp-cancel")

    async def go(served: Served) -> None:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
            async with Client(streamable_http_client(served.url, http_client=http)) as client:
                calling = asyncio.create_task(client.call_tool("export_accounts", {"rows": 3}))
                await asyncio.to_thread(served.crm.started.wait, 10)
                calling.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await calling
                # The cancellation reaches the server, which completes the record before the session closes.
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline:
                    rows = await asyncio.to_thread(records_of, admin, "mcp-cancel")
                    if rows and rows[0]["status"] == "completed":
                        break
                    await asyncio.sleep(0.1)

    with serve(AsyncMandate(live_server.base_url), mandate.Verifier(admin.tokens.jwks())) as running:
        asyncio.run(go(running))
        assert running.crm.ran == [("export_accounts", {"rows": 3})]
        (record,) = records_of(admin, "mcp-cancel")
        assert (record["status"], record.get("result")) == ("completed", "cancelled")
