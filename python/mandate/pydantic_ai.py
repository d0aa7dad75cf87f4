"""Mandate as a Pydantic AI capability (``pydantic-ai-slim``, extra ``pydantic-ai``).

:class:`MandateCapability` wraps every tool call of an agent
(``wrap_tool_execute``, the capability hook of Pydantic AI 2.68 around a
call's execution, after its arguments are validated): one Mandate record per
call, authorized before the tool runs, completed with the output's
``result_hash`` after it, or as ``error`` (``cancelled``) when it raises.

- A refused call never runs: the model reads ``Mandate refused <tool>:
  <reason>`` as the tool's output. Arguments the token's own rules refuse
  (:func:`mandate.client.check_args_offline`) are refused so before
  anything is sent: no record is made.
- A call that needs a human's approval in Mandate raises Pydantic AI's
  ``ApprovalRequired`` before the tool runs, with the reviewer's page in its
  metadata: the run ends with ``DeferredToolRequests`` (the agent's
  ``output_type`` must allow it). :meth:`MandateCapability.resolve_approvals`
  turns Mandate's decisions into the ``DeferredToolResults`` the run resumes
  with; the resumed call runs under the same record. A call approved in the
  run alone (``DeferredToolResults`` built by hand) still waits for Mandate: it
  does not run, and the model reads that it is not approved yet.
- A tool with no policy in ``tools`` (and no ``default``) is refused without
  asking Mandate: nothing runs that Mandate does not record.

The validated arguments are sent as the call's ``args``; the authorization is
bound to the call id, tool, action, resource, spend and the arguments' hash
(``mandate._tool_gate``): a call met again with other arguments (a history
edited before the run resumes) is asked anew and never runs under the first
call's approval. An error talking to Mandate is raised out of the run: the
tool does not run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic_ai import ApprovalRequired, DeferredToolRequests, DeferredToolResults, RunContext, ToolDenied
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.capabilities.abstract import ValidatedToolArgs, WrapToolExecuteHandler
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.tools import ToolDefinition
from pydantic_core import to_jsonable_python

from mandate._tool_gate import MandateToolCall, ToolGate, ToolPolicy, default_message
from mandate.client import AsyncMandate, PendingApproval, ProofKey
from mandate.errors import MandateError

__all__ = ["ApprovalResolution", "MandateCapability", "MandateToolCall", "ToolPolicy"]


@dataclass
class ApprovalResolution:
    """What :meth:`MandateCapability.resolve_approvals` made of a run's deferred approvals."""

    #: What the run resumes with: the decided calls (approved, or denied with the reason).
    results: DeferredToolResults
    #: Approved in Mandate: they run under their record when the run resumes.
    approved: list[MandateToolCall] = field(default_factory=list[MandateToolCall])
    #: Denied or expired in Mandate: the model reads why.
    rejected: list[MandateToolCall] = field(default_factory=list[MandateToolCall])
    #: Still pending in Mandate: not in ``results`` (resume later, or ask again).
    pending: list[MandateToolCall] = field(default_factory=list[MandateToolCall])
    #: Approvals that are not Mandate's (another tool's ``requires_approval``): left to the caller.
    other: list[ToolCallPart] = field(default_factory=list[ToolCallPart])


#: The key of Mandate's part of a deferred call's metadata.
METADATA_KEY = "mandate"


class MandateCapability(AbstractCapability[Any]):
    """Mandate for every tool call of an agent, as the agent holding ``token``.

    ``tools`` names each tool's policy; ``default`` is the policy of a tool
    not named (without it, such a tool is refused). With
    ``wait_for_approval`` (seconds, 1–30), a call awaiting a reviewer does
    not end the run: the capability's ``handle_deferred_tool_calls`` waits
    that long for Mandate's decision and the run goes on with it (a call
    still pending then ends the run with ``DeferredToolRequests``).

    ``key`` signs a DPoP proof per request for a token bound to it;
    ``traceparent`` is the W3C trace the records join. ``on_approval`` is
    called once when a call needs a human's approval (to show
    ``approval.url``); ``on_call_end`` when a call ends (completed, or
    refused: it did not run); ``refusal_message`` writes what the model
    reads in place of the output of a call that did not run.
    """

    def __init__(
        self,
        client: AsyncMandate,
        token: str,
        *,
        tools: Mapping[str, ToolPolicy],
        default: ToolPolicy | None = None,
        key: ProofKey | None = None,
        traceparent: str | None = None,
        refusal_message: Callable[[MandateToolCall], str] | None = None,
        on_approval: Callable[[PendingApproval, MandateToolCall], None] | None = None,
        on_call_end: Callable[[MandateToolCall], None] | None = None,
        wait_for_approval: int | None = None,
    ) -> None:
        if wait_for_approval is not None and not 1 <= wait_for_approval <= 30:
            raise MandateError("wait_for_approval is between 1 and 30 seconds", code="invalid_options")
        self._wait_for_approval = wait_for_approval
        self._gate = ToolGate(
            client,
            token,
            prefix="pydantic-ai",
            key=key,
            traceparent=traceparent,
            on_approval=on_approval,
            on_call_end=on_call_end,
        )
        self._tools = dict(tools)
        self._default = default
        self._message = refusal_message or default_message

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # Built with a client and a token: not from a spec.

    def _asked(self, call_id: str, tool: str, args: dict[str, Any]) -> tuple[MandateToolCall, ToolPolicy | None]:
        policy = self._tools.get(tool, self._default)
        if policy is None:
            refused = MandateToolCall(call_id, tool, "", "", None, "", state="refused", reason="tool_not_in_policy")
            return refused, None
        asked = self._gate.ask(
            call_id, tool, args, action=policy.action, resource=policy.resource, spend_usd=policy.spend_usd
        )
        return asked, policy

    async def wrap_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: ValidatedToolArgs,
        handler: WrapToolExecuteHandler,
    ) -> Any:
        # What was validated may hold what JSON cannot (dates, models): sent and bound as pydantic writes it.
        sent = cast(dict[str, Any], to_jsonable_python(args))
        asked, policy = self._asked(call.tool_call_id, tool_def.name, sent)
        if policy is None:
            return self._message(asked)
        mandate = await self._gate.authorize(asked, sent)
        if mandate.state == "awaiting_approval" and mandate.approval is not None:
            if ctx.tool_call_approved:
                return self._message(mandate)  # Approved in the run, not in Mandate: it does not run.
            approval = mandate.approval
            raise ApprovalRequired(
                metadata={
                    METADATA_KEY: {
                        "aar_id": approval.aar_id,
                        "approval_id": approval.approval_id,
                        "url": approval.url,
                        "expires_at": approval.expires_at,
                    }
                }
            )
        if mandate.state != "authorized":
            return self._message(mandate)
        self._gate.start(mandate)
        try:
            output = await handler(args)
        except BaseException as error:
            await self._gate.complete(mandate, error=error)
            raise
        await self._gate.complete(mandate, output=output, result_hash=policy.result_hash)
        return output

    async def handle_deferred_tool_calls(
        self, ctx: RunContext[Any], *, requests: DeferredToolRequests
    ) -> DeferredToolResults | None:
        if self._wait_for_approval is None:
            return None
        resolution = await self.resolve_approvals(requests, wait_seconds=self._wait_for_approval)
        return resolution.results if resolution.results.approvals else None

    async def resolve_approvals(self, requests: DeferredToolRequests, *, wait_seconds: int = 0) -> ApprovalResolution:
        """Mandate's decisions on the run's deferred approvals, as the ``DeferredToolResults`` it resumes with.

        Each of Mandate's approvals (named in the call's metadata) is read once,
        waiting up to ``wait_seconds`` (0–30) for its decision. The decision is
        only what the run resumes with: a resumed call runs only if its own
        arguments, as validated then, are the ones Mandate approved.
        """
        if not 0 <= wait_seconds <= 30:
            raise MandateError("wait_seconds is between 0 and 30", code="invalid_options")
        resolution = ApprovalResolution(results=DeferredToolResults())
        for part in requests.approvals:
            found = requests.metadata.get(part.tool_call_id, {}).get(METADATA_KEY)
            if not isinstance(found, dict):
                resolution.other.append(part)
                continue
            ref = cast(dict[str, str], found)
            # The call as it was asked (for the report): its record and approval from the metadata.
            mandate, _ = self._asked(part.tool_call_id, part.tool_name, part.args_as_dict())
            mandate.aar_id = ref["aar_id"]
            mandate.state = "awaiting_approval"
            mandate.approval = PendingApproval(ref["approval_id"], ref["aar_id"], ref["url"], ref["expires_at"])
            state = self._gate.decided(mandate, await self._gate.decision(ref["approval_id"], wait_seconds))
            if state == "authorized":
                resolution.results.approvals[part.tool_call_id] = True
                resolution.approved.append(mandate)
            elif state == "refused":
                resolution.results.approvals[part.tool_call_id] = ToolDenied(self._message(mandate))
                resolution.rejected.append(mandate)
            else:
                resolution.pending.append(mandate)
        return resolution
