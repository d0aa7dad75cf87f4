"""The adapters' untested paths against a live server, scripted models: bound tokens, streamed and cancelled runs.

- A token bound to an ``AgentKey`` acts through each adapter given that key:
  every request to Mandate is ``Authorization: DPoP`` with a proof of its
  own; with another key nothing runs.
- A streamed run (LangGraph ``stream``, ``Runner.run_streamed``, Pydantic
  AI's ``run_stream_events``) writes the same records as the same run not
  streamed.
- A cancelled openai-agents run (its task cancelled, or ``cancel()`` on a
  streamed run) completes the record of the tool it cancelled as
  ``cancelled``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from agents import Agent as OpenAIAgent
from agents import Runner, set_tracing_disabled
from agents.exceptions import UserError
from agents.testing import ScriptedModel, assistant_message, function_call
from conftest import LiveServer
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from scripted import call, script
from test_client import grant

from mandate import AgentKey, AsyncMandate, Mandate, MandateError
from mandate.langchain import MandateMiddleware, ToolGrant
from mandate.openai_agents import MandateAgents, MandateToolCall
from mandate.pydantic_ai import MandateCapability, ToolPolicy

set_tracing_disabled(True)  # No trace export: no network but the local server.


@dataclass
class Seen:
    """Each request sent to Mandate: its path, its Authorization scheme and its DPoP proof."""

    requests: list[tuple[str, str, str | None]] = field(default_factory=list[tuple[str, str, str | None]])

    def sync_hook(self, request: httpx.Request) -> None:
        scheme = request.headers.get("authorization", "").split(" ", 1)[0]
        self.requests.append((request.url.path, scheme, request.headers.get("dpop")))

    async def hook(self, request: httpx.Request) -> None:
        self.sync_hook(request)

    def all_fresh_proofs(self) -> bool:
        """Every request was DPoP with a proof, and no proof was sent twice."""
        proofs = [proof for _, _, proof in self.requests]
        return (
            bool(self.requests)
            and all(scheme == "DPoP" and proof for _, scheme, proof in self.requests)
            and len(set(proofs)) == len(proofs)
        )


def bound_token(admin: Mandate, agent: str, key: AgentKey) -> str:
    return admin.tokens.issue_root(grant(agent, holder_key=key.public_jwk))["compact_jwt"]


def unbound_token(admin: Mandate, agent: str) -> str:
    return admin.tokens.issue_root(grant(agent))["compact_jwt"]


def records(admin: Mandate, agent: str) -> list[tuple[Any, ...]]:
    """The agent's records as what a run wrote: action, resource, status, result, hash, args (oldest first)."""
    rows = admin.records.page(agent_id=agent)["records"]
    return sorted(
        (r["action"], r["resource"], r["status"], r.get("result"), r.get("result_hash"), json.dumps(r.get("args")))
        for r in rows
    )


@pytest.fixture
def admin(live_server: LiveServer) -> Any:
    with Mandate(live_server.base_url, api_key=live_server.api_key) as client:
        yield client


# LangChain / LangGraph.


def langchain_agent(client: Mandate | AsyncMandate, token: str, ran: list[str], key: AgentKey | None = None) -> Any:
    @tool
    def crm_write(record: str, value: int) -> str:
        """Writes ``value`` into a CRM record."""
        ran.append(record)
        return f"wrote {value} to {record}"

    model = script(call("crm_write", "c1", record="a", value=1), call("crm_write", "c2", record="b", value=2), "done")
    grants = {"crm_write": ToolGrant("write", lambda args: f"crm:{args['record']}")}
    return create_agent(model, [crm_write], middleware=[MandateMiddleware(client, token=token, tools=grants, key=key)])


def test_langchain_a_bound_token_acts_with_a_fresh_proof_per_request(live_server: LiveServer, admin: Mandate) -> None:
    key = AgentKey.generate()
    token = bound_token(admin, "py-lc-bound", key)
    seen = Seen()
    ran: list[str] = []
    with Mandate(live_server.base_url, http=httpx.Client(event_hooks={"request": [seen.sync_hook]})) as client:
        agent = langchain_agent(client, token, ran, key)
        agent.invoke({"messages": [HumanMessage("write")]})
        assert ran == ["a", "b"]
        assert [path.rsplit("/", 1)[-1] for path, _, _ in seen.requests] == ["authorize", "complete"] * 2
        assert seen.all_fresh_proofs()
        # Another agent's key: refused (the client will not send the token with it), and nothing runs.
        ran.clear()
        stolen = langchain_agent(client, token, ran, AgentKey.generate())
        result = stolen.invoke({"messages": [HumanMessage("write")]})
    errors = [m.artifact["mandate_error"] for m in result["messages"] if isinstance(m, ToolMessage)]
    assert ran == [] and len(errors) == 2 and all(code.startswith("dpop_") for code in errors)
    assert [row[2:4] for row in records(admin, "py-lc-bound")] == [("completed", "success")] * 2


def test_langgraph_stream_records_as_invoke_does(admin: Mandate) -> None:
    ran: list[str] = []
    langchain_agent(admin, unbound_token(admin, "py-lc-invoke"), ran).invoke({"messages": [HumanMessage("write")]})
    streamed = langchain_agent(admin, unbound_token(admin, "py-lc-stream"), ran)
    chunks = list(streamed.stream({"messages": [HumanMessage("write")]}, stream_mode="updates"))
    assert chunks and ran == ["a", "b", "a", "b"]
    invoked = records(admin, "py-lc-invoke")
    assert len(invoked) == 2 and records(admin, "py-lc-stream") == invoked


def test_langgraph_astream_records_as_ainvoke_does(live_server: LiveServer, admin: Mandate) -> None:
    async def scenario() -> None:
        ran: list[str] = []
        async with AsyncMandate(live_server.base_url) as client:
            invoked = langchain_agent(client, unbound_token(admin, "py-lc-ainvoke"), ran)
            await invoked.ainvoke({"messages": [HumanMessage("write")]})
            streamed = langchain_agent(client, unbound_token(admin, "py-lc-astream"), ran)
            payload = {"messages": [HumanMessage("write")]}
            chunks = [chunk async for chunk in streamed.astream(payload, stream_mode="updates")]
            assert chunks
        assert ran == ["a", "b", "a", "b"]

    asyncio.run(scenario())
    invoked = records(admin, "py-lc-ainvoke")
    assert len(invoked) == 2 and records(admin, "py-lc-astream") == invoked


# OpenAI Agents.


def openai_scene(
    client: AsyncMandate, token: str, ran: list[str], key: AgentKey | None = None, slow: asyncio.Event | None = None
) -> tuple[OpenAIAgent[Any], list[MandateToolCall]]:
    ended: list[MandateToolCall] = []
    mandate = MandateAgents(client, token, key=key, on_call_end=ended.append)

    async def crm_write(record: str, value: int) -> str:
        """Writes ``value`` into a CRM record."""
        ran.append(record)
        if slow is not None:
            slow.set()
            await asyncio.sleep(60)
        return f"wrote {value} to {record}"

    tool = mandate.function_tool(crm_write, action="write", resource=lambda args: f"crm:{args['record']}")
    model = ScriptedModel(
        [
            [function_call("crm_write", {"record": "a", "value": 1}, call_id="c1")],
            [function_call("crm_write", {"record": "b", "value": 2}, call_id="c2")],
            [assistant_message("done")],
        ]
    )
    return OpenAIAgent(name="crm", model=model, tools=[tool]), ended


def test_openai_agents_a_bound_token_acts_with_a_fresh_proof_per_request(
    live_server: LiveServer, admin: Mandate
) -> None:
    key = AgentKey.generate()
    token = bound_token(admin, "py-oa-bound", key)

    async def scenario() -> None:
        seen = Seen()
        ran: list[str] = []
        watched = httpx.AsyncClient(event_hooks={"request": [seen.hook]})
        async with AsyncMandate(live_server.base_url, http=watched) as client:
            agent, ended = openai_scene(client, token, ran, key)
            await Runner.run(agent, "write")
            assert ran == ["a", "b"] and [c.result for c in ended] == ["success", "success"]
            assert seen.all_fresh_proofs()
            # Another agent's key: the client refuses to send the token with it; the run fails and nothing runs.
            ran.clear()
            sent = len(seen.requests)
            stolen, _ = openai_scene(client, token, ran, AgentKey.generate())
            with pytest.raises(UserError) as failed:
                await Runner.run(stolen, "write")
            refused = failed.value.__cause__
            assert isinstance(refused, MandateError) and refused.code.startswith("dpop_")
            assert ran == [] and len(seen.requests) == sent

    asyncio.run(scenario())
    assert [row[2:4] for row in records(admin, "py-oa-bound")] == [("completed", "success")] * 2


def test_openai_agents_run_streamed_records_as_run_does(live_server: LiveServer, admin: Mandate) -> None:
    async def scenario() -> None:
        ran: list[str] = []
        async with AsyncMandate(live_server.base_url) as client:
            agent, _ = openai_scene(client, unbound_token(admin, "py-oa-run"), ran)
            await Runner.run(agent, "write")
            agent, _ = openai_scene(client, unbound_token(admin, "py-oa-streamed"), ran)
            streamed = Runner.run_streamed(agent, "write")
            events = [event async for event in streamed.stream_events()]
            assert events and streamed.final_output == "done"
        assert ran == ["a", "b", "a", "b"]

    asyncio.run(scenario())
    run = records(admin, "py-oa-run")
    assert len(run) == 2 and records(admin, "py-oa-streamed") == run


@pytest.mark.parametrize("how", ["task", "streamed"])
def test_openai_agents_a_cancelled_run_completes_the_record_cancelled(
    live_server: LiveServer, admin: Mandate, how: str
) -> None:
    agent_id = f"py-oa-cancel-{how}"

    async def scenario() -> list[MandateToolCall]:
        ran: list[str] = []
        started = asyncio.Event()
        async with AsyncMandate(live_server.base_url) as client:
            agent, ended = openai_scene(client, unbound_token(admin, agent_id), ran, slow=started)
            if how == "task":
                running = asyncio.create_task(Runner.run(agent, "write"))
                await started.wait()
                running.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await running
            else:
                streamed = Runner.run_streamed(agent, "write")

                async def consume() -> None:
                    async for _ in streamed.stream_events():
                        pass

                consuming = asyncio.create_task(consume())
                await started.wait()
                streamed.cancel()
                await asyncio.wait_for(consuming, 15)
            # The SDK may end a cancelled run before the tool's task has ended: the completion goes on meanwhile,
            # as long as the loop and the client do.
            for _ in range(100):
                if ended:
                    break
                await asyncio.sleep(0.05)
        assert ran == ["a"]
        return ended

    ended = asyncio.run(scenario())
    assert [(c.state, c.result) for c in ended] == [("completed", "cancelled")]
    assert [row[2:4] for row in records(admin, agent_id)] == [("completed", "cancelled")]


# Pydantic AI.


def pydantic_scene(
    client: AsyncMandate, token: str, ran: list[str], key: AgentKey | None = None
) -> PydanticAgent[None, str]:
    turns: list[ModelResponse] = [
        ModelResponse(parts=[ToolCallPart("crm_write", {"record": "a", "value": 1}, tool_call_id="c1")]),
        ModelResponse(parts=[ToolCallPart("crm_write", {"record": "b", "value": 2}, tool_call_id="c2")]),
        ModelResponse(parts=[TextPart("done")]),
    ]
    streamed: list[list[tuple[str, int, str]]] = [[("a", 1, "c1")], [("b", 2, "c2")], []]

    def model(messages: list[ModelMessage], _: AgentInfo) -> ModelResponse:
        return turns.pop(0)

    async def stream(messages: list[ModelMessage], _: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        turn = streamed.pop(0)
        if not turn:
            yield "done"
            return
        for record, value, call_id in turn:
            args = json.dumps({"record": record, "value": value})
            yield {0: DeltaToolCall(name="crm_write", json_args=args, tool_call_id=call_id)}

    capability = MandateCapability(
        client, token, tools={"crm_write": ToolPolicy("write", lambda args: f"crm:{args['record']}")}, key=key
    )
    scripted = FunctionModel(model, stream_function=stream)
    agent: PydanticAgent[None, str] = PydanticAgent(scripted, capabilities=[capability])

    @agent.tool_plain
    def crm_write(record: str, value: int) -> str:
        """Writes ``value`` into a CRM record."""
        ran.append(record)
        return f"wrote {value} to {record}"

    return agent


def test_pydantic_ai_a_bound_token_acts_with_a_fresh_proof_per_request(live_server: LiveServer, admin: Mandate) -> None:
    key = AgentKey.generate()
    token = bound_token(admin, "py-pa-bound", key)

    async def scenario() -> None:
        seen = Seen()
        ran: list[str] = []
        watched = httpx.AsyncClient(event_hooks={"request": [seen.hook]})
        async with AsyncMandate(live_server.base_url, http=watched) as client:
            await pydantic_scene(client, token, ran, key).run("write")
            assert ran == ["a", "b"] and seen.all_fresh_proofs()
            # Another agent's key: the client refuses to send the token with it; the run fails and nothing runs.
            ran.clear()
            sent = len(seen.requests)
            with pytest.raises(MandateError) as refused:
                await pydantic_scene(client, token, ran, AgentKey.generate()).run("write")
            assert refused.value.code.startswith("dpop_") and ran == [] and len(seen.requests) == sent

    asyncio.run(scenario())
    assert [row[2:4] for row in records(admin, "py-pa-bound")] == [("completed", "success")] * 2


def test_pydantic_ai_a_streamed_run_records_as_run_does(live_server: LiveServer, admin: Mandate) -> None:
    async def scenario() -> None:
        ran: list[str] = []
        async with AsyncMandate(live_server.base_url) as client:
            await pydantic_scene(client, unbound_token(admin, "py-pa-run"), ran).run("write")
            agent = pydantic_scene(client, unbound_token(admin, "py-pa-streamed"), ran)
            async with agent.run_stream_events("write") as events:
                seen = [event async for event in events]
            assert seen
        assert ran == ["a", "b", "a", "b"]

    asyncio.run(scenario())
    run = records(admin, "py-pa-run")
    assert len(run) == 2 and records(admin, "py-pa-streamed") == run
