"""mandate.pydantic_ai against a live server, with Pydantic AI's FunctionModel as a scripted model (no model calls)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from datetime import date
from typing import Any

import pytest
from conftest import LiveServer
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from test_client import grant

from mandate import AsyncMandate, MandateError
from mandate.client import sha256_ref
from mandate.pydantic_ai import MandateCapability, MandateToolCall, ToolPolicy

POLICY = ToolPolicy("write", lambda args: f"crm:{args['record']}")


def call(record: str, value: int, call_id: str) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart("crm_write", {"record": record, "value": value}, tool_call_id=call_id)])


def text(content: str) -> ModelResponse:
    return ModelResponse(parts=[TextPart(content)])


class Scene:
    """An agent with one tool ``crm_write(record, value)`` under Mandate, a scripted model, and what they did."""

    def __init__(
        self,
        live: LiveServer,
        token: str,
        steps: list[ModelResponse],
        *,
        base_url: str | None = None,
        wait_for_approval: int | None = None,
    ) -> None:
        self.client = AsyncMandate(base_url or live.base_url, api_key=live.api_key, max_retries=0)
        self.ran: list[dict[str, Any]] = []
        self.ended: list[MandateToolCall] = []
        self.seen: list[list[ModelMessage]] = []
        self.approvals: list[str] = []
        self.capability = MandateCapability(
            self.client,
            token,
            tools={"crm_write": POLICY},
            on_call_end=self.ended.append,
            on_approval=lambda approval, _: self.approvals.append(approval.approval_id),
            wait_for_approval=wait_for_approval,
        )
        script = list(steps)

        def model(messages: list[ModelMessage], _: AgentInfo) -> ModelResponse:
            self.seen.append(list(messages))
            return script.pop(0)

        self.agent: Agent[None, str | DeferredToolRequests] = Agent(
            FunctionModel(model), output_type=[str, DeferredToolRequests], capabilities=[self.capability]
        )

        @self.agent.tool_plain
        def crm_write(record: str, value: int) -> str:
            """Writes ``value`` into a CRM record."""
            self.ran.append({"record": record, "value": value})
            if value < 0:
                raise ValueError("negative values are not kept")
            return f"wrote {value} to {record}"

    def model_saw(self, content: str) -> bool:
        return bool(self.seen) and content in repr(self.seen[-1][-1])


async def token_for(live: LiveServer, agent: str, **more: Any) -> str:
    async with AsyncMandate(live.base_url, api_key=live.api_key) as admin:
        return (await admin.tokens.issue_root(grant(agent, **more)))["compact_jwt"]


async def record_of(live: LiveServer, aar_id: str | None) -> dict[str, Any]:
    assert aar_id is not None
    async with AsyncMandate(live.base_url, api_key=live.api_key) as admin:
        return dict(await admin.records.get(aar_id))


def run(test: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(test())


def test_authorized_call_runs_once_and_completes_its_record(live_server: LiveServer) -> None:
    async def scenario() -> None:
        scene = Scene(live_server, await token_for(live_server, "py-pa-ok"), [call("a", 7, "c1"), text("done")])
        result = await scene.agent.run("write 7 to a")
        assert result.output == "done"
        assert scene.ran == [{"record": "a", "value": 7}]
        [ended] = scene.ended
        assert (ended.state, ended.result, ended.resource) == ("completed", "success", "crm:a")
        record = await record_of(live_server, ended.aar_id)
        assert (record["status"], record["result_hash"]) == ("completed", sha256_ref("wrote 7 to a"))
        assert record["args"] == {"record": "a", "value": 7}
        assert scene.model_saw("wrote 7 to a")
        await scene.client.close()

    run(scenario)


def test_refused_call_never_runs_and_the_model_reads_why(live_server: LiveServer) -> None:
    async def scenario() -> None:
        token = await token_for(live_server, "py-pa-refused", actions=["read"])
        scene = Scene(live_server, token, [call("a", 1, "c1"), text("ok")])
        await scene.agent.run("write")
        assert scene.ran == []
        [ended] = scene.ended
        assert (ended.state, ended.reason) == ("refused", "action_not_permitted")
        assert scene.model_saw("Mandate refused crm_write: action_not_permitted")
        await scene.client.close()

    run(scenario)


def test_validated_arguments_json_cannot_hold_are_sent_as_pydantic_writes_them(live_server: LiveServer) -> None:
    async def scenario() -> None:
        scene = Scene(live_server, await token_for(live_server, "py-pa-dates"), [])
        when: list[date] = []

        @scene.agent.tool_plain
        def schedule(record: str, on: date) -> str:
            """Schedules a follow-up."""
            when.append(on)
            return f"{record} on {on}"

        steps = [
            ModelResponse(parts=[ToolCallPart("schedule", {"record": "c", "on": "2026-12-01"}, tool_call_id="d1")])
        ]
        scene.seen.clear()
        script = [*steps, text("ok")]
        scene.agent.model = FunctionModel(lambda messages, _: script.pop(0))
        scene.capability._tools["schedule"] = ToolPolicy("write", "crm:c")  # pyright: ignore[reportPrivateUsage]
        await scene.agent.run("schedule")
        assert when == [date(2026, 12, 1)]
        [ended] = scene.ended
        assert (await record_of(live_server, ended.aar_id))["args"] == {"record": "c", "on": "2026-12-01"}
        await scene.client.close()

    run(scenario)


def test_a_cancelled_run_completes_the_record_as_cancelled(live_server: LiveServer) -> None:
    async def scenario() -> None:
        scene = Scene(live_server, await token_for(live_server, "py-pa-cancel"), [])
        started = asyncio.Event()

        @scene.agent.tool_plain
        async def export(record: str) -> str:
            """Exports a record, slowly."""
            started.set()
            await asyncio.sleep(60)
            return record

        script = [ModelResponse(parts=[ToolCallPart("export", {"record": "e"}, tool_call_id="x1")])]
        scene.agent.model = FunctionModel(lambda messages, _: script.pop(0))
        scene.capability._tools["export"] = ToolPolicy("write", "crm:e")  # pyright: ignore[reportPrivateUsage]
        running = asyncio.create_task(scene.agent.run("export"))
        await started.wait()
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        [ended] = scene.ended
        assert ended.result == "cancelled"
        assert (await record_of(live_server, ended.aar_id))["result"] == "cancelled"
        await scene.client.close()

    run(scenario)


def test_a_tool_without_a_policy_is_refused_without_a_record(live_server: LiveServer) -> None:
    async def scenario() -> None:
        scene = Scene(live_server, await token_for(live_server, "py-pa-nopolicy"), [call("a", 1, "c1"), text("ok")])
        scene.capability._tools.clear()  # pyright: ignore[reportPrivateUsage]
        await scene.agent.run("write")
        assert scene.ran == [] and scene.ended == []
        assert scene.model_saw("Mandate refused crm_write: tool_not_in_policy")
        await scene.client.close()

    run(scenario)


def test_error_completes_the_record_as_error(live_server: LiveServer) -> None:
    async def scenario() -> None:
        scene = Scene(live_server, await token_for(live_server, "py-pa-error"), [call("a", -1, "c1"), text("ok")])
        with pytest.raises(ValueError):
            await scene.agent.run("write")
        assert scene.ran == [{"record": "a", "value": -1}]
        [ended] = scene.ended
        assert ended.result == "error"
        assert (await record_of(live_server, ended.aar_id))["result"] == "error"
        await scene.client.close()

    run(scenario)


async def deferred(live: LiveServer, agent: str, steps: list[ModelResponse]) -> tuple[Scene, Any]:
    token = await token_for(live, agent, constraints={"require_approval": {"actions": ["write"]}})
    scene = Scene(live, token, steps)
    result = await scene.agent.run("write")
    assert scene.ran == []
    assert isinstance(result.output, DeferredToolRequests)
    [part] = result.output.approvals
    assert part.tool_call_id == "c1"
    assert result.output.metadata["c1"]["mandate"]["url"].endswith(
        result.output.metadata["c1"]["mandate"]["approval_id"]
    )
    return scene, result


def test_approval_defers_the_call_and_the_run_resumes_under_the_same_record(live_server: LiveServer) -> None:
    async def scenario() -> None:
        scene, result = await deferred(live_server, "py-pa-approve", [call("b", 2, "c1"), text("done")])
        requests: DeferredToolRequests = result.output
        resolution = await scene.capability.resolve_approvals(requests)
        [pending] = resolution.pending
        assert pending.approval is not None and resolution.results.approvals == {}
        await scene.client.approvals.decide(pending.approval.approval_id, {"decision": "approve"})
        resolution = await scene.capability.resolve_approvals(requests)
        [approved] = resolution.approved
        resumed = await scene.agent.run(message_history=result.all_messages(), deferred_tool_results=resolution.results)
        assert resumed.output == "done"
        assert scene.ran == [{"record": "b", "value": 2}]
        assert scene.ended[-1].aar_id == approved.aar_id == pending.aar_id
        record = await record_of(live_server, pending.aar_id)
        assert (record["status"], record["result_hash"]) == ("completed", sha256_ref("wrote 2 to b"))
        await scene.client.close()

    run(scenario)


def test_denied_approval_denies_the_call(live_server: LiveServer) -> None:
    async def scenario() -> None:
        scene, result = await deferred(live_server, "py-pa-deny", [call("b", 3, "c1"), text("ok")])
        [pending] = (await scene.capability.resolve_approvals(result.output)).pending
        assert pending.approval is not None
        await scene.client.approvals.decide(pending.approval.approval_id, {"decision": "deny"})
        resolution = await scene.capability.resolve_approvals(result.output)
        [rejected] = resolution.rejected
        assert rejected.reason == "approval_denied"
        await scene.agent.run(message_history=result.all_messages(), deferred_tool_results=resolution.results)
        assert scene.ran == []
        assert scene.model_saw("Mandate refused crm_write: approval_denied")
        await scene.client.close()

    run(scenario)


def test_approving_in_the_run_alone_does_not_run_the_tool(live_server: LiveServer) -> None:
    async def scenario() -> None:
        scene, result = await deferred(live_server, "py-pa-self-approve", [call("b", 4, "c1"), text("ok")])
        results = DeferredToolResults(approvals={"c1": True})
        await scene.agent.run(message_history=result.all_messages(), deferred_tool_results=results)
        assert scene.ran == []
        assert scene.model_saw("Mandate has not approved crm_write yet (approval_pending)")
        await scene.client.close()

    run(scenario)


def test_approved_with_other_arguments_does_not_run_under_the_approval(live_server: LiveServer) -> None:
    async def scenario() -> None:
        from pydantic_ai import ToolApproved

        scene, result = await deferred(live_server, "py-pa-override", [call("b", 5, "c1"), text("ok")])
        [pending] = (await scene.capability.resolve_approvals(result.output)).pending
        assert pending.approval is not None
        await scene.client.approvals.decide(pending.approval.approval_id, {"decision": "approve"})
        # The run's approval swaps the arguments: Mandate approved value 5, not 500.
        results = DeferredToolResults(approvals={"c1": ToolApproved(override_args={"record": "b", "value": 500})})
        await scene.agent.run(message_history=result.all_messages(), deferred_tool_results=results)
        assert scene.ran == []
        assert scene.model_saw("Mandate has not approved crm_write yet (approval_pending)")
        await scene.client.close()

    run(scenario)


def test_waiting_for_approval_goes_on_with_the_reviewer_s_decision(live_server: LiveServer) -> None:
    async def scenario() -> None:
        token = await token_for(live_server, "py-pa-wait", constraints={"require_approval": {"actions": ["write"]}})
        scene = Scene(live_server, token, [call("b", 6, "c1"), text("done")], wait_for_approval=10)

        async def reviewer() -> None:
            while not scene.approvals:
                await asyncio.sleep(0.05)
            await scene.client.approvals.decide(scene.approvals[0], {"decision": "approve"})

        decided = asyncio.create_task(reviewer())
        result = await scene.agent.run("write")
        await decided
        assert result.output == "done"
        assert scene.ran == [{"record": "b", "value": 6}]
        [ended] = scene.ended
        assert (ended.state, ended.result) == ("completed", "success")
        await scene.client.close()

    run(scenario)


def test_an_unreachable_mandate_fails_the_run_and_nothing_runs(live_server: LiveServer) -> None:
    async def scenario() -> None:
        token = await token_for(live_server, "py-pa-down")
        scene = Scene(live_server, token, [call("a", 1, "c1"), text("ok")], base_url="http://127.0.0.1:9")
        with pytest.raises(MandateError) as failed:
            await scene.agent.run("write")
        assert failed.value.code == "network_error"
        assert scene.ran == []
        await scene.client.close()

    run(scenario)
