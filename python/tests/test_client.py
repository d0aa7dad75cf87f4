"""The client against a live `mandate serve` (sync), and its transport against a fake server."""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

import httpx
import pytest
from conftest import LiveServer

from mandate import (
    AgentKey,
    Mandate,
    MandateApprovalPending,
    MandateError,
    MandateRefusal,
    decode_token_unverified,
    verify_token,
)
from mandate.client import ActContext, Event, PendingApproval, sha256_ref
from mandate.client._models import IssueL1Request


def grant(agent: str, **more: Any) -> IssueL1Request:
    request: IssueL1Request = {
        "developer_email": "dev@example.com",
        "agent_id": agent,
        "resources": ["crm:*"],
        "actions": ["read", "write"],
    }
    request.update(more)  # type: ignore[typeddict-item]
    return request


@pytest.fixture
def client(live_server: LiveServer) -> Iterator[Mandate]:
    with Mandate(live_server.base_url, api_key=live_server.api_key) as mandate:
        yield mandate


class Losing(httpx.BaseTransport):
    """Sends every request, but loses the answer of the first one ``lose`` picks (a dropped connection)."""

    def __init__(self, lose: Callable[[httpx.Request], bool]) -> None:
        self.inner = httpx.HTTPTransport()
        self.lose = lose
        self.sent: list[tuple[str, str, str | None]] = []
        self.lost = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append((request.method, request.url.path, request.headers.get("idempotency-key")))
        response = self.inner.handle_request(request)
        if self.lost == 0 and self.lose(request):
            self.lost += 1
            response.read()
            response.close()
            raise httpx.ReadError("the connection dropped", request=request)
        return response


def test_issue_delegate_and_act_with_args_complete_with_the_outputs_hash(client: Mandate) -> None:
    root = client.tokens.issue_root(grant("py-actor", actions=["read", "write", "delegate"]))
    assert root["compact_jwt"].count(".") == 2
    child = client.tokens.delegate(
        {"actions": ["read"], "resources": ["crm:accounts/*"], "agent_id": "py-actor-child"},
        token=root["compact_jwt"],
    )
    assert "compact_jwt" in child
    child_token = child["compact_jwt"]  # type: ignore[typeddict-item]
    seen: list[ActContext] = []

    def run(context: ActContext) -> dict[str, object]:
        seen.append(context)
        return {"rows": 3, "name": "Zoë"}

    output = client.act(child_token, "read", "crm:accounts/7", {"limit": 3}, run)
    assert output == {"rows": 3, "name": "Zoë"}
    record = client.records.get(seen[0].aar_id)
    assert (record["status"], record.get("result")) == ("completed", "success")
    assert record.get("result_hash") == sha256_ref('{"rows":3,"name":"Zoë"}')
    assert seen[0].provenance_ref == root["provenance_ref"]
    # An exception from the function completes the record as an error and is raised again.
    with pytest.raises(ZeroDivisionError):
        client.as_agent(child_token).act("read", "crm:accounts/8", None, lambda _: 1 // 0)
    failed = client.records.page(provenance_ref=root["provenance_ref"], result="error")["records"]
    assert [r["resource"] for r in failed] == ["crm:accounts/8"]


def test_a_refusal_carries_the_servers_reason_and_detail_and_nothing_runs(client: Mandate) -> None:
    rules = [{"actions": ["write"], "pol": [["<=", ".amount", 100]]}]
    token = client.tokens.issue_root(grant("py-refused", constraints={"args": rules}))["compact_jwt"]
    ran: list[int] = []
    # The token's own argument rules refuse offline: nothing is sent, no record is made.
    with pytest.raises(MandateRefusal) as offline:
        client.act(token, "write", "crm:x", {"amount": 4000}, lambda _: ran.append(1))
    assert (offline.value.code, offline.value.reason, offline.value.status, offline.value.aar_id) == (
        "args_not_permitted",
        "args_not_permitted",
        0,
        None,
    )
    assert (offline.value.problem["rule"], offline.value.problem["statement"], offline.value.problem["truth"]) == (
        0,
        0,
        "false",
    )
    assert client.records.page(agent_id="py-refused")["records"] == []
    # Asked anyway, the server refuses the same call with the same code, its words, and a denied record.
    answer = client.records.authorize({"action": "write", "resource": "crm:x", "args": {"amount": 4000}}, token=token)
    assert (answer["authorized"], answer.get("reason")) == (False, "args_not_permitted")
    detail = answer.get("reason_detail")
    assert detail is not None and "constraints.args[0]" in detail
    assert answer["aar_id"].startswith("aar_")
    with pytest.raises(MandateRefusal) as scope:
        client.act(token, "delete", "crm:x", None, lambda _: ran.append(1))
    assert scope.value.reason == "action_not_permitted"
    assert isinstance(scope.value, MandateError)
    assert ran == []


def test_approval_pending_then_decided(client: Mandate) -> None:
    token = client.tokens.issue_root(grant("py-approver", constraints={"require_approval": {"actions": ["write"]}}))[
        "compact_jwt"
    ]
    with pytest.raises(MandateApprovalPending) as pending:
        client.act(token, "write", "crm:y", None, lambda _: "done")
    assert pending.value.url == f"{client.base_url}/#/approval/{pending.value.approval_id}"
    assert pending.value.code == "approval_pending"

    def approve(approval: PendingApproval) -> None:
        client.approvals.decide(approval.approval_id, {"decision": "approve", "note": "ok"})

    assert (
        client.act(token, "write", "crm:y", None, lambda _: "done", wait_for_approval=10, on_approval=approve) == "done"
    )

    def deny(approval: PendingApproval) -> None:
        client.approvals.decide(approval.approval_id, {"decision": "deny"})

    with pytest.raises(MandateRefusal) as denied:
        client.act(token, "write", "crm:z", None, lambda _: "never", wait_for_approval=10, on_approval=deny)
    assert denied.value.reason == "approval_denied"


def test_a_write_whose_answer_is_lost_is_sent_again_with_the_same_key_and_recorded_once(
    client: Mandate, live_server: LiveServer
) -> None:
    root = client.tokens.issue_root(grant("py-retrier"))
    losing = Losing(lambda request: request.url.path == "/v1/vat/record/action")
    with Mandate(live_server.base_url, http=httpx.Client(transport=losing)) as agent:
        answer = agent.records.record_action(
            {"action": "read", "resource": "crm:a", "result": "success"}, token=root["compact_jwt"]
        )
    assert answer["recorded"]
    assert len(losing.sent) == 2
    key = losing.sent[0][2]
    assert key is not None and key.startswith("mandate-sdk-") and len(key) == len("mandate-sdk-") + 32
    assert losing.sent[1][2] == key
    page = client.records.page(provenance_ref=root["provenance_ref"])
    assert [record.get("aar_id") for record in page["records"]] == [answer["aar_id"]]


def test_a_completion_whose_answer_is_lost_is_retried_and_act_takes_it_as_done(
    client: Mandate, live_server: LiveServer
) -> None:
    token = client.tokens.issue_root(grant("py-completer"))["compact_jwt"]
    losing = Losing(lambda request: request.url.path.endswith("/complete"))
    with Mandate(live_server.base_url, http=httpx.Client(transport=losing)) as agent:
        output = agent.act(token, "read", "crm:c", None, lambda context: context.aar_id)
    completes = [sent for sent in losing.sent if sent[1].endswith("/complete")]
    assert len(completes) == 2 and completes[0][2] == completes[1][2] == f"complete-{output}"
    record = client.records.get(output)
    assert (record["status"], record.get("result"), record.get("result_hash")) == (
        "completed",
        "success",
        sha256_ref(output),
    )


def test_a_problem_becomes_a_mandate_error_with_its_fields(client: Mandate, live_server: LiveServer) -> None:
    with pytest.raises(MandateError) as missing:
        client.records.get("aar_01mcc56a20ypjs2bgtacdn684n")
    error = missing.value
    assert (error.status, error.code) == (404, "record_not_found")
    assert error.headers["content-type"].startswith("application/problem+json")
    assert error.request_id == error.headers.get("x-request-id")
    assert error.problem["code"] == "record_not_found"
    with pytest.raises(MandateError) as invalid:
        client.tokens.issue_root(grant("py-bad", developer_email="not an email"))
    assert invalid.value.status == 422
    assert invalid.value.field == "developer_email"
    with Mandate(live_server.base_url, api_key="mk_nope") as stranger, pytest.raises(MandateError) as unknown:
        stranger.me()
    assert unknown.value.status == 401


def test_every_group_reaches_the_server(client: Mandate) -> None:
    root = client.tokens.issue_root(grant("py-reader"))
    assert client.me()["admin"] is True
    assert client.openapi()["openapi"].startswith("3.")
    assert client.tokens.jwks()["keys"]
    assert any(item["jth"] for item in client.tokens.list(agent_id="agent:py-reader"))
    assert client.tokens.status(root["jti"])["status"] == "active"
    assert client.log.checkpoint().count("\n") >= 2
    assert client.log.key()
    assert any(node["agent_id"] == "py-reader" for page in client.trust.graph() for node in page["nodes"])
    assert client.agents.reputation("py-reader")["total_actions"] == 0
    assert client.records.overview(window="7d")["window"] == "7d"
    assert client.records.inbox_counts()["approvals_pending"] >= 0
    assert client.webhooks.list()["webhooks"] == []


class Fake:
    """A local server answering each request with the next of ``answers`` (status, headers, body)."""

    def __init__(self, answers: list[tuple[int, dict[str, str], bytes]]) -> None:
        self.answers = answers
        self.seen: list[tuple[float, dict[str, str]]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                fake.seen.append((time.monotonic(), {k.lower(): v for k, v in self.headers.items()}))
                status, headers, body = fake.answers.pop(0)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(body)))
                self.send_header("connection", "close")
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", "0")))
                self.do_GET()

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


PROBLEM = {"content-type": "application/problem+json", "x-request-id": "req_fake"}


def problem(code: str, status: int) -> bytes:
    return json.dumps({"type": f"urn:mandate:problem:{code}", "title": code, "status": status, "code": code}).encode()


def test_retry_after_is_honoured_and_a_longer_one_is_not_waited_for() -> None:
    fake = Fake(
        [
            (503, {**PROBLEM, "retry-after": "1"}, problem("unavailable", 503)),
            (200, {"content-type": "application/json"}, b'{"org_id":"org_1"}'),
            (429, {**PROBLEM, "retry-after": "120"}, problem("rate_limited", 429)),
            (429, PROBLEM, problem("quota_exceeded", 429)),
        ]
    )
    try:
        with Mandate(fake.url, api_key="mk_x") as client:
            assert dict(client.me()) == {"org_id": "org_1"}
            assert fake.seen[1][0] - fake.seen[0][0] >= 1.0
            with pytest.raises(MandateError) as limited:
                client.me()
            assert (limited.value.status, limited.value.code, limited.value.retry_after) == (429, "rate_limited", 120)
            assert limited.value.request_id == "req_fake"
            with pytest.raises(MandateError) as quota:
                client.me()
            assert quota.value.code == "quota_exceeded"
            assert len(fake.seen) == 4
    finally:
        fake.close()


def test_no_answer_is_a_mandate_error_never_an_httpx_one() -> None:
    fake = Fake([])
    url = fake.url
    fake.close()
    with Mandate(url, max_retries=1) as client, pytest.raises(MandateError) as refused:
        client.tokens.jwks()
    assert (refused.value.code, refused.value.status) == ("network_error", None)
    assert isinstance(refused.value.__cause__, httpx.HTTPError)


def within(events: Iterator[Event], seconds: float = 30) -> Event:
    """The stream's next event, or a failure after ``seconds`` (the stream itself never ends)."""
    got: list[Event] = []
    reader = threading.Thread(target=lambda: got.append(next(events)), daemon=True)
    reader.start()
    reader.join(seconds)
    assert got, f"no event within {seconds} s"
    return got[0]


def sse(*events: tuple[str, str]) -> bytes:
    lines = ["retry: 10", ""]
    for event_id, kind in events:
        payload = {"type": kind, "timestamp": "2026-11-27T00:00:00Z", "data": {"n": event_id}}
        lines += [f"id: {event_id}", f"data: {json.dumps(payload)}", ""]
    return ("\n".join(lines) + "\n").encode()


def test_the_event_stream_connects_again_after_a_drop_with_last_event_id() -> None:
    stream = {"content-type": "text/event-stream"}
    fake = Fake([(200, stream, sse(("msg_1", "record.denied"))), (200, stream, sse(("msg_2", "token.revoked")))])
    drops: list[int] = []
    try:
        with Mandate(fake.url, api_key="mk_x") as client:
            events = client.events(on_drop=lambda: drops.append(1))
            got = [within(events), within(events)]
            events.close()
        assert [(event.id, event.type, event.data) for event in got] == [
            ("msg_1", "record.denied", {"n": "msg_1"}),
            ("msg_2", "token.revoked", {"n": "msg_2"}),
        ]
        assert "last-event-id" not in fake.seen[0][1]
        assert fake.seen[1][1]["last-event-id"] == "msg_1"
        assert drops == [1]
    finally:
        fake.close()


def test_events_resume_after_a_given_event_on_the_live_server(client: Mandate) -> None:
    token = client.tokens.issue_root(grant("py-watched"))["compact_jwt"]

    def deny_twice() -> None:
        for resource in ("crm:one", "crm:two"):
            client.records.authorize({"action": "delete", "resource": resource}, token=token)

    events = client.events(on_open=deny_twice)
    first = within(events)
    events.close()
    assert first.type == "record.denied" and first.id.startswith("msg_")
    resumed = client.events(last_event_id=first.id)
    second = within(resumed)
    resumed.close()
    assert second.type == "record.denied"
    assert (first.data["resource"], second.data["resource"]) == ("crm:one", "crm:two")


class FakeKey:
    """An agent key as the client uses one: its thumbprint, and a fresh proof per request."""

    jkt = "thumbprint-of-the-key"

    def __init__(self) -> None:
        self.proved: list[tuple[str, str, str]] = []

    def proof(self, *, method: str, url: str, access_token: str) -> str:
        self.proved.append((method, url, access_token))
        return f"proof-{len(self.proved)}"


def bound_token(jkt: str) -> str:
    def part(value: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'EdDSA'})}.{part({'sub': 'agent:bound', 'cnf': {'jkt': jkt}})}.c2ln"


def test_a_bound_token_goes_as_dpop_with_a_fresh_proof_per_attempt() -> None:
    answer = json.dumps({"recorded": True, "aar_id": "aar_1"}).encode()
    fake = Fake(
        [
            (503, PROBLEM, problem("unavailable", 503)),
            (201, {"content-type": "application/json"}, answer),
        ]
    )
    key = FakeKey()
    token = bound_token(key.jkt)
    try:
        with Mandate(fake.url) as client:
            client.as_agent(token, key=key).record_action({"action": "read", "resource": "crm:a", "result": "success"})
            with pytest.raises(MandateError) as missing:
                client.records.record_action({"action": "read", "resource": "crm:a", "result": "success"}, token=token)
    finally:
        fake.close()
    assert missing.value.code == "dpop_key_missing"
    assert [headers["authorization"] for _, headers in fake.seen] == [f"DPoP {token}"] * 2
    assert [headers["dpop"] for _, headers in fake.seen] == ["proof-1", "proof-2"]
    assert fake.seen[0][1]["idempotency-key"] == fake.seen[1][1]["idempotency-key"]
    assert key.proved[0] == ("POST", f"{fake.url}/v1/vat/record/action", token)


def test_an_organisations_owner_calls_every_group(client: Mandate, live_server: LiveServer) -> None:
    made = client.orgs.create({"name": "py-org", "owner_email": "owner@example.com"})
    assert made["owner_key"]["role"] == "owner"
    assert any(org["org_id"] == made["org"]["org_id"] for org in client.orgs.list()["orgs"])
    with Mandate(live_server.base_url, api_key=made["owner_key"]["api_key"]) as owner:
        reviewer = owner.keys.create({"role": "reviewer", "email": "rev@example.com"})
        assert reviewer["key_id"] in [key["key_id"] for key in owner.keys.list()["keys"]]
        assert owner.keys.revoke(reviewer["key_id"]).get("revoked_at")
        root = owner.tokens.issue_root(grant("py-voucher", actions=["read", "delegate"]))
        child = owner.tokens.delegate(
            {"actions": ["read"], "resources": ["crm:*"], "agent_id": "py-vouchee"}, token=root["compact_jwt"]
        )
        assert "compact_jwt" in child and "jti" in child
        child_token, child_jti = child["compact_jwt"], child["jti"]  # type: ignore[typeddict-item]
        aar_id = owner.act(child_token, "read", "crm:q", None, lambda context: context.aar_id)
        assert owner.records.feedback(aar_id, {"rating": "approved"})["rating"] == "approved"
        vouch = owner.trust.vouch({"agent_id": "py-vouchee", "weight": 0.5})
        assert [v["vouch_id"] for v in owner.trust.agent("py-vouchee")["vouches"]] == [vouch["vouch_id"]]
        assert owner.trust.statement("py-vouchee").count(".") == 2
        assert owner.as_agent(child_token).trust_statement().count(".") == 2
        assert owner.trust.withdraw_vouch(vouch["vouch_id"]).get("withdrawn_at")
        assert owner.records.proof(aar_id)["aar_id"] == aar_id
        assert owner.records.provenance(root["provenance_ref"])["total_records"] == 2  # the delegation and the read
        assert owner.records.graph(root["provenance_ref"])["nodes"]
        assert [w["provenance_ref"] for w in owner.records.workflows()] == [root["provenance_ref"]]
        assert sorted(a["agent_id"] for a in owner.agents.list()) == ["agent:py-vouchee", "agent:py-voucher"]
        assert len(owner.agents.history("py-vouchee", days=2)["days"]) == 2
        rated = owner.records.rate_workflow(
            {"provenance_ref": root["provenance_ref"], "rating": "approved", "result": "success"}
        )
        # The delegation's record: the read was rated above.
        assert rated["rated"] == 1 and aar_id not in rated["aar_ids"]
        size = int(owner.log.checkpoint().splitlines()[1])
        assert owner.log.consistency(1, size)["new"] == size
        assert owner.tokens.status(root["jti"])["descendants"]
        revoked = owner.tokens.revoke({"jti": child_jti})
        assert revoked["revoked_count"] == 1
        status = root["claims"]["status"]["status_list"]["uri"]
        assert owner.tokens.status_list(status.rsplit("/", 1)[1]).count(".") == 2


def test_the_client_refuses_what_it_cannot_send() -> None:
    with pytest.raises(MandateError) as scheme:
        Mandate("ftp://mandate.example.com")
    assert scheme.value.code == "invalid_options"
    with pytest.raises(MandateError) as negative:
        Mandate("http://127.0.0.1:9", max_retries=-1)
    assert negative.value.code == "invalid_options"
    with Mandate("http://127.0.0.1:9") as client, pytest.raises(MandateError) as body:
        client.records.record_action({"action": "read", "resource": "crm:a", "args": {"x": float("nan")}}, token="t")
    assert (body.value.code, body.value.status) == ("invalid_arguments", None)


def test_a_token_bound_to_a_native_agent_key_acts_only_with_that_key(client: Mandate) -> None:
    key = AgentKey.generate()
    request = grant("py-bound", actions=["read"])
    request["holder_key"] = cast(Any, key.public_jwk)
    bound = client.tokens.issue_root(request)["compact_jwt"]
    claims = verify_token(bound, json.dumps(client.tokens.jwks()), skip_proof_of_possession=True)["claims"]
    assert claims["cnf"]["jkt"] == key.jkt
    # Without its key the client refuses to send the bound token, and nothing runs.
    ran: list[str] = []
    with pytest.raises(MandateError) as refused:
        client.act(bound, "read", "crm:accounts/1", None, lambda _: ran.append("ran"))
    assert refused.value.code == "dpop_key_missing" and ran == []
    # Another agent's key is refused too.
    with pytest.raises(MandateError) as stolen:
        client.act(bound, "read", "crm:accounts/1", None, lambda _: ran.append("ran"), key=AgentKey.generate())
    assert stolen.value.code.startswith("dpop_") and ran == []
    # With its own key, through as_agent, every call carries a fresh proof.
    agent = client.as_agent(bound, key=key)
    assert agent.act("read", "crm:accounts/1", {"n": 1}, lambda _: "ok") == "ok"
    assert agent.act("read", "crm:accounts/2", {"n": 2}, lambda _: "ok") == "ok"


def test_a_gateway_key_asks_for_decisions_and_nothing_else(client: Mandate, live_server: LiveServer) -> None:
    gateway_key = client.keys.create({"role": "gateway", "email": "gateway@example.com"})["api_key"]
    token = client.tokens.issue_root(grant("py-gated"))["compact_jwt"]
    with Mandate(live_server.base_url, api_key=gateway_key) as gateway:
        metadata = gateway.access.configuration()
        assert metadata["access_evaluation_endpoint"].endswith("/v1/access/evaluation")
        subject: Any = {"type": "mandate_vat", "id": token}
        permitted = gateway.access.evaluation(
            {"subject": subject, "action": {"name": "read"}, "resource": {"type": "crm", "id": "accounts/7"}}
        )
        assert permitted["decision"] is True
        answers = gateway.access.evaluations(
            {
                "subject": subject,
                "resource": {"type": "crm", "id": "accounts/7"},
                "evaluations": [{"action": {"name": "read"}}, {"action": {"name": "delete"}}],
            }
        )
        assert [answer["decision"] for answer in answers["evaluations"]] == [True, False]
        # A jti names a token and proves nothing: never a subject.
        jti = decode_token_unverified(token)["claims"]["jti"]
        named: Any = {"type": "mandate_vat", "id": jti}
        refused = gateway.access.evaluation(
            {"subject": named, "action": {"name": "read"}, "resource": {"type": "crm", "id": "accounts/7"}}
        )
        assert refused["decision"] is False
        with pytest.raises(MandateError) as forbidden:
            gateway.tokens.issue_root(grant("py-not-by-a-gateway"))
        assert forbidden.value.code == "role_forbidden"
        # Without items the server answers one decision: the client returns the list.
        one = gateway.access.evaluations(
            {"subject": subject, "action": {"name": "read"}, "resource": {"type": "crm", "id": "accounts/7"}}
        )
        assert [answer["decision"] for answer in one["evaluations"]] == [True]


def test_an_evaluation_whose_answer_is_lost_is_sent_again_with_the_same_request_id_and_recorded_once(
    client: Mandate, live_server: LiveServer
) -> None:
    gateway_key = client.keys.create({"role": "gateway", "email": "gateway@example.com"})["api_key"]
    root = client.tokens.issue_root(grant("py-gated-retry"))
    losing = Losing(lambda request: request.url.path == "/v1/access/evaluation")
    ids: list[str | None] = []
    with Mandate(
        live_server.base_url,
        api_key=gateway_key,
        http=httpx.Client(
            transport=losing, event_hooks={"request": [lambda r: ids.append(r.headers.get("x-request-id"))]}
        ),
    ) as gateway:
        subject: Any = {"type": "mandate_vat", "id": root["compact_jwt"]}
        decision = gateway.access.evaluation(
            {"subject": subject, "action": {"name": "read"}, "resource": {"type": "crm", "id": "accounts/7"}}
        )
    assert decision["decision"] is True
    assert len(ids) == 2 and ids[0] is not None and ids[0].startswith("mandate-sdk-") and ids[1] == ids[0]
    page = client.records.page(provenance_ref=root["provenance_ref"])
    context: Any = decision.get("context")
    assert [record.get("aar_id") for record in page["records"]] == [context["aar_id"]]
