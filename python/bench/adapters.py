"""Each adapter's own overhead per tool call, besides its two round trips to Mandate.

For each adapter, one round makes a tool call through the adapter (authorize
→ a tool that returns at once → complete) and, interleaved with it, the same
two requests bare through the same client (authorize with the same
``Idempotency-Key`` form where the adapter sends one, then complete). The
figure of a round is the wrapped call's time minus the bare pair's; the
report is the median, min and max over the rounds (200 by default), in ms.
On a busy machine the round trips' noise (tens of ms) swamps a difference
this small, so each adapter also reports ``own``: the wrapped call with the
client's two calls answered at once in process (no network), over the same
number of rounds — the adapter's own work alone.

    MANDATE_BIN=.../mandate python bench/adapters.py [--rounds N]

It starts ``mandate serve`` on 127.0.0.1, port 0, with a fresh data folder,
and prints ``{"rounds": N, "adapters": {"<adapter>": {"overhead": S, "own": S}, …}}``
where each ``S`` is ``{"median": …, "min": …, "max": …}`` in ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

from agents import Agent, ToolInputGuardrailData
from agents import function_tool as agents_function_tool
from agents.tool_context import ToolContext
from langchain.agents.middleware.types import ToolCallRequest
from langchain_core.messages import ToolMessage
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.tools import ToolDefinition

from mandate import AsyncMandate, Mandate
from mandate.client import Attempt
from mandate.langchain import MandateMiddleware, ToolGrant, idempotency_key
from mandate.mcp import ToolGrant as McpGrant
from mandate.mcp import mandate_tool
from mandate.openai_agents import MandateAgents
from mandate.openai_agents import ToolPolicy as AgentsPolicy
from mandate.pydantic_ai import MandateCapability
from mandate.pydantic_ai import ToolPolicy as PydanticPolicy

ARGS = {"account_id": "7", "note": "renewal"}
ANSWER: dict[str, Any] = {"authorized": True, "aar_id": "aar_bench", "provenance_ref": "prov_bench"}


class Answered:
    """A client's ``records`` whose two calls answer at once: the adapter's own work is all that is timed."""

    def authorize(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return ANSWER

    def complete(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return {}


class AsyncAnswered:
    async def authorize(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return ANSWER

    async def complete(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return {}


def own(rounds: int, wrapped: Callable[[int], object]) -> dict[str, float]:
    """The wrapped call alone (a warm-up of 10 first), its time per round."""
    for i in range(10):
        wrapped(-1 - i)
    times: list[float] = []
    for i in range(rounds):
        start = time.perf_counter()
        wrapped(i)
        times.append(time.perf_counter() - start)
    return summary(times)


def own_async(rounds: int, wrapped: Callable[[int], Awaitable[object]]) -> dict[str, float]:
    """``own`` for an adapter whose call is a coroutine."""

    async def run() -> dict[str, float]:
        for i in range(10):
            await wrapped(-1 - i)
        times: list[float] = []
        for i in range(rounds):
            start = time.perf_counter()
            await wrapped(i)
            times.append(time.perf_counter() - start)
        return summary(times)

    return asyncio.run(run())


ATTEMPT: Attempt = {"action": "read", "resource": "crm:accounts/7", "args": ARGS}


@contextmanager
def live_server() -> Iterator[tuple[str, str]]:
    """A fresh ``mandate serve``: its base URL and admin key."""
    binary = os.environ.get("MANDATE_BIN")
    if not binary:
        sys.exit("set MANDATE_BIN to the mandate server binary")
    with tempfile.TemporaryDirectory(prefix="mandate-bench-adapters-") as data:
        server = subprocess.Popen(
            [binary, "serve", "--listen", "127.0.0.1:0", "--data-dir", data],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            assert server.stdout is not None
            for line in server.stdout:
                found = re.search(r"listening on (http://\S+)", line)
                if found:
                    yield found.group(1), (Path(data) / "admin.key").read_text().strip()
                    return
            sys.exit(f"the server exited with {server.wait()} before listening")
        finally:
            server.terminate()
            server.wait(timeout=10)


def summary(seconds: list[float]) -> dict[str, float]:
    """Median, min and max, in ms."""
    return {
        "median": round(statistics.median(seconds) * 1000, 4),
        "min": round(min(seconds) * 1000, 4),
        "max": round(max(seconds) * 1000, 4),
    }


def paired(rounds: int, wrapped: Callable[[int], object], bare: Callable[[int], object]) -> dict[str, float]:
    """Interleaved rounds (a warm-up of 10 first): wrapped time minus bare time, per round."""
    for i in range(10):
        wrapped(-1 - i)
        bare(-1 - i)
    differences: list[float] = []
    for i in range(rounds):
        start = time.perf_counter()
        wrapped(i)
        middle = time.perf_counter()
        bare(i)
        differences.append((middle - start) - (time.perf_counter() - middle))
    return summary(differences)


def langchain_call(client: Mandate, token: str) -> Callable[[int], object]:
    middleware = MandateMiddleware(
        client, token=token, tools={"read_account": ToolGrant(action="read", resource="crm:accounts/7")}
    )

    def tool(request: ToolCallRequest) -> ToolMessage:
        return ToolMessage(content="account 7", tool_call_id=request.tool_call["id"] or "", name="read_account")

    def wrapped(i: int) -> object:
        request = ToolCallRequest(
            tool_call={"name": "read_account", "args": dict(ARGS), "id": f"lc-wrapped-{i}", "type": "tool_call"},
            tool=None,
            state={},
            runtime=cast(Any, None),
        )
        return middleware.wrap_tool_call(request, tool)

    return wrapped


def langchain(client: Mandate, token: str, rounds: int) -> dict[str, dict[str, float]]:
    def bare(i: int) -> object:
        key = idempotency_key("", f"lc-bare-{i}", "read_account", ATTEMPT)
        answer = client.records.authorize(ATTEMPT, token=token, idempotency_key=key)
        body: Any = {"result": "success", "result_hash": "sha256:" + "0" * 64}
        return client.records.complete(answer["aar_id"], body, token=token)

    overhead = paired(rounds, langchain_call(client, token), bare)
    with Mandate("http://127.0.0.1:9") as offline:
        offline.records = cast(Any, Answered())
        return {"overhead": overhead, "own": own(rounds, langchain_call(offline, token))}


def mcp(base_url: str, token: str, rounds: int) -> dict[str, dict[str, float]]:
    def gated(client: AsyncMandate) -> Callable[[int], Awaitable[object]]:
        @mandate_tool(client, McpGrant(action="read", resource=lambda a: f"crm:accounts/{a['account_id']}"))
        async def read_account(account_id: str, note: str) -> str:
            return f"account {account_id}"

        # A tool call's request context, as the server hands the tool one:
        # the gate reads the request's `_meta` (none here); the session is
        # used only to ask for an approval, which a permitted call never does.
        context: Context[Any] = Context(
            request_context=ServerRequestContext(
                session=cast(Any, None), lifespan_context={}, protocol_version="2026-07-28", method="tools/call"
            )
        )

        async def wrapped(i: int) -> object:
            return ran(await read_account(**ARGS, mandate_context=context))

        return wrapped

    auth_context_var.set(AuthenticatedUser(AccessToken(token=token, client_id="bench", scopes=["read"])))
    client = AsyncMandate(base_url)

    async def bare(i: int) -> object:
        answer = await client.records.authorize(ATTEMPT, token=token)
        body: Any = {"result": "success", "result_hash": "sha256:" + "0" * 64}
        return await client.records.complete(answer["aar_id"], body, token=token)

    overhead = timed_rounds(rounds, gated(client), bare)
    offline = AsyncMandate("http://127.0.0.1:9")
    offline.records = cast(Any, AsyncAnswered())
    return {"overhead": overhead, "own": own_async(rounds, gated(offline))}


def timed_rounds(
    rounds: int, wrapped: Callable[[int], Awaitable[object]], bare: Callable[[int], Awaitable[object]]
) -> dict[str, float]:
    """Interleaved rounds (a warm-up of 10 first): wrapped time minus bare time, per round."""

    async def run() -> dict[str, float]:
        for i in range(10):
            await wrapped(-1 - i)
            await bare(-1 - i)
        differences: list[float] = []
        for i in range(rounds):
            start = time.perf_counter()
            await wrapped(i)
            middle = time.perf_counter()
            await bare(i)
            differences.append((middle - start) - (time.perf_counter() - middle))
        return summary(differences)

    return asyncio.run(run())


def ran(output: object) -> object:
    """The tool's output: a wrapped call measured is one that ran (not a refusal's message)."""
    if output != "account 7":
        raise RuntimeError(f"the wrapped call did not run: {output!r}")
    return output


def openai_agents_call(client: AsyncMandate, token: str) -> Callable[[int], Awaitable[object]]:
    """The runner's three hooks of one call (needs_approval, the input guardrail, the invoker) on a built tool."""
    gate = MandateAgents(client, token)

    def read_account(account_id: str, note: str) -> str:
        """Reads an account."""
        return f"account {account_id}"

    plain = agents_function_tool(read_account)
    tool = gate.with_mandate(plain, AgentsPolicy("read", lambda a: f"crm:accounts/{a['account_id']}"))
    needs_approval = cast(Callable[[Any, dict[str, Any], str], Awaitable[bool]], tool.needs_approval)
    [guardrail] = tool.tool_input_guardrails or []
    agent: Agent[Any] = Agent(name="bench")
    text = json.dumps(ARGS)

    def context(call_id: str) -> ToolContext[Any]:
        return ToolContext(context=None, tool_name="read_account", tool_call_id=call_id, tool_arguments=text)

    async def wrapped(i: int) -> object:
        call_id = f"oa-wrapped-{i}"
        await needs_approval(None, dict(ARGS), call_id)
        await guardrail.run(ToolInputGuardrailData(context=context(call_id), agent=agent))
        return ran(await tool.on_invoke_tool(context(call_id), text))

    return wrapped


def openai_agents(base_url: str, token: str, rounds: int) -> dict[str, dict[str, float]]:
    client = AsyncMandate(base_url)

    def read_account(account_id: str, note: str) -> str:
        """Reads an account."""
        return f"account {account_id}"

    plain = agents_function_tool(read_account)
    text = json.dumps(ARGS)

    async def bare(i: int) -> object:
        answer = await client.records.authorize(ATTEMPT, token=token, idempotency_key=f"openai-agents-bare-{i:064}")
        context = ToolContext(context=None, tool_name="read_account", tool_call_id=f"oa-bare-{i}", tool_arguments=text)
        output = await plain.on_invoke_tool(context, text)
        body: Any = {"result": "success", "result_hash": "sha256:" + "0" * 64}
        await client.records.complete(
            answer["aar_id"], body, token=token, idempotency_key=f"complete-{answer['aar_id']}"
        )
        return output

    overhead = timed_rounds(rounds, openai_agents_call(client, token), bare)
    offline = AsyncMandate("http://127.0.0.1:9")
    offline.records = cast(Any, AsyncAnswered())
    return {"overhead": overhead, "own": own_async(rounds, openai_agents_call(offline, token))}


async def account(args: dict[str, Any]) -> str:
    """The tool's handler: it returns at once."""
    return f"account {args['account_id']}"


def pydantic_ai_call(client: AsyncMandate, token: str) -> Callable[[int], Awaitable[object]]:
    """The capability's ``wrap_tool_execute`` of one call, with a handler that returns at once."""
    capability = MandateCapability(
        client, token, tools={"read_account": PydanticPolicy("read", lambda a: f"crm:accounts/{a['account_id']}")}
    )
    tool_def = ToolDefinition(name="read_account")
    # The capability reads only whether the run approved the call.
    ctx = cast(Any, SimpleNamespace(tool_call_approved=False))

    async def wrapped(i: int) -> object:
        call = ToolCallPart("read_account", dict(ARGS), tool_call_id=f"pa-wrapped-{i}")
        return ran(
            await capability.wrap_tool_execute(ctx, call=call, tool_def=tool_def, args=dict(ARGS), handler=account)
        )

    return wrapped


def pydantic_ai(base_url: str, token: str, rounds: int) -> dict[str, dict[str, float]]:
    client = AsyncMandate(base_url)

    async def bare(i: int) -> object:
        answer = await client.records.authorize(ATTEMPT, token=token, idempotency_key=f"pydantic-ai-bare-{i:064}")
        output = await account(dict(ARGS))
        body: Any = {"result": "success", "result_hash": "sha256:" + "0" * 64}
        await client.records.complete(
            answer["aar_id"], body, token=token, idempotency_key=f"complete-{answer['aar_id']}"
        )
        return output

    overhead = timed_rounds(rounds, pydantic_ai_call(client, token), bare)
    offline = AsyncMandate("http://127.0.0.1:9")
    offline.records = cast(Any, AsyncAnswered())
    return {"overhead": overhead, "own": own_async(rounds, pydantic_ai_call(offline, token))}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=200)
    rounds = parser.parse_args().rounds
    with live_server() as (base_url, api_key), Mandate(base_url, api_key=api_key) as admin:
        token = admin.tokens.issue_root(
            {
                "developer_email": "bench@example.com",
                "agent_id": "bench-adapters",
                "resources": ["crm:*"],
                "actions": ["read"],
            }
        )["compact_jwt"]
        with Mandate(base_url) as agents:
            adapters = {
                "langchain": langchain(agents, token, rounds),
                "mcp": mcp(base_url, token, rounds),
                "openai_agents": openai_agents(base_url, token, rounds),
                "pydantic_ai": pydantic_ai(base_url, token, rounds),
            }
    print(json.dumps({"rounds": rounds, "adapters": adapters}))


if __name__ == "__main__":
    main()
