"""A LangGraph sales assistant whose every tool call is a Mandate action, with a sub-agent it delegates to.

    python examples/python-langgraph/agent.py [--auto-approve]

1. The developer's side (the API key) issues the assistant ``sales-assistant`` a
   token: ``write`` on ``crm:deals/*`` (a reviewer approves each write), ``send``
   on ``mail:outbox`` only to addresses at example.com (an argument rule), and
   ``delegate``.
2. The assistant (a LangChain ``create_agent`` agent with
   ``mandate.langchain.MandateMiddleware``) moves deal ``d-42`` to ``won``
   (``update_deal``): Mandate asks a reviewer, and the graph stops with a
   LangGraph ``interrupt`` carrying the reviewer's page. With
   ``--auto-approve`` (demo only) the developer's API key approves it, standing
   in for the reviewer; otherwise open the printed page and decide there. The
   graph is resumed and the deal is updated only if the reviewer approved.
3. The assistant delegates a sub-agent, ``sales-mailer``, a narrower token:
   ``send`` on ``mail:outbox`` only (the argument rule comes along). The mailer
   tries ``update_deal`` (refused: ``action_not_permitted``), mails
   ``ada@example.com.attacker.test`` (refused: ``args_not_permitted``), then
   mails ``ada@example.com`` (sent, into an in-memory outbox).
4. It prints the workflow's page in the dashboard.

The models are scripted (``GenericFakeChatModel`` turns), so the example runs
offline and gives the same calls every time; put a real chat model in
``create_agent`` and the middleware is unchanged.

MANDATE_URL: the Mandate server (default http://127.0.0.1:8080, where
``cargo xtask serve`` listens). MANDATE_API_KEY: an API key that may issue
tokens and decide approvals; default the admin key ``cargo xtask serve``
writes to ``.mandate/admin.key`` (in the current folder, then at the
repository's root).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from mandate import Mandate
from mandate.langchain import MandateMiddleware, ToolGrant

DEAL = "d-42"
MAIL_RULE = [{"actions": ["send"], "pol": [["like", ".to", "*@example.com"]]}]
GRANTS = {
    "update_deal": ToolGrant(action="write", resource=lambda args: f"crm:deals/{args['deal_id']}"),
    "send_mail": ToolGrant(action="send", resource="mail:outbox"),
}


class ScriptedModel(GenericFakeChatModel):
    """A chat model that answers with the next scripted turn: no model is called."""

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self


def turn(name: str, call_id: str, **args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}])


class Crm:
    """The tools' world: deals and an outbox, in memory."""

    def __init__(self) -> None:
        self.deals = {DEAL: "negotiation"}
        self.outbox: list[dict[str, str]] = []

    def tools(self) -> list[BaseTool]:
        crm = self

        @tool
        def update_deal(deal_id: str, stage: str) -> str:
            """Move a deal to a stage."""
            crm.deals[deal_id] = stage
            return f"Deal {deal_id} is now {stage}."

        @tool
        def send_mail(to: str, subject: str) -> str:
            """Send an e-mail from the outbox."""
            crm.outbox.append({"to": to, "subject": subject})
            return f"Sent msg-{len(crm.outbox)} to {to}."

        return [update_deal, send_mail]


def api_key() -> str:
    """MANDATE_API_KEY, else the admin key of a local ``cargo xtask serve``."""
    from_env = os.environ.get("MANDATE_API_KEY", "").strip()
    if from_env:
        return from_env
    for path in (Path(".mandate/admin.key"), Path(__file__).resolve().parents[2] / ".mandate" / "admin.key"):
        if path.exists():
            return path.read_text().strip()
    sys.exit("No API key: set MANDATE_API_KEY, or start `cargo xtask serve`, which writes .mandate/admin.key.")


def outcome(message: object) -> str:
    assert isinstance(message, ToolMessage)
    if message.status == "error":
        artifact = message.artifact if isinstance(message.artifact, dict) else {}
        return f"refused ({artifact.get('mandate_error')})"
    return str(message.content)


def tool_messages(state: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in state["messages"] if isinstance(m, ToolMessage)]


def wait_for_decision(developer: Mandate, approval_id: str, auto_approve: bool) -> str:
    """The reviewer's decision: the API key's with ``--auto-approve``, else whatever the page's reviewer decides."""
    if auto_approve:
        developer.approvals.decide(approval_id, {"decision": "approve", "note": "auto-approved by the demo"})
    deadline = time.monotonic() + 300
    while True:
        status = developer.approvals.get(approval_id, wait=min(30, max(1, int(deadline - time.monotonic()))))["status"]
        if status != "pending" or time.monotonic() >= deadline:
            return status


def run(mandate_url: str, key: str, auto_approve: bool, log: Callable[[str], None] = print) -> int:
    # The developer's side holds the API key; the agents hold only their tokens.
    with Mandate(mandate_url, api_key=key) as developer, Mandate(mandate_url) as agents:
        root = developer.tokens.issue_root(
            {
                "developer_email": "dev@example.com",
                "agent_id": "sales-assistant",
                "resources": ["crm:deals/*", "mail:outbox"],
                "actions": ["write", "send", "delegate"],
                "constraints": {"args": MAIL_RULE, "require_approval": {"actions": ["write"]}},
                "ttl_seconds": 900,
            }
        )
        log("token     sales-assistant: write crm:deals/* (a reviewer approves), send mail:outbox to *@example.com")
        log(f"workflow  {root['provenance_ref']}")
        crm = Crm()

        # The assistant: update_deal waits for a reviewer through a LangGraph interrupt.
        assistant = create_agent(
            ScriptedModel(messages=iter([turn("update_deal", "call-1", deal_id=DEAL, stage="won"), "Deal updated."])),
            crm.tools(),
            middleware=[MandateMiddleware(agents, token=root["compact_jwt"], tools=GRANTS)],
            checkpointer=InMemorySaver(),
        )
        config: Any = {"configurable": {"thread_id": "sales-1"}}
        state = assistant.invoke({"messages": [HumanMessage(f"Mark deal {DEAL} as won.")]}, config)
        while "__interrupt__" in state:
            asked = state["__interrupt__"][0].value
            log(f"approval  update_deal {asked['resource']}: a reviewer decides at {asked['url']}")
            decision = wait_for_decision(developer, asked["approval_id"], auto_approve)
            log(f"decided   {decision}")
            state = assistant.invoke(Command(resume=decision), config)
        log(f"update    {outcome(tool_messages(state)[-1])}")

        # The sub-agent: a narrower token, send on mail:outbox only; the argument rule comes along.
        child = agents.tokens.delegate(
            {"agent_id": "sales-mailer", "actions": ["send"], "resources": ["mail:outbox"]},
            token=root["compact_jwt"],
        )
        mailer_token: str = child["compact_jwt"]  # type: ignore[typeddict-item]
        log("delegated sales-mailer: send mail:outbox only")
        mailer = create_agent(
            ScriptedModel(
                messages=iter(
                    [
                        turn("update_deal", "call-2", deal_id=DEAL, stage="lost"),
                        turn("send_mail", "call-3", to="ada@example.com.attacker.test", subject="Your deal"),
                        turn("send_mail", "call-4", to="ada@example.com", subject="Your deal"),
                        "Mail sent.",
                    ]
                )
            ),
            crm.tools(),
            middleware=[MandateMiddleware(agents, token=mailer_token, tools=GRANTS)],
        )
        mailed = mailer.invoke({"messages": [HumanMessage("Tell Ada her deal is won.")]}, {"configurable": {}})
        lookup, outside, sent = tool_messages(mailed)
        log(f"mailer    update_deal: {outcome(lookup)}")
        log(f"mailer    send_mail to ada@example.com.attacker.test: {outcome(outside)}")
        log(f"mailer    send_mail to ada@example.com: {outcome(sent)}")
        log(f"deals     {crm.deals}")
        log(f"outbox    {crm.outbox}")
        log(f"page      {developer.workflow_url(root['provenance_ref'])}")
        return 0 if crm.deals[DEAL] == "won" and len(crm.outbox) == 1 else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--auto-approve", action="store_true", help="demo only: the API key approves the update")
    flags = parser.parse_args()
    mandate_url = os.environ.get("MANDATE_URL", "http://127.0.0.1:8080").rstrip("/")
    sys.exit(run(mandate_url, api_key(), flags.auto_approve))


if __name__ == "__main__":
    main()
