"""What ``act`` shares between the sync and async clients."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio

from mandate.client._models import ApprovalRef, AuthorizeResponse, CompleteRequest, Outcome
from mandate.client.approvals import approval_url
from mandate.client.records import Attempt
from mandate.errors import MandateApprovalPending, MandateRefusal

T = TypeVar("T")


def sha256_ref(data: str | bytes) -> str:
    """``sha256:<hex>`` of ``data`` (text as UTF-8), as mandate-core writes a result hash."""
    raw = data.encode() if isinstance(data, str) else data
    return f"sha256:{hashlib.sha256(raw).hexdigest()}"


def output_hash(output: object) -> str | None:
    """The ``result_hash`` ``act`` gives an output by default.

    Text and bytes are hashed as they are; anything else as its compact
    JSON (as JavaScript's ``JSON.stringify`` writes it, so the npm package
    gives the same output the same hash); None, or an output JSON cannot
    hold, has none.
    """
    if output is None:
        return None
    if isinstance(output, str | bytes):
        return sha256_ref(output)
    try:
        text = json.dumps(output, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return None
    return sha256_ref(text)


@dataclass(frozen=True)
class ActContext:
    """What the function ``act`` runs is told: the record it acts under."""

    aar_id: str
    provenance_ref: str
    authorization: AuthorizeResponse


@dataclass(frozen=True)
class PendingApproval:
    """The approval an action waits for, with the reviewer's page."""

    approval_id: str
    aar_id: str
    url: str
    expires_at: str


def attempt(action: str, resource: str, args: dict[str, Any] | None, spend_usd: float | None) -> Attempt:
    request: Attempt = {"action": action, "resource": resource}
    if args is not None:
        request["args"] = args
    if spend_usd is not None:
        request["spend_usd"] = spend_usd
    return request


def pending_of(base_url: str, answer: AuthorizeResponse) -> tuple[ApprovalRef, PendingApproval] | None:
    """The approval ``answer`` waits for, if any."""
    ref = answer.get("approval")
    if answer["authorized"] or ref is None or ref["status"] != "pending":
        return None
    url = approval_url(base_url, ref["approval_id"])
    return ref, PendingApproval(ref["approval_id"], answer["aar_id"], url, ref["expires_at"])


def still_pending(pending: PendingApproval) -> MandateApprovalPending:
    return MandateApprovalPending(
        approval_id=pending.approval_id, aar_id=pending.aar_id, url=pending.url, expires_at=pending.expires_at
    )


def refusal(answer: AuthorizeResponse, action: str, resource: str) -> MandateRefusal:
    reason = answer.get("reason") or "action_not_permitted"
    return MandateRefusal(
        reason,
        aar_id=answer.get("aar_id"),
        reason_detail=answer.get("reason_detail"),
        message=f"{action} on {resource} was refused: {reason}",
    )


def completion(output: object, result_hash: Callable[[Any], str | None] | None) -> CompleteRequest:
    body: CompleteRequest = {"result": "success"}
    digest = (result_hash or output_hash)(output)
    if digest is not None:
        body["result_hash"] = digest
    return body


def failed(error: BaseException) -> CompleteRequest:
    """How a run that raised ``error`` ended: cancelled, or an error."""
    outcome: Outcome = "cancelled" if isinstance(error, asyncio.CancelledError | KeyboardInterrupt) else "error"
    return {"result": outcome}


async def shielded(work: Coroutine[Any, Any, T]) -> T:
    """``work`` awaited to its end even when the awaiting task is cancelled meanwhile, once or again.

    A completion is what a cancelled run still owes its record, so it is
    shielded both from an anyio cancel scope (the MCP SDK cancels a
    request's scope, which would cancel every await in it) and from a task
    cancelled natively, even more than once (openai-agents cancels a tool's
    task again while draining it). Its own timeout bounds it: the client's.
    A cancellation that came meanwhile is raised once ``work`` ended.
    """
    task = asyncio.ensure_future(work)
    cancelled: asyncio.CancelledError | None = None
    with anyio.CancelScope(shield=True):
        while not task.done():
            try:
                await asyncio.shield(task)
            except asyncio.CancelledError as error:
                if task.cancelled():
                    raise
                cancelled = error
    result = task.result()
    if cancelled is not None:
        raise cancelled
    return result
