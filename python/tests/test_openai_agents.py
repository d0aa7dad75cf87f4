"""mandate.openai_agents against a live server, with openai-agents' ScriptedModel (no model calls)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
from agents import Agent, Runner, RunResult, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call
from conftest import LiveServer
from test_client import grant

from mandate import AsyncMandate, MandateError
from mandate.client import sha256_ref
from mandate.openai_agents import MandateAgents, MandateToolCall

set_tracing_disabled(True)  # No trace export: no network but the local server.


def model_saw(model: ScriptedModel, text: str) -> bool:
    """Whether the model's last input held ``text`` (as a tool's output)."""
    last = model.last_call
    return last is not None and text in json.dumps(last.input, default=str)


class Scene:
    """An agent with one tool ``crm_write(record, value)`` under Mandate, and what it did."""

    def __init__(
        self, live: LiveServer, token: str, steps: list[Any], *, base_url: str | None = None, **policy: Any
    ) -> None:
        self.client = AsyncMandate(base_url or live.base_url, api_key=live.api_key, max_retries=0)
        self.ran: list[dict[str, Any]] = []
        self.ended: list[MandateToolCall] = []
        self.mandate = MandateAgents(self.client, token, on_call_end=self.ended.append)

        def crm_write(record: str, value: int) -> str:
            """Writes ``value`` into a CRM record."""
            self.ran.append({"record": record, "value": value})
            if value < 0:
                raise ValueError("negative values are not kept")
            return f"wrote {value} to {record}"

        options: dict[str, Any] = {"action": "write", "resource": lambda args: f"crm:{args['record']}"}
        options.update(policy)
        self.tool = self.mandate.function_tool(crm_write, **options)
        self.model = ScriptedModel(steps)
        self.agent: Agent[Any] = Agent(name="crm", model=self.model, tools=[self.tool])


def call(record: str, value: int, call_id: str) -> list[Any]:
    return [function_call("crm_write", {"record": record, "value": value}, call_id=call_id)]


async def token_for(live: LiveServer, agent: str, **more: Any) -> str:
    async with AsyncMandate(live.base_url, api_key=live.api_key) as admin:
        return (await admin.tokens.issue_root(grant(agent, **more)))["compact_jwt"]


async def record_of(live: LiveServer, aar_id: str | None) -> dict[str, Any]:
    assert aar_id is not None
    async with AsyncMandate(live.base_url, api_key=live.api_key) as admin:
        return dict(await admin.records.get(aar_id))


def run(test: Callable[[], Any]) -> None:
    asyncio.run(test())


def test_authorized_call_runs_once_and_completes_its_record(live_server: LiveServer) -> None:
    async def scenario() -> None:
        token = await token_for(live_server, "py-oa-ok")
        scene = Scene(live_server, token, [call("a", 7, "c1"), [assistant_message("done")]])
        result = await Runner.run(scene.agent, "write 7 to a")
        assert result.final_output == "done"
        assert scene.ran == [{"record": "a", "value": 7}]
        [ended] = scene.ended
        assert (ended.state, ended.result, ended.action, ended.resource) == ("completed", "success", "write", "crm:a")
        record = await record_of(live_server, ended.aar_id)
        assert record["status"] == "completed"
        assert record["result_hash"] == sha256_ref("wrote 7 to a")
        assert record["args"] == {"record": "a", "value": 7}
        assert model_saw(scene.model, "wrote 7 to a")
        await scene.client.close()

    run(scenario)


def test_refused_call_never_runs_and_the_model_reads_why(live_server: LiveServer) -> None:
    async def scenario() -> None:
        token = await token_for(live_server, "py-oa-refused", actions=["read"])
        scene = Scene(live_server, token, [call("a", 1, "c1"), [assistant_message("ok")]])
        await Runner.run(scene.agent, "write")
        assert scene.ran == []
        [ended] = scene.ended
        assert (ended.state, ended.reason) == ("refused", "action_not_permitted")
        assert model_saw(scene.model, "Mandate refused crm_write: action_not_permitted")
        await scene.client.close()

    run(scenario)


def test_error_completes_the_record_as_error(live_server: LiveServer) -> None:
    async def scenario() -> None:
        token = await token_for(live_server, "py-oa-error")
        scene = Scene(live_server, token, [call("a", -1, "c1"), [assistant_message("ok")]])
        await Runner.run(scene.agent, "write")
        assert scene.ran == [{"record": "a", "value": -1}]
        [ended] = scene.ended
        assert ended.result == "error"
        assert (await record_of(live_server, ended.aar_id))["result"] == "error"
        assert model_saw(scene.model, "An error occurred while running the tool")
        await scene.client.close()

    run(scenario)


async def interrupted(live: LiveServer, agent: str, steps: list[Any]) -> tuple[Scene, RunResult]:
    token = await token_for(live, agent, constraints={"require_approval": {"actions": ["write"]}})
    scene = Scene(live, token, steps)
    result = await Runner.run(scene.agent, "write")
    assert scene.ran == []
    [item] = result.interruptions
    assert item.tool_name == "crm_write"
    return scene, result


def test_approval_interrupts_and_the_run_resumes_under_the_same_record(live_server: LiveServer) -> None:
    async def scenario() -> None:
        steps = [call("b", 2, "c1"), [assistant_message("done")]]
        scene, result = await interrupted(live_server, "py-oa-approve", steps)
        state = result.to_state()
        resolution = await scene.mandate.resolve_approvals(state)
        [pending] = resolution.pending
        assert pending.approval is not None and pending.approval.url.endswith(pending.approval.approval_id)
        assert resolution.approved == [] and scene.ran == []

        await scene.client.approvals.decide(pending.approval.approval_id, {"decision": "approve"})
        resolution = await scene.mandate.resolve_approvals(state)
        [approved] = resolution.approved
        assert approved.aar_id == pending.aar_id
        resumed = await Runner.run(scene.agent, state)
        assert resumed.final_output == "done"
        assert scene.ran == [{"record": "b", "value": 2}]
        assert scene.ended[-1].aar_id == pending.aar_id
        record = await record_of(live_server, pending.aar_id)
        assert (record["status"], record["result_hash"]) == ("completed", sha256_ref("wrote 2 to b"))
        await scene.client.close()

    run(scenario)


def test_resolve_approvals_waits_for_the_reviewer(live_server: LiveServer) -> None:
    async def scenario() -> None:
        steps = [call("b", 6, "c1"), [assistant_message("done")]]
        scene, result = await interrupted(live_server, "py-oa-wait", steps)
        state = result.to_state()
        assert scene.ended == []  # Awaiting a decision is not an end.

        async def reviewer() -> None:
            async for approval in scene.client.approvals.list(status="pending"):
                if approval["agent_id"].endswith("py-oa-wait"):
                    await asyncio.sleep(0.3)
                    await scene.client.approvals.decide(approval["approval_id"], {"decision": "approve"})

        decided = asyncio.create_task(reviewer())
        resolution = await scene.mandate.resolve_approvals(state, wait_seconds=10)
        await decided
        assert len(resolution.approved) == 1 and resolution.pending == []
        assert (await Runner.run(scene.agent, state)).final_output == "done"
        assert scene.ran == [{"record": "b", "value": 6}]
        await scene.client.close()

    run(scenario)


def test_denied_approval_rejects_the_call(live_server: LiveServer) -> None:
    async def scenario() -> None:
        steps = [call("b", 3, "c1"), [assistant_message("ok")]]
        scene, result = await interrupted(live_server, "py-oa-deny", steps)
        state = result.to_state()
        [pending] = (await scene.mandate.resolve_approvals(state)).pending
        assert pending.approval is not None
        await scene.client.approvals.decide(pending.approval.approval_id, {"decision": "deny"})
        [rejected] = (await scene.mandate.resolve_approvals(state)).rejected
        assert rejected.reason == "approval_denied"
        await Runner.run(scene.agent, state)
        assert scene.ran == []
        assert model_saw(scene.model, "Mandate refused crm_write: approval_denied")
        await scene.client.close()

    run(scenario)


def test_approving_in_the_run_alone_does_not_run_the_tool(live_server: LiveServer) -> None:
    async def scenario() -> None:
        steps = [call("b", 4, "c1"), [assistant_message("ok")]]
        scene, result = await interrupted(live_server, "py-oa-self-approve", steps)
        state = result.to_state()
        state.approve(state.get_interruptions()[0])
        await Runner.run(scene.agent, state)
        assert scene.ran == []
        assert model_saw(scene.model, "Mandate has not approved crm_write yet (approval_pending)")
        await scene.client.close()

    run(scenario)


def test_the_same_call_id_with_other_arguments_is_asked_anew(live_server: LiveServer) -> None:
    async def scenario() -> None:
        steps = [call("b", 5, "c1"), [assistant_message("ok")], call("b", 500, "c1")]
        scene, result = await interrupted(live_server, "py-oa-edited", steps)
        state = result.to_state()
        [first] = (await scene.mandate.resolve_approvals(state)).pending
        assert first.approval is not None
        await scene.client.approvals.decide(first.approval.approval_id, {"decision": "approve"})
        assert len((await scene.mandate.resolve_approvals(state)).approved) == 1
        await Runner.run(scene.agent, state)
        assert scene.ran == [{"record": "b", "value": 5}]
        # Another run whose model reuses the call id with other arguments: not under the first approval.
        again = await Runner.run(scene.agent, "again")
        assert scene.ran == [{"record": "b", "value": 5}]
        [second] = (await scene.mandate.resolve_approvals(again.to_state())).pending
        assert second.call_id == "c1" and second.aar_id != first.aar_id and second.args_hash != first.args_hash
        await scene.client.close()

    run(scenario)


def test_an_unreachable_mandate_fails_the_run_and_nothing_runs(live_server: LiveServer) -> None:
    async def scenario() -> None:
        token = await token_for(live_server, "py-oa-down")
        steps = [call("a", 1, "c1"), [assistant_message("ok")]]
        scene = Scene(live_server, token, steps, base_url="http://127.0.0.1:9")
        with pytest.raises(Exception) as failed:
            await Runner.run(scene.agent, "write")
        cause = failed.value if isinstance(failed.value, MandateError) else failed.value.__cause__
        assert isinstance(cause, MandateError) and cause.code == "network_error"
        assert scene.ran == []
        await scene.client.close()

    run(scenario)
