"""What the framework adapters share: a tool call authorized once per binding, and completed.

A call's authorization is bound to the call as it was asked for: its id,
the tool, the action, resource and spend, and the hash of its arguments
(``args_hash``). The binding is also the authorize call's Idempotency-Key,
so a call met again after a restart (a run resumed from stored state) gets
its first answer, and its record, back from the server instead of a second
record; a call id met again with other arguments is another request under a
record of its own, and never runs under the first one's approval.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, TypeVar, cast

from mandate.client import AsyncMandate, PendingApproval, ProofKey, check_args_offline, sha256_ref
from mandate.client._act import completion, failed, shielded
from mandate.client._models import AuthorizeResponse, Outcome
from mandate.client.approvals import approval_url
from mandate.client.records import Attempt, UnconfirmedCompletion
from mandate.errors import MandateError

#: The longest wait the server takes on one read of an approval, seconds.
MAX_APPROVAL_WAIT = 30
#: The most calls a gate remembers (awaiting a decision, refused, or about to run).
MAX_CALLS = 4096

CallState = Literal["awaiting_approval", "authorized", "refused", "running", "completed"]

V = TypeVar("V")

#: A value of a tool's policy: fixed, or computed from the call's arguments.
FromArgs: TypeAlias = V | Callable[[dict[str, Any]], V]


@dataclass(frozen=True)
class ToolPolicy:
    """What Mandate is asked for each call of one tool."""

    #: The action checked against the token's scope, e.g. ``send``.
    action: FromArgs[str]
    #: The resource, e.g. ``lambda args: f"mail:{args['to']}"``.
    resource: FromArgs[str]
    #: US dollars reserved against the budget for the call.
    spend_usd: FromArgs[float | None] = None
    #: The ``result_hash`` of the tool's output (default: the client's ``output_hash``).
    result_hash: Callable[[Any], str | None] | None = None


def value_of(value: FromArgs[V], args: dict[str, Any]) -> V:
    """``value``, or what it computes from ``args``."""
    given: object = value
    if callable(given):
        return cast(Callable[[dict[str, Any]], V], given)(args)
    return cast(V, given)


def args_hash(args: Mapping[str, Any]) -> str:
    """``sha256:`` of the arguments' JSON with sorted keys and no spaces: what an authorization holds for.

    Not RFC 8785 for every value (floats are written as Python writes them),
    but stable for one process and across processes of this package, which is
    all a binding needs: it is compared with itself, never with the server.
    """
    text = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=str)
    return sha256_ref(text)


@dataclass
class MandateToolCall:
    """One call of a wrapped tool and its record."""

    call_id: str
    tool: str
    action: str
    resource: str
    spend_usd: float | None
    #: ``sha256:`` of the arguments: the authorization holds for these arguments only.
    args_hash: str
    state: CallState = "authorized"
    #: The record; None only when the refusal came before the server wrote one.
    aar_id: str | None = None
    #: Why the call was refused: a deny reason, or the code of the error that stopped it.
    reason: str | None = None
    #: The approval the call waits for (or waited for), with the reviewer's page.
    approval: PendingApproval | None = None
    #: How the tool ended, once completed.
    result: Outcome | None = None
    #: The ``result_hash`` sent on completion.
    result_hash: str | None = None

    @property
    def binding(self) -> str:
        """Hex SHA-256 of the call id, tool, action, resource, spend and arguments' hash."""
        bound = {
            "call_id": self.call_id,
            "tool": self.tool,
            "action": self.action,
            "resource": self.resource,
            "spend_usd": self.spend_usd,
            "args_hash": self.args_hash,
        }
        return args_hash(bound).removeprefix("sha256:")


def default_message(call: MandateToolCall) -> str:
    """What the model reads in place of the output of a call that did not run."""
    if call.state == "awaiting_approval" and call.approval is not None:
        return f"Mandate has not approved {call.tool} yet (approval_pending): a reviewer decides at {call.approval.url}"
    return f"Mandate refused {call.tool}: {call.reason or 'not_authorized'}"


class ToolGate:
    """The calls of one agent token's tools, authorized once per binding and completed once."""

    def __init__(
        self,
        client: AsyncMandate,
        token: str,
        *,
        prefix: str,
        key: ProofKey | None,
        traceparent: str | None,
        on_approval: Callable[[PendingApproval, MandateToolCall], None] | None,
        on_call_end: Callable[[MandateToolCall], None] | None,
    ) -> None:
        self._client = client
        self._token = token
        self._prefix = prefix
        self._key = key
        self._traceparent = traceparent
        self._on_approval = on_approval
        self._on_call_end = on_call_end
        self._calls: dict[str, MandateToolCall] = {}

    def ask(
        self,
        call_id: str,
        tool: str,
        args: dict[str, Any],
        *,
        action: FromArgs[str],
        resource: FromArgs[str],
        spend_usd: FromArgs[float | None],
    ) -> MandateToolCall:
        """The call ``call_id`` of ``tool`` with ``args``, as the tool's policy asks it (not yet authorized)."""
        return MandateToolCall(
            call_id=call_id,
            tool=tool,
            action=value_of(action, args),
            resource=value_of(resource, args),
            spend_usd=value_of(spend_usd, args),
            args_hash=args_hash(args),
        )

    async def authorize(self, asked: MandateToolCall, args: dict[str, Any], *, wait: int = 0) -> MandateToolCall:
        """The call's standing with Mandate: authorized once per binding, its approval read while pending.

        Arguments the token's own rules refuse (``check_args_offline``) make
        the call ``refused`` with that code and no record: nothing is sent.
        An error talking to Mandate is raised: the tool does not run.
        """
        binding = asked.binding
        call = self._calls.get(binding)
        if call is None:
            attempt: Attempt = {"action": asked.action, "resource": asked.resource, "args": args}
            if asked.spend_usd is not None:
                attempt["spend_usd"] = asked.spend_usd
            # The token's own argument rules refuse here, before any round trip: no record is made.
            offline = check_args_offline(self._token, attempt)
            if offline is not None:
                asked.state = "refused"
                asked.reason = offline.code
                self._remember(binding, asked)
                self._ended(asked)
                return asked
            answer = await self._client.records.authorize(
                attempt,
                token=self._token,
                key=self._key,
                traceparent=self._traceparent,
                idempotency_key=f"{self._prefix}-{binding}",
            )
            call = self._judged(asked, answer)
            self._remember(binding, call)
            if call.state == "awaiting_approval" and call.approval is not None:
                # Asked again after a restart, the server answers as it first did: the approval says more.
                await self._read_approval(call, wait)
                if call.state == "awaiting_approval" and self._on_approval is not None:
                    self._on_approval(call.approval, call)
            elif call.state == "refused":
                self._ended(call)
        elif call.state == "awaiting_approval":
            await self._read_approval(call, wait)
        return call

    def _remember(self, binding: str, call: MandateToolCall) -> None:
        # Bounded: a call forgotten is asked again with its key and gets its first answer back.
        if len(self._calls) >= MAX_CALLS:
            del self._calls[next(iter(self._calls))]
        self._calls[binding] = call

    async def decision(self, approval_id: str, wait: int = 0) -> str:
        """The status of an approval (``pending``, ``approved``, ``denied``, ``expired``), waiting up to ``wait`` s."""
        approval = await self._client.approvals.get(
            approval_id, wait=min(wait, MAX_APPROVAL_WAIT) or None, token=self._token, key=self._key
        )
        return approval["status"]

    async def _read_approval(self, call: MandateToolCall, wait: int) -> None:
        assert call.approval is not None
        status = await self.decision(call.approval.approval_id, wait)
        self.decided(call, status)

    def decided(self, call: MandateToolCall, status: str) -> CallState:
        """``call`` as the decision ``status`` of its approval makes it: its new state."""
        if status == "approved":
            call.state = "authorized"
        elif status != "pending":
            call.state = "refused"
            call.reason = "approval_denied" if status == "denied" else "approval_expired"
            self._ended(call)
        return call.state

    def _judged(self, call: MandateToolCall, answer: AuthorizeResponse) -> MandateToolCall:
        call.aar_id = answer.get("aar_id")
        ref = answer.get("approval")
        if answer["authorized"]:
            call.state = "authorized"
        elif ref is not None and ref["status"] == "pending":
            call.state = "awaiting_approval"
            url = approval_url(self._client.base_url, ref["approval_id"])
            call.approval = PendingApproval(ref["approval_id"], answer["aar_id"], url, ref["expires_at"])
        else:
            call.state = "refused"
            call.reason = answer.get("reason") or "action_not_permitted"
        return call

    def start(self, call: MandateToolCall) -> None:
        """The tool is about to run under the call's record (refused unless the call is authorized)."""
        if call.state != "authorized" or call.aar_id is None:
            raise MandateError(f"{call.tool} is not authorized ({call.state})", code="not_authorized")
        call.state = "running"

    async def complete(
        self,
        call: MandateToolCall,
        *,
        output: object = None,
        error: BaseException | None = None,
        result_hash: Callable[[Any], str | None] | None = None,
    ) -> None:
        """Completes the call's record: ``success`` with the output's hash, or how the error ended it."""
        assert call.aar_id is not None
        request = completion(output, result_hash) if error is None else failed(error)
        try:
            # Shielded: a run cancelled mid-tool still completes the record (``cancelled``), never leaves it open.
            await shielded(
                self._client.records.complete(
                    call.aar_id,
                    request,
                    token=self._token,
                    key=self._key,
                    traceparent=self._traceparent,
                    idempotency_key=f"complete-{call.aar_id}",
                )
            )
        except UnconfirmedCompletion:
            pass  # The attempt whose answer was lost completed it.
        except MandateError as failure:
            if error is None:
                raise
            error.add_note(f"mandate: completing {call.aar_id} as {request['result']} failed too: {failure}")
        finally:
            call.state = "completed"
            call.result = request["result"]
            call.result_hash = request.get("result_hash")
            self._calls.pop(call.binding, None)
            self._ended(call)

    def _ended(self, call: MandateToolCall) -> None:
        if self._on_call_end is not None:
            self._on_call_end(call)
