"""Mandate around the function tools of the OpenAI Agents SDK (``openai-agents``, extra ``openai-agents``).

Every call a model makes to a wrapped tool is one Mandate record: authorized
before the tool runs, completed with the output's ``result_hash`` after it
(or as ``error`` when it raises); a refused call never runs and the model is
told why; a call that needs a human's approval in Mandate interrupts the run,
and :meth:`MandateAgents.resolve_approvals` applies the reviewer's decision to
the run's :class:`~agents.RunState` so that it resumes under the same record.
The same behaviour and names as the npm package's ``mandate-sdk/openai-agents``.

How the SDK's hooks carry it (version 0.24):

- ``needs_approval(run_context, params, call_id)`` is the first code of ours
  the runner calls for a call, with the parsed arguments and the call id, and
  the only one that can interrupt the run. The call is authorized there; a
  pending Mandate approval answers True.
- A tool input guardrail (``tool_input_guardrails``) sees the call id and the
  arguments after any approval was given and before the tool starts; its
  ``reject_content`` keeps the tool from running and shows the model a
  message. It rejects a refused call, and a call whose Mandate approval was
  not given (approving it in the run's state alone does not run it).
- The tool's invoker completes the record: it is the one place that sees the
  output and the raised error first-hand. A tool built by ``function_tool``
  turns an error into a string for the model before anything else sees it,
  so :meth:`MandateAgents.function_tool` builds it with
  ``failure_error_function=None`` and formats the error itself, after the
  record is completed as ``error``.

The arguments (a JSON object) are sent as the call's ``args``, after they
are judged offline against the token's own argument rules
(:func:`mandate.client.check_args_offline`): a call they refuse is
``refused`` with that code, nothing is sent and no record is made. The
authorization is bound to the call id, tool, action, resource, spend and the
arguments' hash (``mandate._tool_gate``). An error talking to Mandate fails
the run: the tool does not run. A run cancelled mid-tool completes the
record ``cancelled``; the SDK may end the run before the tool's task has
ended, and the completion goes on while the event loop and the client live.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from agents import (
    FunctionTool,
    RunContextWrapper,
    RunState,
    ToolApprovalItem,
    ToolGuardrailFunctionOutput,
    ToolInputGuardrail,
    ToolInputGuardrailData,
    default_tool_error_function,
)
from agents import function_tool as agents_function_tool
from agents.tool import ToolErrorFunction, ToolFunction
from agents.tool_context import ToolContext

from mandate._tool_gate import FromArgs, MandateToolCall, ToolGate, ToolPolicy, default_message
from mandate.client import AsyncMandate, PendingApproval, ProofKey
from mandate.errors import MandateError

__all__ = ["ApprovalResolution", "MandateAgents", "MandateToolCall", "ToolPolicy"]


@dataclass
class ApprovalResolution:
    """What :meth:`MandateAgents.resolve_approvals` did with a run's interruptions."""

    #: Approved in Mandate: approved in the run's state, to run under their record.
    approved: list[MandateToolCall] = field(default_factory=list[MandateToolCall])
    #: Denied or expired in Mandate: rejected in the run's state; the model reads why.
    rejected: list[MandateToolCall] = field(default_factory=list[MandateToolCall])
    #: Still pending in Mandate: left as they are (resume later, or ask again).
    pending: list[MandateToolCall] = field(default_factory=list[MandateToolCall])
    #: Interruptions that are not Mandate's (another tool's ``needs_approval``): left to the caller.
    other: list[ToolApprovalItem] = field(default_factory=list[ToolApprovalItem])


def _arguments(text: str) -> dict[str, Any]:
    """A call's arguments (the model's JSON text) as an object."""
    try:
        parsed: object = json.loads(text or "{}")
    except json.JSONDecodeError:
        raise MandateError("the call's arguments are not JSON", code="invalid_arguments") from None
    if not isinstance(parsed, dict):
        raise MandateError("the call's arguments are not a JSON object", code="invalid_arguments")
    return cast(dict[str, Any], parsed)


def _raw_field(raw: object, name: str) -> str | None:
    """A field of an interruption's raw item (a model object or a plain mapping)."""
    value: object = cast(Mapping[str, object], raw).get(name) if isinstance(raw, Mapping) else getattr(raw, name, None)
    return value if isinstance(value, str) else None


class MandateAgents:
    """Mandate for the tools of the agent holding ``token``.

    ``with_mandate`` (or ``function_tool``) wraps a tool; ``resolve_approvals``
    applies Mandate's decisions to a run's interruptions.

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
        key: ProofKey | None = None,
        traceparent: str | None = None,
        refusal_message: Callable[[MandateToolCall], str] | None = None,
        on_approval: Callable[[PendingApproval, MandateToolCall], None] | None = None,
        on_call_end: Callable[[MandateToolCall], None] | None = None,
    ) -> None:
        self._gate = ToolGate(
            client,
            token,
            prefix="openai-agents",
            key=key,
            traceparent=traceparent,
            on_approval=on_approval,
            on_call_end=on_call_end,
        )
        self._message = refusal_message or default_message
        self._policies: dict[str, ToolPolicy] = {}

    def function_tool(
        self,
        func: ToolFunction[...],
        *,
        action: FromArgs[str],
        resource: FromArgs[str],
        spend_usd: FromArgs[float | None] = None,
        result_hash: Callable[[Any], str | None] | None = None,
        failure_error_function: ToolErrorFunction | None = default_tool_error_function,
        **options: Any,
    ) -> FunctionTool:
        """``agents.function_tool(func, **options)`` under Mandate.

        ``failure_error_function`` formats an error the tool raises for the
        model (after its record is completed as ``error``); None fails the run.
        """
        built = agents_function_tool(func, failure_error_function=None, **options)
        policy = ToolPolicy(action, resource, spend_usd, result_hash)
        return self.with_mandate(built, policy, failure_error_function=failure_error_function)

    def with_mandate(
        self,
        tool: FunctionTool,
        policy: ToolPolicy,
        *,
        failure_error_function: ToolErrorFunction | None = None,
    ) -> FunctionTool:
        """``tool`` under Mandate: a copy with Mandate's ``needs_approval``, input guardrail and invoker.

        An error ``tool`` raises completes its record as ``error``; then
        ``failure_error_function`` formats it for the model, or (None) it fails
        the run. A tool that turns its own errors into output (``function_tool``
        with its default ``failure_error_function``) is recorded as a success:
        build it with ``failure_error_function=None``, or use :meth:`function_tool`.
        Mandate's ``needs_approval`` replaces the tool's own; its input
        guardrails run after Mandate's.
        """
        if tool.name in self._policies:
            raise MandateError(f"the tool {tool.name} is under Mandate already", code="invalid_options")
        self._policies[tool.name] = policy
        name = tool.name
        inner = tool.on_invoke_tool
        gate = self._gate

        async def authorize(call_id: str, args: dict[str, Any]) -> MandateToolCall:
            asked = gate.ask(
                call_id, name, args, action=policy.action, resource=policy.resource, spend_usd=policy.spend_usd
            )
            return await gate.authorize(asked, args)

        async def needs_approval(_: RunContextWrapper[Any], params: dict[str, Any], call_id: str) -> bool:
            call = await authorize(call_id, params)
            return call.state == "awaiting_approval"

        async def guard(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
            context = data.context
            call = await authorize(context.tool_call_id, _arguments(context.tool_arguments))
            if call.state == "authorized":
                return ToolGuardrailFunctionOutput.allow(output_info=call)
            return ToolGuardrailFunctionOutput.reject_content(self._message(call), output_info=call)

        async def invoke(context: ToolContext[Any], text: str) -> Any:
            call = await authorize(context.tool_call_id, _arguments(text))
            if call.state != "authorized":
                return self._message(call)  # Never runs: the guardrail's answer, should it have been removed.
            gate.start(call)
            try:
                output = await inner(context, text)
            except Exception as error:
                await gate.complete(call, error=error)
                if failure_error_function is None:
                    raise
                message = failure_error_function(context, error)
                return await message if inspect.isawaitable(message) else message
            except BaseException as error:
                await gate.complete(call, error=error)
                raise
            await gate.complete(call, output=output, result_hash=policy.result_hash)
            return output

        guardrail: ToolInputGuardrail[Any] = ToolInputGuardrail(guardrail_function=guard, name="mandate")
        return dataclasses.replace(
            tool,
            on_invoke_tool=invoke,
            needs_approval=needs_approval,
            tool_input_guardrails=[guardrail, *(tool.tool_input_guardrails or [])],
        )

    async def resolve_approvals(self, state: RunState[Any, Any], *, wait_seconds: int = 0) -> ApprovalResolution:
        """Applies Mandate's decisions to the run's interruptions of wrapped tools.

        Each approval still pending is read once, waiting up to
        ``wait_seconds`` (0–30) for its decision: approved in Mandate, the
        call is approved in ``state`` and runs under its record when the run
        resumes; denied or expired, it is rejected with the reason as the
        model's message; still pending, it is left as it is.
        """
        if not 0 <= wait_seconds <= 30:
            raise MandateError("wait_seconds is between 0 and 30", code="invalid_options")
        resolution = ApprovalResolution()
        for item in state.get_interruptions():
            raw = item.raw_item
            name = item.tool_name or _raw_field(raw, "name")
            call_id = _raw_field(raw, "call_id")
            policy = self._policies.get(name or "")
            if policy is None or call_id is None or _raw_field(raw, "type") != "function_call":
                resolution.other.append(item)
                continue
            args = _arguments(_raw_field(raw, "arguments") or "{}")
            asked = self._gate.ask(
                call_id, name or "", args, action=policy.action, resource=policy.resource, spend_usd=policy.spend_usd
            )
            call = await self._gate.authorize(asked, args, wait=wait_seconds)
            if call.state == "authorized":
                state.approve(item)
                resolution.approved.append(call)
            elif call.state == "refused":
                state.reject(item, rejection_message=self._message(call))
                resolution.rejected.append(call)
            else:
                resolution.pending.append(call)
        return resolution
