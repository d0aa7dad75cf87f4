"""Mandate for LangChain 1.x agents (``create_agent``) and LangGraph.

:class:`MandateMiddleware` is an ``AgentMiddleware`` whose ``wrap_tool_call``
(and ``awrap_tool_call``) runs every tool call as one Mandate action:
``authorize`` with the tool's arguments as ``args``, then the tool, then
``complete`` with the hash of the tool message's content (``error`` when the
tool raised or answered an error message).

- Refused (out of scope, over budget, arguments not permitted, revoked, an
  approval denied or expired) or Mandate not answering: the tool does not
  run; the model gets a ``ToolMessage`` with ``status="error"`` naming the
  reason, and its ``artifact`` carries the code (``mandate_error``) and the
  denied record (``aar_id``). Arguments the token's own rules refuse
  (:func:`mandate.client.check_args_offline`: ``args_required``,
  ``args_not_permitted``, arguments Mandate would not take) are refused
  before anything is sent: the artifact has the code and no record.
- Needing a human's approval: the call stops with a LangGraph ``interrupt``
  whose value is :class:`ApprovalInterrupt`'s dict (the reviewer's page,
  the approval, the record, the tool, its arguments). The graph needs a
  checkpointer. Resume with ``Command(resume=...)`` once the reviewer
  decided: the middleware asks Mandate for the decision (the resume value
  is not trusted as one) and runs the tool only if it was approved, under
  the record the approval was granted for; denied or expired, the model
  gets the error message; still pending, the call interrupts again with the
  same value.

An authorization is bound to the tool call as the model made it: its id,
the thread, the tool, the action, resource, spend and arguments name the
``Idempotency-Key`` of ``authorize``, so the node's re-run after a resume
gets the first answer (the same record and approval) instead of a new
request, and a call whose arguments changed is another request with its own
record and approval.

A tool without a :class:`ToolGrant` never runs (``tool_not_gated``): every
permission comes from the Mandate server.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, TypedDict

from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import ToolCallRequest
from langchain_core.messages import ToolMessage
from langgraph.config import get_config
from langgraph.types import Command, interrupt

from mandate.client import AsyncMandate, Mandate, ProofKey, check_args_offline, output_hash
from mandate.client._act import shielded
from mandate.client._models import ApprovalBody, AuthorizeResponse, CompleteRequest
from mandate.client.records import Attempt
from mandate.errors import MandateError

__all__ = ["ApprovalInterrupt", "MandateMiddleware", "ToolGrant", "idempotency_key", "message_hash"]

Args: TypeAlias = dict[str, Any]
ToolResult: TypeAlias = ToolMessage | Command[Any]


@dataclass(frozen=True)
class ToolGrant:
    """What one tool's calls ask Mandate for: the action, the resource and the spend, fixed or from the arguments."""

    action: str | Callable[[Args], str]
    resource: str | Callable[[Args], str]
    spend_usd: float | Callable[[Args], float | None] | None = None


class ApprovalInterrupt(TypedDict):
    """The value of the ``interrupt`` a call needing approval stops with."""

    type: Literal["mandate_approval"]
    #: The reviewer's page in the dashboard.
    url: str
    approval_id: str
    aar_id: str
    expires_at: str
    tool: str
    tool_call_id: str
    action: str
    resource: str
    args: Args


@dataclass(frozen=True)
class _Call:
    """One tool call as Mandate sees it."""

    name: str
    call_id: str
    args: Args
    attempt: Attempt
    key: str


TokenSource: TypeAlias = str | Callable[[ToolCallRequest], str]


def message_hash(message: ToolMessage) -> str | None:
    """The ``result_hash`` recorded for a tool message: its content as ``act`` hashes an output."""
    return output_hash(message.content)


def idempotency_key(thread_id: str, call_id: str, name: str, attempt: Attempt) -> str:
    """The ``Idempotency-Key`` of the call's ``authorize``: one per thread, call, tool and request."""
    body = json.dumps([thread_id, call_id, name, attempt], separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return f"langchain-{hashlib.sha256(body.encode()).hexdigest()}"


def _value(value: Any, args: Args) -> Any:
    return value(args) if callable(value) else value


def _thread_id() -> str:
    """The run's thread (its checkpoint's id), empty outside one."""
    try:
        config = get_config()
    except RuntimeError:
        return ""
    thread = (config.get("configurable") or {}).get("thread_id")
    return "" if thread is None else str(thread)


def _error(call: _Call, text: str, code: str, aar_id: str | None = None) -> ToolMessage:
    artifact: dict[str, str] = {"mandate_error": code}
    if aar_id is not None:
        artifact["aar_id"] = aar_id
    return ToolMessage(content=text, tool_call_id=call.call_id, name=call.name, status="error", artifact=artifact)


def _failed(result: ToolResult) -> bool:
    return isinstance(result, ToolMessage) and result.status == "error"


def _completion(result: ToolResult) -> CompleteRequest:
    if _failed(result):
        return {"result": "error"}
    body: CompleteRequest = {"result": "success"}
    digest = message_hash(result) if isinstance(result, ToolMessage) else None
    if digest is not None:
        body["result_hash"] = digest
    return body


def _refused(call: _Call, answer: AuthorizeResponse) -> ToolMessage:
    reason = answer.get("reason") or "action_not_permitted"
    detail = answer.get("reason_detail")
    text = f"Refused by Mandate: {reason} ({call.attempt['action']} on {call.attempt['resource']})."
    if detail:
        text = f"{text} {detail}"
    return _error(call, text, reason, answer.get("aar_id"))


def _refused_offline(call: _Call, error: MandateError) -> ToolMessage:
    """Refused by the token's own argument rules before anything was sent: no record was made."""
    return _error(call, f"Refused by Mandate's rules for this token: {error.code}: {error.message}", error.code)


def _unauthorized(call: _Call, error: MandateError) -> ToolMessage:
    return _error(call, f"Not run: Mandate could not authorize the call: {error.message}", error.code)


def _unrecorded(call: _Call, aar_id: str, error: MandateError) -> ToolMessage:
    """The tool ran, and completing its record failed: the record stays ``pending`` for a reviewer to see."""
    return _error(call, f"The tool ran, but Mandate could not record how it ended: {error.message}", error.code, aar_id)


def _undecided(call: _Call, approval: ApprovalBody) -> ToolMessage:
    status = approval["status"]
    code = {"denied": "approval_denied", "expired": "approval_expired"}.get(status, "approval_pending")
    return _error(call, f"Not run: the approval is {status}.", code, approval.get("aar_id"))


class MandateMiddleware(AgentMiddleware):
    """Records every tool call of a ``create_agent`` agent in Mandate and asks for approvals with ``interrupt``.

    ``client`` is a :class:`~mandate.Mandate` for ``invoke``/``stream``, or an
    :class:`~mandate.AsyncMandate` for ``ainvoke``/``astream`` (a sync client
    also serves async runs, its calls made in a worker thread). ``token`` is
    the agent's token, or a function of the tool call request giving it (say
    from ``request.runtime.context``); ``key`` signs its proofs when it is
    bound. ``tools`` maps each tool's name to its :class:`ToolGrant`.
    ``approval_wait_seconds`` (0 to 30) is how long a resumed call waits for
    a decision not taken yet.
    """

    def __init__(
        self,
        client: Mandate | AsyncMandate,
        *,
        token: TokenSource,
        tools: Mapping[str, ToolGrant],
        key: ProofKey | None = None,
        approval_wait_seconds: int = 0,
    ) -> None:
        super().__init__()
        if not 0 <= approval_wait_seconds <= 30:
            raise MandateError("approval_wait_seconds must be between 0 and 30", code="invalid_options")
        self.client = client
        self.token = token
        self.grants = dict(tools)
        self.key = key
        self.approval_wait_seconds = approval_wait_seconds

    def _token(self, request: ToolCallRequest) -> str:
        return self.token(request) if callable(self.token) else self.token

    def _call(self, request: ToolCallRequest, grant: ToolGrant) -> _Call:
        tool_call = request.tool_call
        args: Args = dict(tool_call["args"])
        attempt: Attempt = {
            "action": _value(grant.action, args),
            "resource": _value(grant.resource, args),
            "args": args,
        }
        spend = _value(grant.spend_usd, args)
        if spend is not None:
            attempt["spend_usd"] = spend
        call_id = tool_call.get("id") or ""
        name = tool_call["name"]
        return _Call(name, call_id, args, attempt, idempotency_key(_thread_id(), call_id, name, attempt))

    def _ungated(self, request: ToolCallRequest) -> ToolMessage | None:
        name = request.tool_call["name"]
        if name in self.grants:
            return None
        call = _Call(name, request.tool_call.get("id") or "", {}, {"action": "", "resource": ""}, "")
        return _error(call, f"Not run: the tool {name} has no Mandate grant in this agent.", "tool_not_gated")

    def _interrupt(self, call: _Call, answer: AuthorizeResponse, approval_id: str, expires_at: str) -> None:
        """Stops the graph for the reviewer; returns once the graph is resumed."""
        value = ApprovalInterrupt(
            type="mandate_approval",
            url=self.client.approvals.url(approval_id),
            approval_id=approval_id,
            aar_id=answer["aar_id"],
            expires_at=expires_at,
            tool=call.name,
            tool_call_id=call.call_id,
            action=call.attempt["action"],
            resource=call.attempt["resource"],
            args=call.args,
        )
        interrupt(dict(value))

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolResult],
    ) -> ToolResult:
        """Runs the tool call as authorize → tool → complete (sync agents)."""
        client = self.client
        if not isinstance(client, Mandate):
            raise TypeError("a sync agent run needs a sync Mandate client; use ainvoke with AsyncMandate")
        ungated = self._ungated(request)
        if ungated is not None:
            return ungated
        call = self._call(request, self.grants[request.tool_call["name"]])
        token = self._token(request)
        offline = check_args_offline(token, call.attempt)
        if offline is not None:
            return _refused_offline(call, offline)
        try:
            answer = client.records.authorize(call.attempt, token=token, key=self.key, idempotency_key=call.key)
            ref = answer.get("approval")
            if not answer["authorized"] and ref is not None and ref["status"] == "pending":
                while True:
                    self._interrupt(call, answer, ref["approval_id"], ref["expires_at"])
                    approval = client.approvals.get(
                        ref["approval_id"], wait=self.approval_wait_seconds or None, token=token, key=self.key
                    )
                    if approval["status"] != "pending":
                        break
                if approval["status"] != "approved":
                    return _undecided(call, approval)
            elif not answer["authorized"]:
                return _refused(call, answer)
        except MandateError as error:
            return _unauthorized(call, error)
        try:
            result = handler(request)
        except BaseException as error:
            outcome: CompleteRequest = {"result": "cancelled" if isinstance(error, KeyboardInterrupt) else "error"}
            client.records.complete(answer["aar_id"], outcome, token=token, key=self.key)
            raise
        try:
            client.records.complete(answer["aar_id"], _completion(result), token=token, key=self.key)
        except MandateError as error:
            return _unrecorded(call, answer["aar_id"], error)
        return result

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolResult]],
    ) -> ToolResult:
        """Runs the tool call as authorize → tool → complete (async agents)."""
        ungated = self._ungated(request)
        if ungated is not None:
            return ungated
        call = self._call(request, self.grants[request.tool_call["name"]])
        token = self._token(request)
        offline = check_args_offline(token, call.attempt)
        if offline is not None:
            return _refused_offline(call, offline)
        mandate = _Async(self.client, token, self.key)
        try:
            answer = await mandate.authorize(call)
            ref = answer.get("approval")
            if not answer["authorized"] and ref is not None and ref["status"] == "pending":
                while True:
                    self._interrupt(call, answer, ref["approval_id"], ref["expires_at"])
                    approval = await mandate.approval(ref["approval_id"], self.approval_wait_seconds)
                    if approval["status"] != "pending":
                        break
                if approval["status"] != "approved":
                    return _undecided(call, approval)
            elif not answer["authorized"]:
                return _refused(call, answer)
        except MandateError as error:
            return _unauthorized(call, error)
        try:
            result = await handler(request)
        except BaseException as error:
            cancelled = isinstance(error, asyncio.CancelledError | KeyboardInterrupt)
            await mandate.complete(answer["aar_id"], {"result": "cancelled" if cancelled else "error"})
            raise
        try:
            await mandate.complete(answer["aar_id"], _completion(result))
        except MandateError as error:
            return _unrecorded(call, answer["aar_id"], error)
        return result


@dataclass(frozen=True)
class _Async:
    """Mandate's three calls for an async run, with either client."""

    client: Mandate | AsyncMandate
    token: str
    key: ProofKey | None

    async def authorize(self, call: _Call) -> AuthorizeResponse:
        client = self.client
        if isinstance(client, AsyncMandate):
            return await client.records.authorize(
                call.attempt, token=self.token, key=self.key, idempotency_key=call.key
            )
        return await asyncio.to_thread(
            client.records.authorize, call.attempt, token=self.token, key=self.key, idempotency_key=call.key
        )

    async def approval(self, approval_id: str, wait: int) -> ApprovalBody:
        client = self.client
        if isinstance(client, AsyncMandate):
            return await client.approvals.get(approval_id, wait=wait or None, token=self.token, key=self.key)
        return await asyncio.to_thread(
            client.approvals.get, approval_id, wait=wait or None, token=self.token, key=self.key
        )

    async def complete(self, aar_id: str, body: CompleteRequest) -> None:
        client = self.client
        # Shielded: a run cancelled mid-tool still completes the record (``cancelled``), never leaves it open.
        if isinstance(client, AsyncMandate):
            await shielded(client.records.complete(aar_id, body, token=self.token, key=self.key))
        else:
            await shielded(asyncio.to_thread(client.records.complete, aar_id, body, token=self.token, key=self.key))
