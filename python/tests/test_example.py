"""examples/python-langgraph end to end, as its README runs it, against a live server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import LiveServer

from mandate import Mandate

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "python-langgraph" / "agent.py"


def start(live_server: LiveServer, *flags: str) -> subprocess.Popen[str]:
    env = {**os.environ, "MANDATE_URL": live_server.base_url, "MANDATE_API_KEY": live_server.api_key}
    return subprocess.Popen(
        [sys.executable, str(EXAMPLE), *flags], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def line(stdout: str, label: str) -> str:
    found = [text for text in stdout.splitlines() if text.startswith(f"{label} ")]
    assert found, stdout
    return found[-1][len(label) :].strip()


def test_the_assistant_its_approval_and_its_sub_agent_in_one_workflow(live_server: LiveServer) -> None:
    run = start(live_server, "--auto-approve")
    stdout, stderr = run.communicate(timeout=120)
    assert run.returncode == 0, stderr
    assert line(stdout, "update") == "Deal d-42 is now won."
    assert line(stdout, "mailer").endswith("send_mail to ada@example.com: Sent msg-1 to ada@example.com.")
    assert "update_deal: refused (action_not_permitted)" in stdout
    assert "send_mail to ada@example.com.attacker.test: refused (args_not_permitted)" in stdout
    provenance_ref = line(stdout, "workflow")
    with Mandate(live_server.base_url, api_key=live_server.api_key) as admin:
        records = list(admin.records.list(provenance_ref=provenance_ref))
        seen = sorted(
            (r["agent_id"], r["action"], r["resource"], r["status"], r.get("deny_reason") or "") for r in records
        )
        assert seen == [
            ("sales-assistant", "delegate", "agent:sales-mailer", "completed", ""),
            ("sales-assistant", "write", "crm:deals/d-42", "completed", ""),
            ("sales-mailer", "send", "mail:outbox", "completed", ""),
            # The mail to the attacker was refused offline by the token's own argument rules: no record.
            ("sales-mailer", "write", "crm:deals/d-42", "denied", "action_not_permitted"),
        ]
        sent = next(r for r in records if r["status"] == "completed" and r["action"] == "send")
        assert sent.get("args") == {"to": "ada@example.com", "subject": "Your deal"}
        assert line(stdout, "page") == admin.workflow_url(provenance_ref)


def test_a_reviewer_who_says_no_leaves_the_deal_as_it_was(live_server: LiveServer) -> None:
    run = start(live_server)
    assert run.stdout is not None
    asked = ""
    for text in run.stdout:
        if text.startswith("approval "):
            asked = text
            break
    found = re.search(r"/#/approval/(apr_\w+)", asked)
    assert found, asked
    with Mandate(live_server.base_url, api_key=live_server.api_key) as admin:
        admin.approvals.decide(found.group(1), {"decision": "deny", "note": "not yet"})
    rest, stderr = run.communicate(timeout=120)
    assert run.returncode == 1, stderr
    assert line(rest, "decided") == "denied"
    assert line(rest, "update") == "refused (approval_denied)"
    assert line(rest, "deals") == "{'d-42': 'negotiation'}"
