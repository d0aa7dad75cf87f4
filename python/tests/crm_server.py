"""The TypeScript example's CRM server (examples/mcp-crm/server.mjs) in Python: the same two tools, gated by
mandate.mcp.

Run by test_mcp_ts_agent.py, which points the example's TypeScript agent at it.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import mcp_types as types
import uvicorn
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette

from mandate import AsyncMandate
from mandate.mcp import MandateTokenVerifier, TokenChecker, ToolGrant, mandate_tool

CONTACTS = {
    "c-1001": {
        "id": "c-1001",
        "name": "Ada Lovelace",
        "email": "ada@example.com",
        "company": "Analytical Engines Ltd",
        "stage": "renewal due",
    }
}


@dataclass
class Outbox:
    sent: list[dict[str, str]] = field(default_factory=list)


def crm_server(client: AsyncMandate, checker: TokenChecker, url: str, outbox: Outbox) -> MCPServer:
    server = MCPServer(
        "crm",
        token_verifier=MandateTokenVerifier(checker, resource=url),
        # Validated by the model, the issuer keeps its empty path: `AnyHttpUrl(base_url)` alone is
        # "http://host:port/", which the metadata would name and the SDK's OAuth client compares as a
        # string with Mandate's issuer ("http://host:port"), refusing the mismatch.
        auth=AuthSettings.model_validate(
            {"issuer_url": client.base_url, "resource_server_url": url, "validate_token_resource": False}
        ),
    )

    def text(value: str, error: bool = False) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=value)], is_error=error)

    @server.tool()
    @mandate_tool(client, ToolGrant(action="read", resource=lambda a: f"crm:contact/{a['contact_id']}"))
    async def crm_lookup(contact_id: str) -> types.CallToolResult:
        """Reads one contact of the CRM by its id (c-1001, …)."""
        contact = CONTACTS.get(contact_id)
        if contact is None:
            return text(f"No contact {contact_id}.", error=True)
        return text(json.dumps(contact, separators=(",", ":")))

    @server.tool()
    @mandate_tool(client, ToolGrant(action="send", resource="mail:outbox"), approval_timeout_seconds=300)
    async def send_email(to: str, subject: str, body: str) -> types.CallToolResult:
        """Sends an e-mail from the outbox."""
        outbox.sent.append({"to": to, "subject": subject, "body": body})
        return text(f"Sent msg-{len(outbox.sent)} to {to}.")

    return server


@contextmanager
def serving(app_for: Callable[[str], Starlette]) -> Iterator[str]:
    """``app_for(url)`` served on 127.0.0.1, port 0, in a thread; yields its MCP endpoint's URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    server = uvicorn.Server(uvicorn.Config(app_for(url), log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "the MCP server did not start"
        time.sleep(0.02)
    try:
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
