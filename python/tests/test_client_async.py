"""AsyncMandate against a live `mandate serve`: the same calls and outcomes as Mandate."""

from __future__ import annotations

import asyncio
import inspect
import json
import urllib.request

import httpx
import pytest
from conftest import LiveServer
from test_client import PROBLEM, Fake, Losing, grant, problem

from mandate import AsyncMandate, Mandate, MandateApprovalPending, MandateError, MandateRefusal
from mandate.client import ActContext, sha256_ref


async def run_act(live_server: LiveServer) -> None:
    async with AsyncMandate(live_server.base_url, api_key=live_server.api_key) as client:
        root = await client.tokens.issue_root(grant("py-async", actions=["read", "write", "delegate"]))
        child = await client.as_agent(root["compact_jwt"]).delegate(
            {"actions": ["read"], "resources": ["crm:*"], "agent_id": "py-async-child"}
        )
        assert "compact_jwt" in child
        token = child["compact_jwt"]  # type: ignore[typeddict-item]

        async def run(context: ActContext) -> str:
            await asyncio.sleep(0)
            return f"read under {context.aar_id}"

        output = await client.act(token, "read", "crm:a", {"q": 1}, run)
        aar_id = output.removeprefix("read under ")
        record = await client.records.get(aar_id)
        assert (record["status"], record.get("result_hash")) == ("completed", sha256_ref(output))

        async def never(_: ActContext) -> str:
            raise AssertionError("refused actions do not run")

        with pytest.raises(MandateRefusal) as refused:
            await client.act(token, "write", "crm:a", None, never)
        assert refused.value.reason == "action_not_permitted"
        with pytest.raises(MandateError) as missing:
            await client.records.get("aar_01mcc56a20ypjs2bgtacdn684n")
        assert (missing.value.status, missing.value.code) == (404, "record_not_found")


def test_async_act_refusal_and_problem(live_server: LiveServer) -> None:
    asyncio.run(run_act(live_server))


async def run_approval(live_server: LiveServer) -> None:
    async with AsyncMandate(live_server.base_url, api_key=live_server.api_key) as client:
        constraints = {"require_approval": {"actions": ["write"]}}
        token = (await client.tokens.issue_root(grant("py-async-approver", constraints=constraints)))["compact_jwt"]

        async def done(_: ActContext) -> str:
            return "done"

        with pytest.raises(MandateApprovalPending) as pending:
            await client.act(token, "write", "crm:b", None, done)
        approval_id = pending.value.approval_id
        assert pending.value.url == client.approvals.url(approval_id)
        # An agent reads its own approval with its token; a reviewer decides it while the agent waits.
        agent = client.as_agent(token)
        assert (await agent.approval(approval_id))["status"] == "pending"

        async def approve_pending() -> None:
            # Once the agent's second ask is waiting: both its pending approvals, approved.
            deadline = asyncio.get_running_loop().time() + 30
            while True:
                assert asyncio.get_running_loop().time() < deadline, "the second approval never came"
                mine = [
                    approval
                    async for approval in client.approvals.list(status="pending")
                    if approval["agent_id"].endswith("py-async-approver")
                ]
                if len(mine) >= 2:
                    break
                await asyncio.sleep(0.05)
            for approval in mine:
                await client.approvals.decide(approval["approval_id"], {"decision": "approve"})

        deciding = asyncio.create_task(approve_pending())
        answer = await agent.authorize({"action": "write", "resource": "crm:b"}, wait_for_approval=10)
        await deciding
        assert answer["authorized"] is True
        ref = answer.get("approval")
        assert ref is not None and ref["status"] == "approved"
        assert (await agent.approval(approval_id))["status"] == "approved"


def test_async_approval_pending_and_decided(live_server: LiveServer) -> None:
    asyncio.run(run_approval(live_server))


async def run_retry(live_server: LiveServer) -> None:
    async with AsyncMandate(live_server.base_url, api_key=live_server.api_key) as client:
        root = await client.tokens.issue_root(grant("py-async-retrier"))
    sync_losing = Losing(lambda request: request.url.path == "/v1/vat/record/action")

    class AsyncLosing(httpx.AsyncBaseTransport):
        def __init__(self) -> None:
            self.inner = httpx.AsyncHTTPTransport()

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            sync_losing.sent.append((request.method, request.url.path, request.headers.get("idempotency-key")))
            response = await self.inner.handle_async_request(request)
            if sync_losing.lost == 0 and sync_losing.lose(request):
                sync_losing.lost += 1
                await response.aread()
                await response.aclose()
                raise httpx.ReadError("the connection dropped", request=request)
            return response

    async with AsyncMandate(live_server.base_url, http=httpx.AsyncClient(transport=AsyncLosing())) as agent:
        answer = await agent.records.record_action(
            {"action": "read", "resource": "crm:a", "result": "success"}, token=root["compact_jwt"]
        )
    keys = [key for _, _, key in sync_losing.sent]
    assert len(keys) == 2 and keys[0] == keys[1] and keys[0] is not None
    async with AsyncMandate(live_server.base_url, api_key=live_server.api_key) as client:
        records = [record async for record in client.records.list(provenance_ref=root["provenance_ref"])]
    assert [record.get("aar_id") for record in records] == [answer["aar_id"]]


def test_async_keyed_write_retried_once_recorded(live_server: LiveServer) -> None:
    asyncio.run(run_retry(live_server))


async def run_events(live_server: LiveServer) -> None:
    async with AsyncMandate(live_server.base_url, api_key=live_server.api_key) as client:
        token = (await client.tokens.issue_root(grant("py-async-watched")))["compact_jwt"]
        opened = asyncio.Event()
        events = client.events(on_open=opened.set)
        first_read = asyncio.ensure_future(anext(events))
        await asyncio.wait_for(opened.wait(), 30)
        for resource in ("crm:one", "crm:two"):
            await client.records.authorize({"action": "delete", "resource": resource}, token=token)
        first = await asyncio.wait_for(first_read, 30)
        await events.aclose()
        resumed = client.events(last_event_id=first.id)
        second = await asyncio.wait_for(anext(resumed), 30)
        await resumed.aclose()
        assert (first.data["resource"], second.data["resource"]) == ("crm:one", "crm:two")


def test_async_events_resume(live_server: LiveServer) -> None:
    asyncio.run(run_events(live_server))


#: Each operation of the served document (but the health checks and metrics): the client's call for it.
OPERATIONS = {
    "jwks": "tokens.jwks",
    "events": "events",
    "list_keys": "keys.list",
    "create_key": "keys.create",
    "revoke_key": "keys.revoke",
    "checkpoint": "log.checkpoint",
    "consistency": "log.consistency",
    "key": "log.key",
    "me": "me",
    "openapi": "openapi",
    "list_orgs": "orgs.list",
    "create_org": "orgs.create",
    "update_org": "orgs.update",
    "agent_trust": "trust.agent",
    "statement": "trust.statement",
    "trust_graph": "trust.graph_page",
    "create_vouch": "trust.vouch",
    "withdraw_vouch": "trust.withdraw_vouch",
    "records": "records.page",
    "bulk_feedback": "records.rate_workflow",
    "provenance_summary": "records.provenance",
    "graph": "records.graph",
    "record": "records.get",
    "complete": "records.complete",
    "feedback": "records.feedback",
    "record_proof": "records.proof",
    "agents": "agents.page",
    "agent_history": "agents.history",
    "approvals": "approvals.page",
    "approval": "approvals.get",
    "decide": "approvals.decide",
    "auth_capture": "tokens.auth_capture",
    "authorize": "records.authorize",
    "delegate": "tokens.delegate",
    "inbox_counts": "records.inbox_counts",
    "issue_l1": "tokens.issue_root",
    "issue_l2": "tokens.issue_l2",
    "overview": "records.overview",
    "record_action": "records.record_action",
    "record_actions": "records.record_actions",
    "reputation": "agents.reputation",
    "revoke": "tokens.revoke",
    "status_list": "tokens.status_list",
    "tokens": "tokens.page",
    "token": "tokens.status",
    "workflows": "records.workflows_page",
    "list_webhooks": "webhooks.list",
    "create_webhook": "webhooks.create",
    "delete_webhook": "webhooks.delete",
    "webhook": "webhooks.get",
    "update_webhook": "webhooks.update",
    "deliveries": "webhooks.deliveries_page",
    "rotate_secret": "webhooks.rotate_secret",
    "evaluation": "access.evaluation",
    "evaluations": "access.evaluations",
    "configuration": "access.configuration",
    "oauth_metadata": "oauth.metadata",
    "oauth_token": "oauth.token",
    "create_client": "oauth.create_client",
    "list_clients": "oauth.list_clients",
    "delete_client": "oauth.delete_client",
    "oauth_sign_in_providers": "oauth.sign_in_providers",
    "oauth_open_request": "oauth.open_request",
    "oauth_decide_request": "oauth.decide_request",
    "oauth_revoke": "oauth.revoke",
    "list_grants": "oauth.list_grants",
    "revoke_grant": "oauth.revoke_grant",
    "create_resource": "oauth.create_resource",
    "list_resources": "oauth.list_resources",
    "delete_resource": "oauth.delete_resource",
}


def test_every_operation_of_the_served_document_has_a_call_in_both_clients(live_server: LiveServer) -> None:
    with urllib.request.urlopen(f"{live_server.base_url}/v1/openapi.json") as answer:
        document = json.load(answer)
    served = {
        operation["operationId"]
        for item in document["paths"].values()
        for method, operation in item.items()
        if method in ("get", "post", "put", "patch", "delete")
    } - {
        "healthz",
        "readyz",
        "metrics",
        # A browser's navigations (303), not calls.
        "oauth_authorize",
        "oauth_sign_in_start",
        "oauth_sign_in_callback",
    }
    assert served == set(OPERATIONS)
    sync, asynchronous = Mandate("http://127.0.0.1:9"), AsyncMandate("http://127.0.0.1:9")
    for name in OPERATIONS.values():
        found_sync: object = sync
        found_async: object = asynchronous
        for part in name.split("."):
            found_sync = getattr(found_sync, part)
            found_async = getattr(found_async, part)
        assert callable(found_sync) and callable(found_async), name
        if name != "events":
            assert inspect.iscoroutinefunction(found_async), name
    sync.close()
    asyncio.run(asynchronous.close())


async def run_retry_after(url: str) -> tuple[dict[str, object], MandateError, MandateError]:
    async with AsyncMandate(url, api_key="mk_x") as client:
        me = dict(await client.me())
        with pytest.raises(MandateError) as limited:
            await client.me()
    async with AsyncMandate("http://127.0.0.1:9", max_retries=0) as unreachable:
        with pytest.raises(MandateError) as refused:
            await unreachable.tokens.jwks()
    return me, limited.value, refused.value


def test_async_retry_after_is_honoured_and_no_answer_is_a_mandate_error() -> None:
    fake = Fake(
        [
            (503, {**PROBLEM, "retry-after": "1"}, problem("unavailable", 503)),
            (200, {"content-type": "application/json"}, b'{"org_id":"org_1"}'),
            (429, {**PROBLEM, "retry-after": "120"}, problem("rate_limited", 429)),
        ]
    )
    try:
        me, limited, refused = asyncio.run(run_retry_after(fake.url))
    finally:
        fake.close()
    assert me == {"org_id": "org_1"}
    assert fake.seen[1][0] - fake.seen[0][0] >= 1.0
    assert (limited.status, limited.code, limited.retry_after, limited.request_id) == (
        429,
        "rate_limited",
        120,
        "req_fake",
    )
    assert (refused.code, refused.status) == ("network_error", None)
