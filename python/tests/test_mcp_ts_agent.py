"""The TypeScript example's agent (examples/mcp-crm/agent.mjs, the MCP TypeScript SDK's client) against a Python MCP
server gated by mandate.mcp: the same tools as the example's server, the same outcomes.

Needs Node, the npm package built into wasm/pkg (``cargo xtask wasm``) and the example's dependencies, which this
test installs from its lockfile (``npm ci``) when they are missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import LiveServer
from crm_server import Outbox, crm_server, serving

import mandate
from mandate import AsyncMandate, Mandate

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "mcp-crm"

DRIVER = """
const { runAgent } = await import(process.env.AGENT_MODULE);
const run = await runAgent({
  mandateUrl: process.env.MANDATE_URL,
  apiKey: process.env.MANDATE_API_KEY,
  mcpUrl: process.env.MCP_URL,
  autoApprove: true,
  log: (line) => console.error(line),
});
console.log(JSON.stringify(run));
"""


def example_ready() -> None:
    if shutil.which("node") is None:
        pytest.fail("node is needed to run the TypeScript agent")
    if not (ROOT / "wasm" / "pkg").is_dir():
        pytest.fail("build the npm package first: cargo xtask wasm")
    if not (EXAMPLE / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir():
        subprocess.run(["npm", "ci", "--prefer-offline", "--no-audit", "--no-fund"], cwd=EXAMPLE, check=True)


def test_the_typescript_agent_against_a_python_server(live_server: LiveServer) -> None:
    example_ready()
    outbox = Outbox()
    with Mandate(live_server.base_url, api_key=live_server.api_key) as admin:
        verifier = mandate.Verifier(admin.tokens.jwks())
        agents = AsyncMandate(live_server.base_url)
        with serving(lambda url: crm_server(agents, verifier, url, outbox).streamable_http_app()) as url:
            env = {
                **os.environ,
                "AGENT_MODULE": (EXAMPLE / "agent.mjs").as_uri(),
                "MANDATE_URL": live_server.base_url,
                "MANDATE_API_KEY": live_server.api_key,
                "MCP_URL": url,
            }
            done = subprocess.run(
                ["node", "--input-type=module", "-e", DRIVER],
                cwd=EXAMPLE,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
        assert done.returncode == 0, done.stderr
        run = json.loads(done.stdout)
        assert run["sent"] is True, done.stderr
        assert run["outsideError"] == "args_not_permitted"
        assert outbox.sent[0]["to"] == "ada@example.com" and len(outbox.sent) == 1
        records = {r.get("aar_id"): r for r in admin.records.list(provenance_ref=run["provenanceRef"])}
        lookup, denied, send = records[run["lookupAarId"]], records[run["deniedAarId"]], records[run["sendAarId"]]
        assert (lookup["action"], lookup["resource"], lookup["status"]) == ("read", "crm:contact/c-1001", "completed")
        assert (denied["agent_id"], denied["status"], denied.get("deny_reason")) == (
            "crm-mailer",
            "denied",
            "action_not_permitted",
        )
        assert (send["status"], send.get("result"), (send.get("args") or {}).get("to")) == (
            "completed",
            "success",
            "ada@example.com",
        )
        assert run["approvalUrl"].startswith(f"{live_server.base_url}/#/approval/")
