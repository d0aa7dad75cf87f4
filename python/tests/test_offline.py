"""check_args_offline: the token's own argument rules judged before anything is sent (wasm/test/args.test.mjs's cases).

Tokens are signed here with PyJWT over the vectors' claims carrying the
rules of tests/vectors/args.json; a recording transport stands in for
Mandate, so a refused call is seen to send nothing.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, cast

import jwt
import pytest
from agents import Agent as OpenAIAgent
from agents import Runner, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from recorder import BASE, Recorder
from scripted import call, script

from mandate import AsyncMandate, Mandate, MandateError, MandateRefusal
from mandate.client import Attempt, check_args_offline
from mandate.langchain import MandateMiddleware, ToolGrant
from mandate.openai_agents import MandateAgents
from mandate.openai_agents import MandateToolCall as AgentsCall
from mandate.pydantic_ai import MandateCapability, ToolPolicy
from mandate.pydantic_ai import MandateToolCall as PydanticCall

set_tracing_disabled(True)  # No trace export.

VECTORS = Path(__file__).resolve().parents[2] / "tests" / "vectors"
CHECK = json.loads((VECTORS / "args.json").read_text())["check"]
ROOT = next(c for c in json.loads((VECTORS / "tokens.json").read_text())["cases"] if c["name"] == "valid_root")
KEY = Ed25519PrivateKey.generate()


def sign(constraints: dict[str, Any]) -> str:
    """A root token of the vectors' claims with ``constraints``, signed here (the check never reads the signature)."""
    claims = {name: value for name, value in ROOT["expect"]["claims"].items() if name != "status"}
    claims["svc_scope"] = {"actions": ["send", "pay", "read"], "resources": ["mail:*", "bank:*", "files:*", "chat:*"]}
    claims["svc_constraints"] = constraints
    return jwt.encode(claims, KEY, algorithm="EdDSA", headers={"typ": "vat+jwt", "kid": "k"})


RULED = sign({"args": CHECK["rules"]})
#: The traps: ``not`` over an absent field, and ``!=`` over one, never permit.
TRAP = [["not", ["==", ".bcc", "archive@evil.com"]], ["!=", ".cc", "archive@evil.com"]]
TRAPPED = sign({"args": [{"actions": ["send"], "pol": TRAP}]})
UNRULED = sign({})
OUTSIDER = {"to": ["ann@example.com", "eve@evil.com"]}
INSIDERS = {"to": ["ann@example.com", "raj@example.com"], "subject": "q3"}


def attempt(action: str, resource: str, args: Any = None) -> Attempt:
    request: Attempt = {"action": action, "resource": resource}
    if args is not None:
        request["args"] = args
    return request


def test_every_check_vector_with_a_rule_made_verdict_as_the_tokens_own_rules_judge_it() -> None:
    judged = 0
    for case in CHECK["cases"]:
        refusal = check_args_offline(RULED, attempt(case["action"], case["resource"], case.get("args")))
        expect = case["expect"]
        if expect["ok"]:
            assert refusal is None, case["name"]
            continue
        judged += 1
        assert isinstance(refusal, MandateRefusal), case["name"]
        problem = refusal.problem
        got = (refusal.status, refusal.reason, refusal.code, refusal.aar_id)
        assert got == (0, expect["code"], expect["code"], None), case["name"]
        named = (problem.get("rule"), problem.get("statement"), problem.get("truth"))
        assert named == (expect.get("rule"), expect.get("statement"), expect.get("truth")), case["name"]
    assert judged >= 8
    # What the rules do not govern is left to the server: a token without rules, scope, a string that is not a token.
    assert check_args_offline(UNRULED, attempt("send", "mail:outbox", OUTSIDER)) is None
    assert check_args_offline(RULED, attempt("delete", "mail:outbox")) is None
    assert check_args_offline("eyJ.token.sig", attempt("send", "mail:outbox")) is None
    # Claims this version does not know are left to the server too (invalid_claims).
    assert check_args_offline(sign({"args": CHECK["rules"], "unknown": 1}), attempt("send", "mail:x", OUTSIDER)) is None
    # Arguments Mandate would not take are refused before they are sent.
    twice = cast(Any, '{"to":["a@example.com"],"to":[]}')
    duplicate = check_args_offline(UNRULED, attempt("send", "mail:outbox", twice))
    assert isinstance(duplicate, MandateError) and not isinstance(duplicate, MandateRefusal)
    assert (duplicate.status, duplicate.code) == (0, "duplicate_member")
    huge = check_args_offline(UNRULED, attempt("pay", "bank:acct", {"amount_usd": 2**53 + 2}))
    assert huge is not None and huge.status == 0


def test_the_traps_not_and_not_equal_over_an_absent_field_refuse_offline() -> None:
    absent = check_args_offline(TRAPPED, attempt("send", "mail:outbox", {"to": ["ann@example.com"]}))
    assert absent is not None
    assert (absent.code, absent.problem.get("rule"), absent.problem.get("statement"), absent.problem.get("truth")) == (
        "args_not_permitted",
        0,
        0,
        "undefined",
    )
    cc_absent = check_args_offline(TRAPPED, attempt("send", "mail:outbox", {"bcc": "ann@example.com"}))
    assert cc_absent is not None
    assert (cc_absent.code, cc_absent.problem.get("statement"), cc_absent.problem.get("truth")) == (
        "args_not_permitted",
        1,
        "undefined",
    )
    named = {"bcc": "ann@example.com", "cc": "raj@example.com"}
    assert check_args_offline(TRAPPED, attempt("send", "mail:outbox", named)) is None
    forbidden = check_args_offline(TRAPPED, attempt("send", "mail:outbox", {**named, "bcc": "archive@evil.com"}))
    assert forbidden is not None and (forbidden.code, forbidden.problem.get("truth")) == ("args_not_permitted", "false")


def must_not_run(_: object) -> str:
    raise AssertionError("must not run")


def test_act_sends_permitted_args_and_refused_args_send_nothing_and_run_nothing() -> None:
    recorder = Recorder()
    with Mandate(BASE, http=recorder.sync()) as client:
        assert client.act(RULED, "send", "mail:outbox", INSIDERS, lambda _: "sent") == "sent"
        assert recorder.paths() == [("/v1/vat/authorize", INSIDERS), ("/v1/vat/aar/aar_1/complete", None)]
        recorder.sent.clear()
        with pytest.raises(MandateRefusal) as refused:
            client.act(RULED, "send", "mail:outbox", OUTSIDER, must_not_run)
        assert (refused.value.reason, refused.value.status, refused.value.aar_id) == ("args_not_permitted", 0, None)
        with pytest.raises(MandateRefusal) as missing:
            client.act(RULED, "pay", "bank:acct", None, must_not_run, spend_usd=5)
        assert (missing.value.reason, missing.value.problem["rule"]) == ("args_required", 1)
        with pytest.raises(MandateRefusal) as trap:
            client.as_agent(TRAPPED).act("send", "mail:outbox", {"to": ["a@example.com"]}, must_not_run)
        assert trap.value.reason == "args_not_permitted"
    assert recorder.sent == [], "nothing reached Mandate"


def test_async_act_refuses_offline_too() -> None:
    async def scenario() -> None:
        recorder = Recorder()

        async def never(_: object) -> str:
            raise AssertionError("must not run")

        async with AsyncMandate(BASE, http=recorder.asynchronous()) as client:
            with pytest.raises(MandateRefusal) as refused:
                await client.act(RULED, "send", "mail:outbox", OUTSIDER, never)
            assert (refused.value.reason, refused.value.status) == ("args_not_permitted", 0)
            with pytest.raises(MandateRefusal):
                await client.as_agent(RULED).act("pay", "bank:acct", None, never)
        assert recorder.sent == []

    asyncio.run(scenario())


# Per adapter: refused args never run the tool and Mandate gets no request; permitted args are sent.


def test_langchain_refused_args_never_run_and_send_nothing() -> None:
    recorder = Recorder()
    ran: list[dict[str, Any]] = []

    @tool
    def send_mail(to: list[str]) -> str:
        """Send a mail."""
        ran.append({"to": to})
        return "sent"

    model = script(call("send_mail", "c1", to=OUTSIDER["to"]), call("send_mail", "c2", to=INSIDERS["to"]), "done")
    with Mandate(BASE, http=recorder.sync()) as client:
        middleware = MandateMiddleware(client, token=RULED, tools={"send_mail": ToolGrant("send", "mail:outbox")})
        agent = create_agent(model, [send_mail], middleware=[middleware])
        result = agent.invoke({"messages": [HumanMessage("mail")]})
    refused, sent = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert (refused.status, refused.artifact) == ("error", {"mandate_error": "args_not_permitted"})
    assert sent.content == "sent" and ran == [{"to": INSIDERS["to"]}]
    assert recorder.paths() == [("/v1/vat/authorize", {"to": INSIDERS["to"]}), ("/v1/vat/aar/aar_1/complete", None)]


def test_openai_agents_refused_args_never_run_and_send_nothing() -> None:
    async def scenario() -> None:
        recorder = Recorder()
        ran: list[dict[str, Any]] = []
        ended: list[AgentsCall] = []

        def send_mail(to: list[str]) -> str:
            """Send a mail."""
            ran.append({"to": to})
            return "sent"

        async with AsyncMandate(BASE, http=recorder.asynchronous()) as client:
            mandate = MandateAgents(client, RULED, on_call_end=ended.append)
            tool = mandate.function_tool(send_mail, action="send", resource="mail:outbox")
            model = ScriptedModel(
                [
                    [function_call("send_mail", {"to": OUTSIDER["to"]}, call_id="c1")],
                    [function_call("send_mail", {"to": INSIDERS["to"]}, call_id="c2")],
                    [assistant_message("done")],
                ]
            )
            await Runner.run(OpenAIAgent(name="mailer", model=model, tools=[tool]), "mail")
        assert ran == [{"to": INSIDERS["to"]}]
        assert [(c.state, c.reason, c.aar_id) for c in ended] == [
            ("refused", "args_not_permitted", None),
            ("completed", None, "aar_1"),
        ]
        assert recorder.paths() == [("/v1/vat/authorize", {"to": INSIDERS["to"]}), ("/v1/vat/aar/aar_1/complete", None)]

    asyncio.run(scenario())


def test_pydantic_ai_refused_args_never_run_and_send_nothing() -> None:
    async def scenario() -> None:
        recorder = Recorder()
        ran: list[dict[str, Any]] = []
        ended: list[PydanticCall] = []
        turns = [
            ModelResponse(parts=[ToolCallPart("send_mail", {"to": OUTSIDER["to"]}, tool_call_id="c1")]),
            ModelResponse(parts=[ToolCallPart("send_mail", {"to": INSIDERS["to"]}, tool_call_id="c2")]),
            ModelResponse(parts=[TextPart("done")]),
        ]

        def model(messages: list[ModelMessage], _: AgentInfo) -> ModelResponse:
            return turns.pop(0)

        async with AsyncMandate(BASE, http=recorder.asynchronous()) as client:
            capability = MandateCapability(
                client, RULED, tools={"send_mail": ToolPolicy("send", "mail:outbox")}, on_call_end=ended.append
            )
            agent: PydanticAgent[None, str] = PydanticAgent(FunctionModel(model), capabilities=[capability])

            @agent.tool_plain
            def send_mail(to: list[str]) -> str:
                """Send a mail."""
                ran.append({"to": to})
                return "sent"

            await agent.run("mail")
        assert ran == [{"to": INSIDERS["to"]}]
        assert [(c.state, c.reason, c.aar_id) for c in ended] == [
            ("refused", "args_not_permitted", None),
            ("completed", None, "aar_1"),
        ]
        assert recorder.paths() == [("/v1/vat/authorize", {"to": INSIDERS["to"]}), ("/v1/vat/aar/aar_1/complete", None)]

    asyncio.run(scenario())
