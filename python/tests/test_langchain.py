"""mandate.langchain: a LangChain 1.x agent (create_agent, a scripted model) against a live server."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import LiveServer
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from scripted import call, last_tool_message, script

from mandate import AsyncMandate, Mandate
from mandate.client import output_hash
from mandate.langchain import MandateMiddleware, ToolGrant

RULES = [{"actions": ["send"], "pol": [["like", ".to", "*@example.com"]]}]
GRANTS = {
    "send_mail": ToolGrant(action="send", resource="mail:outbox"),
    "delete_contact": ToolGrant(action="delete", resource=lambda args: f"crm:contacts/{args['contact_id']}"),
}


class Ran:
    """What the tools did: a tool that ran appends to it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def tools(self) -> list[Any]:
        ran = self.calls

        @tool
        def send_mail(to: str, subject: str) -> str:
            """Send a mail."""
            ran.append(("send_mail", {"to": to, "subject": subject}))
            return f"sent to {to}"

        @tool
        def delete_contact(contact_id: str) -> str:
            """Delete a contact."""
            ran.append(("delete_contact", {"contact_id": contact_id}))
            return f"deleted {contact_id}"

        @tool
        def shout(text: str) -> str:
            """Not gated: never runs."""
            ran.append(("shout", {"text": text}))
            return text.upper()

        return [send_mail, delete_contact, shout]


@pytest.fixture
def client(live_server: LiveServer) -> Iterator[Mandate]:
    with Mandate(live_server.base_url, api_key=live_server.api_key) as mandate:
        yield mandate


def agent_token(client: Mandate, agent: str) -> str:
    issued = client.tokens.issue_root(
        {
            "developer_email": "dev@example.com",
            "agent_id": agent,
            "resources": ["mail:*", "crm:*"],
            "actions": ["send", "delete"],
            "constraints": {"args": RULES, "require_approval": {"actions": ["delete"]}},
        }
    )
    return issued["compact_jwt"]


def run(agent: Any, thread: str, payload: Any) -> dict[str, Any]:
    result: dict[str, Any] = agent.invoke(payload, {"configurable": {"thread_id": thread}})
    return result


def test_a_permitted_call_runs_and_is_recorded_with_its_args_and_hash(client: Mandate) -> None:
    token = agent_token(client, "lc-send")
    ran = Ran()
    model = script(call("send_mail", "c1", to="bob@example.com", subject="hi"), "done")
    agent = create_agent(model, ran.tools(), middleware=[MandateMiddleware(client, token=token, tools=GRANTS)])
    result = run(agent, "t-send", {"messages": [HumanMessage("mail bob")]})
    message = last_tool_message(result["messages"])
    assert isinstance(message, ToolMessage) and message.status == "success"
    assert ran.calls == [("send_mail", {"to": "bob@example.com", "subject": "hi"})]
    records = client.records.page(agent_id="lc-send")["records"]
    assert [(r["action"], r["resource"], r["status"], r.get("result")) for r in records] == [
        ("send", "mail:outbox", "completed", "success")
    ]
    assert records[0].get("result_hash") == output_hash("sent to bob@example.com")
    assert records[0].get("args") == {"to": "bob@example.com", "subject": "hi"}


def test_a_refused_call_never_runs_and_the_model_sees_the_reason(client: Mandate) -> None:
    token = agent_token(client, "lc-refused")
    ran = Ran()
    model = script(call("send_mail", "c1", to="eve@elsewhere.test", subject="x"), call("shout", "c2", text="a"), "ok")
    agent = create_agent(model, ran.tools(), middleware=[MandateMiddleware(client, token=token, tools=GRANTS)])
    result = run(agent, "t-refused", {"messages": [HumanMessage("mail eve")]})
    refused, ungated = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    # Refused offline by the token's own argument rules: nothing sent, no record.
    assert (refused.status, refused.artifact) == ("error", {"mandate_error": "args_not_permitted"})
    assert "Refused by Mandate's rules for this token: args_not_permitted" in str(refused.content)
    assert (ungated.status, ungated.artifact) == ("error", {"mandate_error": "tool_not_gated"})
    assert ran.calls == []
    assert client.records.page(agent_id="lc-refused")["records"] == []


def test_an_approval_interrupts_and_the_tool_runs_only_once_approved(client: Mandate) -> None:
    token = agent_token(client, "lc-approve")
    ran = Ran()
    model = script(call("delete_contact", "c1", contact_id="42"), "deleted")
    agent = create_agent(
        model,
        ran.tools(),
        middleware=[MandateMiddleware(client, token=token, tools=GRANTS)],
        checkpointer=InMemorySaver(),
    )
    first = run(agent, "t-approve", {"messages": [HumanMessage("delete 42")]})
    (stop,) = first["__interrupt__"]
    value = stop.value
    assert value["type"] == "mandate_approval"
    assert (value["tool"], value["action"], value["resource"], value["args"]) == (
        "delete_contact",
        "delete",
        "crm:contacts/42",
        {"contact_id": "42"},
    )
    assert value["url"] == client.approvals.url(value["approval_id"])
    assert ran.calls == []
    # Resumed before a reviewer decided: Mandate says pending, the tool does not run.
    early = run(agent, "t-approve", Command(resume={"approved": True}))
    assert ran.calls == []
    (stop,) = early["__interrupt__"]
    assert stop.value["approval_id"] == value["approval_id"]
    approval = client.approvals.get(value["approval_id"])
    assert approval.get("args") == {"contact_id": "42"}
    client.approvals.decide(value["approval_id"], {"decision": "approve", "note": "ok"})
    done = run(agent, "t-approve", Command(resume=True))
    assert "__interrupt__" not in done
    assert ran.calls == [("delete_contact", {"contact_id": "42"})]
    records = client.records.page(agent_id="lc-approve")["records"]
    assert [(r.get("aar_id"), r["status"], r.get("result")) for r in records] == [
        (value["aar_id"], "completed", "success")
    ]


def test_a_denied_approval_never_runs(client: Mandate) -> None:
    token = agent_token(client, "lc-deny")
    ran = Ran()
    model = script(call("delete_contact", "c1", contact_id="7"), "not deleted")
    middleware = MandateMiddleware(client, token=token, tools=GRANTS)
    agent = create_agent(model, ran.tools(), middleware=[middleware], checkpointer=InMemorySaver())
    (stop,) = run(agent, "t-deny", {"messages": [HumanMessage("delete 7")]})["__interrupt__"]
    client.approvals.decide(stop.value["approval_id"], {"decision": "deny", "note": "no"})
    result = run(agent, "t-deny", Command(resume=True))
    message = last_tool_message(result["messages"])
    assert isinstance(message, ToolMessage)
    assert (message.status, message.artifact["mandate_error"]) == ("error", "approval_denied")
    assert ran.calls == []


def test_mandate_unreachable_means_the_tool_does_not_run(client: Mandate) -> None:
    token = agent_token(client, "lc-down")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    ran = Ran()
    with Mandate(f"http://127.0.0.1:{port}", max_retries=0) as down:
        model = script(call("send_mail", "c1", to="bob@example.com", subject="hi"), "ok")
        agent = create_agent(model, ran.tools(), middleware=[MandateMiddleware(down, token=token, tools=GRANTS)])
        message = last_tool_message(run(agent, "t-down", {"messages": [HumanMessage("mail")]})["messages"])
    assert isinstance(message, ToolMessage)
    assert (message.status, message.artifact["mandate_error"]) == ("error", "network_error")
    assert ran.calls == []


def test_async_agents_use_the_async_client_the_same_way(client: Mandate, live_server: LiveServer) -> None:
    token = agent_token(client, "lc-async")
    ran = Ran()

    async def scenario() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        async with AsyncMandate(live_server.base_url) as mandate:
            model = script(
                call("send_mail", "c1", to="ann@example.com", subject="s"),
                call("delete_contact", "c2", contact_id="9"),
                "done",
            )
            middleware = MandateMiddleware(mandate, token=token, tools=GRANTS, approval_wait_seconds=5)
            agent = create_agent(model, ran.tools(), middleware=[middleware], checkpointer=InMemorySaver())
            config: Any = {"configurable": {"thread_id": "t-async"}}
            first = await agent.ainvoke({"messages": [HumanMessage("go")]}, config)
            (stop,) = first["__interrupt__"]
            client.approvals.decide(stop.value["approval_id"], {"decision": "approve"})
            done = await agent.ainvoke(Command(resume=True), config)
            return first, stop.value, done

    first, value, done = asyncio.run(scenario())
    assert ran.calls == [
        ("send_mail", {"to": "ann@example.com", "subject": "s"}),
        ("delete_contact", {"contact_id": "9"}),
    ]
    assert "__interrupt__" not in done and first["messages"]
    records = client.records.page(agent_id="lc-async")["records"]
    assert sorted((r["action"], r["status"]) for r in records) == [("delete", "completed"), ("send", "completed")]
    assert value["aar_id"] in {r.get("aar_id") for r in records}


def test_an_approval_is_bound_to_the_arguments_it_was_asked_for(client: Mandate) -> None:
    token = agent_token(client, "lc-edited")
    ran = Ran()
    model = script(call("delete_contact", "c1", contact_id="42"), "deleted")
    agent = create_agent(
        model,
        ran.tools(),
        middleware=[MandateMiddleware(client, token=token, tools=GRANTS)],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "t-edited"}}
    (first,) = agent.invoke({"messages": [HumanMessage("delete 42")]}, config)["__interrupt__"]
    client.approvals.decide(first.value["approval_id"], {"decision": "approve"})
    # The history is edited after the approval: the same tool call now names another contact.
    asked = next(m for m in agent.get_state(config).values["messages"] if getattr(m, "tool_calls", None))
    edited = asked.model_copy(update={"tool_calls": [{**asked.tool_calls[0], "args": {"contact_id": "43"}}]})
    agent.update_state(config, {"messages": [edited]}, as_node="model")
    result = agent.invoke(Command(resume=True), config)
    (second,) = result["__interrupt__"]
    assert second.value["args"] == {"contact_id": "43"}
    assert second.value["approval_id"] != first.value["approval_id"]
    assert ran.calls == []
