"""Records: ask before acting, record what was done, complete, rate and read."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NotRequired, TypedDict, Unpack, cast

from mandate.client._models import (
    ApprovalBody,
    ApprovalRef,
    AuthorizeResponse,
    BulkFeedbackRequest,
    BulkFeedbackResponse,
    CompleteRequest,
    FeedbackRequest,
    FeedbackResponse,
    GraphBody,
    InboxCounts,
    OverviewBody,
    RecordActionResponse,
    RecordActionsResponse,
    RecordBody,
    RecordPage,
    RecordProofBody,
    SummaryBody,
    WorkflowBody,
    WorkflowPage,
)
from mandate.client._transport import (
    API_KEY,
    Agent,
    AsyncTransport,
    Call,
    Credential,
    ProofKey,
    Relay,
    RequestOptions,
    Transport,
    WriteOptions,
    client_error,
    maybe_done,
    query,
    segment,
    split,
    transient,
)
from mandate.errors import MandateError

#: The longest wait the server takes on one read of an approval, seconds.
MAX_APPROVAL_WAIT = 30
#: The first pause before reading an approval again after a failed read, seconds.
RETRY = 1.0
#: The longest such pause, seconds.
MAX_RETRY = 30.0


class Attempt(TypedDict):
    """What an agent asks to do (``POST /v1/vat/authorize``'s body).

    ``vat_jti`` is needed only when the call presents no token.
    """

    action: str
    resource: str
    args: NotRequired[dict[str, Any] | None]
    spend_usd: NotRequired[float | None]
    vat_jti: NotRequired[str]


class RecordQuery(RequestOptions, total=False):
    """The filters of ``GET /v1/vat/aar`` (and the call's options)."""

    agent_id: str
    action: str
    result: str
    #: False: the completed records awaiting a rating.
    rated: bool
    resource: str
    provenance_ref: str
    jth: str
    vat_jti: str
    since: str | datetime
    until: str | datetime
    limit: int
    cursor: str


class WorkflowQuery(RequestOptions, total=False):
    """The filters of ``GET /v1/vat/workflows`` (and the call's options)."""

    agent_id: str
    provenance_ref: str
    human_ref: str
    since: str | datetime
    until: str | datetime
    limit: int
    cursor: str


def _listed(path: str, given: Mapping[str, object]) -> Call:
    params, options = split(given)
    return Call("GET", f"{path}{query(**params)}", **options)


def _agent(token: str | None, key: ProofKey | None, relay: Relay | None = None) -> Credential:
    return None if token is None else Agent(token, key, relay)


def approval_call(
    approval_id: str,
    wait: int | None,
    token: str | None,
    key: ProofKey | None,
    options: RequestOptions,
    relay: Relay | None = None,
) -> Call:
    """``GET /v1/vat/approvals/{approval_id}`` (with ``wait``, a long-poll of at most 30 s); a relay reads with
    its own proof alone."""
    alone = None if relay is None else Relay(relay.key)
    credential: Credential = API_KEY if token is None else Agent(token, key, alone)
    path = f"/v1/vat/approvals/{segment(approval_id)}{query(wait=wait)}"
    return Call("GET", path, credential, extra_timeout=float(wait or 0), **options)


def _check_wait(wait_for_approval: float | None, token: str | None, api_key: str | None) -> None:
    if wait_for_approval is None:
        return
    if not (wait_for_approval >= 0 and math.isfinite(wait_for_approval)):
        raise client_error("invalid_options", "wait_for_approval must be a finite number of seconds, 0 or more")
    if token is None and api_key is None:
        raise client_error(
            "token_required", "waiting for an approval reads it with the agent's token or the client's API key"
        )


def decided(answer: AuthorizeResponse, pending: ApprovalRef, approval: ApprovalBody) -> AuthorizeResponse:
    """``answer`` as the decision ``approval`` makes it."""
    status = approval["status"]
    ref: ApprovalRef = {**pending, "status": status}
    result: AuthorizeResponse = {**answer, "approval": ref}
    if status == "approved":
        result["authorized"] = True
    else:
        result["reason"] = "approval_denied" if status == "denied" else "approval_expired"
    return result


def completed_as(record: RecordBody, request: CompleteRequest) -> bool:
    """What a completion reported, as the record shows it."""
    spend = request.get("spend_usd")
    return (
        record["status"] == "completed"
        and record.get("result") == request["result"]
        and record.get("result_hash") == request.get("result_hash")
        and (spend is None or abs(record["spend_usd"] - spend) < 5e-7)
    )


@dataclass
class _Lost:
    """Whether a retried attempt's answer was lost (it may have been carried out)."""

    seen: bool = False

    def __call__(self, error: MandateError) -> None:
        self.seen = self.seen or maybe_done(error)


class UnconfirmedCompletion(MandateError):
    """409 ``already_completed`` after an attempt whose answer was lost: that attempt may have completed it.

    ``act`` takes it as its own completion (only ``act`` completes the record it just authorized).
    """


def _unconfirmed(error: MandateError) -> MandateError:
    detail = (
        f"{error.detail or 'the record was completed before'}; "
        "an earlier attempt of this call, whose answer was lost, may have completed it"
    )
    again = UnconfirmedCompletion(
        detail,
        code=error.code,
        status=error.status,
        request_id=error.request_id,
        problem={**error.problem, "detail": detail},
        headers=error.headers,
    )
    again.__cause__ = error
    return again


def _complete_call(
    aar_id: str,
    request: CompleteRequest,
    token: str | None,
    key: ProofKey | None,
    traceparent: str | None,
    lost: _Lost,
    options: WriteOptions,
    relay: Relay | None,
) -> Call:
    path = f"/v1/vat/aar/{segment(aar_id)}/complete"
    # A relay completes with its own proof alone.
    alone = None if relay is None else Relay(relay.key)
    return Call(
        "POST", path, _agent(token, key, alone), request, "write", traceparent=traceparent, on_retry=lost, **options
    )


class Records:
    """``mandate.records``: the action records of the /v1 API."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def authorize(
        self,
        request: Attempt,
        *,
        token: str | None = None,
        key: ProofKey | None = None,
        relay: Relay | None = None,
        traceparent: str | None = None,
        wait_for_approval: float | None = None,
        **options: Unpack[WriteOptions],
    ) -> AuthorizeResponse:
        """``POST /v1/vat/authorize``: asks before acting; a refusal is ``authorized: False``, not an error.

        An action a grant requires a human's approval for answers
        ``authorized: False`` with the pending ``approval`` — at once, or,
        with ``wait_for_approval`` (seconds), once it is decided (approved:
        ``authorized: True``; denied or expired: ``reason``
        ``approval_denied`` / ``approval_expired``) or the wait ends.
        """
        _check_wait(wait_for_approval, token, self._t.api_key)
        call = Call(
            "POST", "/v1/vat/authorize", _agent(token, key, relay), request, "write", traceparent=traceparent, **options
        )
        answer = cast(AuthorizeResponse, self._t.call(call))
        pending = answer.get("approval")
        if wait_for_approval is None or pending is None or pending["status"] != "pending":
            return answer
        return self.await_decision(answer, pending, wait_for_approval, token, key, options.get("timeout"), relay)

    def await_decision(
        self,
        answer: AuthorizeResponse,
        pending: ApprovalRef,
        seconds: float,
        token: str | None,
        key: ProofKey | None,
        timeout: float | None,
        relay: Relay | None = None,
    ) -> AuthorizeResponse:
        """Reads the approval until it is decided or ``seconds`` have passed."""
        deadline = time.monotonic() + seconds
        read: RequestOptions = {"max_retries": 0}
        if timeout is not None:
            read["timeout"] = timeout
        pause = RETRY
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return answer
            wait = min(MAX_APPROVAL_WAIT, math.ceil(left))
            try:
                approval = cast(
                    ApprovalBody, self._t.call(approval_call(pending["approval_id"], wait, token, key, read, relay))
                )
            except MandateError as error:
                delay = max(pause, error.retry_after or 0)
                if not transient(error) or deadline - time.monotonic() <= delay:
                    raise
                time.sleep(delay)
                pause = min(pause * 2, MAX_RETRY)
                continue
            pause = RETRY
            if approval["status"] != "pending":
                return decided(answer, pending, approval)

    def record_action(
        self,
        request: Mapping[str, Any],
        *,
        token: str | None = None,
        key: ProofKey | None = None,
        traceparent: str | None = None,
        **options: Unpack[WriteOptions],
    ) -> RecordActionResponse:
        """``POST /v1/vat/record/action``: an action done and its result, in one step (``RecordActionRequest``)."""
        call = Call(
            "POST", "/v1/vat/record/action", _agent(token, key), request, "write", traceparent=traceparent, **options
        )
        return cast(RecordActionResponse, self._t.call(call))

    def record_actions(
        self,
        records: list[Mapping[str, Any]],
        *,
        token: str | None = None,
        key: ProofKey | None = None,
        traceparent: str | None = None,
        **options: Unpack[WriteOptions],
    ) -> RecordActionsResponse:
        """``POST /v1/vat/record/actions``: 1 to 1000 records in one call, committed together."""
        body = {"records": records}
        call = Call(
            "POST", "/v1/vat/record/actions", _agent(token, key), body, "write", traceparent=traceparent, **options
        )
        return cast(RecordActionsResponse, self._t.call(call))

    def complete(
        self,
        aar_id: str,
        request: CompleteRequest,
        *,
        token: str | None = None,
        key: ProofKey | None = None,
        relay: Relay | None = None,
        traceparent: str | None = None,
        **options: Unpack[WriteOptions],
    ) -> RecordBody:
        """``POST /v1/vat/aar/{aar_id}/complete``: how an authorized action ended.

        A retry after an attempt whose answer was lost may be refused 409
        ``already_completed`` because that attempt did complete it: then,
        with the client's API key, the record is read and, when it was
        completed as ``request`` says, returned.
        """
        lost = _Lost()
        try:
            return cast(
                RecordBody, self._t.call(_complete_call(aar_id, request, token, key, traceparent, lost, options, relay))
            )
        except MandateError as error:
            if not (lost.seen and error.status == 409 and error.code == "already_completed"):
                raise
            if self._t.api_key is not None:
                try:
                    record = self.get(aar_id)
                except MandateError:
                    raise _unconfirmed(error) from error
                if completed_as(record, request):
                    return record
            raise _unconfirmed(error) from error

    def feedback(self, aar_id: str, request: FeedbackRequest, **options: Unpack[RequestOptions]) -> FeedbackResponse:
        """``POST /v1/vat/aar/{aar_id}/feedback``: a human's one rating of a completed action."""
        call = Call("POST", f"/v1/vat/aar/{segment(aar_id)}/feedback", API_KEY, request, "once", **options)
        return cast(FeedbackResponse, self._t.call(call))

    def rate_workflow(self, request: BulkFeedbackRequest, **options: Unpack[RequestOptions]) -> BulkFeedbackResponse:
        """``POST /v1/vat/aar/feedback``: rates every unrated completed record of a workflow."""
        call = Call("POST", "/v1/vat/aar/feedback", API_KEY, request, "once", **options)
        return cast(BulkFeedbackResponse, self._t.call(call))

    def get(self, aar_id: str, **options: Unpack[RequestOptions]) -> RecordBody:
        """``GET /v1/vat/aar/{aar_id}``: one full record."""
        return cast(RecordBody, self._t.call(Call("GET", f"/v1/vat/aar/{segment(aar_id)}", **options)))

    def page(self, **query: Unpack[RecordQuery]) -> RecordPage:
        """``GET /v1/vat/aar``: one page of records, newest first."""
        return cast(RecordPage, self._t.call(_listed("/v1/vat/aar", query)))

    def list(self, **query: Unpack[RecordQuery]) -> Iterator[RecordBody]:
        """Every record matching ``query``, newest first, page after page as iteration goes on."""
        current: RecordQuery = {**query}
        while True:
            page = self.page(**current)
            yield from page["records"]
            cursor = page.get("next_cursor")
            if not cursor:
                return
            current["cursor"] = cursor

    def proof(self, aar_id: str, **options: Unpack[RequestOptions]) -> RecordProofBody:
        """``GET /v1/vat/aar/{aar_id}/proof``: every event of a record with its inclusion proof."""
        return cast(RecordProofBody, self._t.call(Call("GET", f"/v1/vat/aar/{segment(aar_id)}/proof", **options)))

    def provenance(self, provenance_ref: str, **options: Unpack[RequestOptions]) -> SummaryBody:
        """``GET /v1/vat/aar/provenance/{provenance_ref}``: the workflow's summary."""
        path = f"/v1/vat/aar/provenance/{segment(provenance_ref)}"
        return cast(SummaryBody, self._t.call(Call("GET", path, **options)))

    def graph(self, provenance_ref: str, *, limit: int | None = None, **options: Unpack[RequestOptions]) -> GraphBody:
        """``GET /v1/vat/aar/provenance/{provenance_ref}/graph``: tokens and records of a workflow."""
        path = f"/v1/vat/aar/provenance/{segment(provenance_ref)}/graph{query(limit=limit)}"
        return cast(GraphBody, self._t.call(Call("GET", path, **options)))

    def workflows_page(self, **query: Unpack[WorkflowQuery]) -> WorkflowPage:
        """``GET /v1/vat/workflows``: one page of workflows, newest activity first."""
        return cast(WorkflowPage, self._t.call(_listed("/v1/vat/workflows", query)))

    def workflows(self, **query: Unpack[WorkflowQuery]) -> Iterator[WorkflowBody]:
        """Every workflow matching ``query``, page after page."""
        current: WorkflowQuery = {**query}
        while True:
            page = self.workflows_page(**current)
            yield from page["workflows"]
            cursor = page.get("next_cursor")
            if not cursor:
                return
            current["cursor"] = cursor

    def overview(self, *, window: str | None = None, **options: Unpack[RequestOptions]) -> OverviewBody:
        """``GET /v1/vat/overview``: the organisation over ``window`` (``24h``, ``7d``, ``30d``)."""
        return cast(OverviewBody, self._t.call(Call("GET", f"/v1/vat/overview{query(window=window)}", **options)))

    def inbox_counts(self, **options: Unpack[RequestOptions]) -> InboxCounts:
        """``GET /v1/vat/inbox/counts``: approvals pending and completed records awaiting a rating."""
        return cast(InboxCounts, self._t.call(Call("GET", "/v1/vat/inbox/counts", **options)))


class AsyncRecords:
    """``mandate.records`` of :class:`AsyncMandate`: as :class:`Records`, awaited."""

    def __init__(self, transport: AsyncTransport) -> None:
        self._t = transport

    async def authorize(
        self,
        request: Attempt,
        *,
        token: str | None = None,
        key: ProofKey | None = None,
        relay: Relay | None = None,
        traceparent: str | None = None,
        wait_for_approval: float | None = None,
        **options: Unpack[WriteOptions],
    ) -> AuthorizeResponse:
        """``POST /v1/vat/authorize``: see :meth:`Records.authorize`."""
        _check_wait(wait_for_approval, token, self._t.api_key)
        call = Call(
            "POST", "/v1/vat/authorize", _agent(token, key, relay), request, "write", traceparent=traceparent, **options
        )
        answer = cast(AuthorizeResponse, await self._t.call(call))
        pending = answer.get("approval")
        if wait_for_approval is None or pending is None or pending["status"] != "pending":
            return answer
        return await self.await_decision(answer, pending, wait_for_approval, token, key, options.get("timeout"), relay)

    async def await_decision(
        self,
        answer: AuthorizeResponse,
        pending: ApprovalRef,
        seconds: float,
        token: str | None,
        key: ProofKey | None,
        timeout: float | None,
        relay: Relay | None = None,
    ) -> AuthorizeResponse:
        """Reads the approval until it is decided or ``seconds`` have passed."""
        deadline = time.monotonic() + seconds
        read: RequestOptions = {"max_retries": 0}
        if timeout is not None:
            read["timeout"] = timeout
        pause = RETRY
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return answer
            wait = min(MAX_APPROVAL_WAIT, math.ceil(left))
            try:
                approval = cast(
                    ApprovalBody,
                    await self._t.call(approval_call(pending["approval_id"], wait, token, key, read, relay)),
                )
            except MandateError as error:
                delay = max(pause, error.retry_after or 0)
                if not transient(error) or deadline - time.monotonic() <= delay:
                    raise
                await asyncio.sleep(delay)
                pause = min(pause * 2, MAX_RETRY)
                continue
            pause = RETRY
            if approval["status"] != "pending":
                return decided(answer, pending, approval)

    async def record_action(
        self,
        request: Mapping[str, Any],
        *,
        token: str | None = None,
        key: ProofKey | None = None,
        traceparent: str | None = None,
        **options: Unpack[WriteOptions],
    ) -> RecordActionResponse:
        """``POST /v1/vat/record/action``: an action done and its result, in one step."""
        call = Call(
            "POST", "/v1/vat/record/action", _agent(token, key), request, "write", traceparent=traceparent, **options
        )
        return cast(RecordActionResponse, await self._t.call(call))

    async def record_actions(
        self,
        records: list[Mapping[str, Any]],
        *,
        token: str | None = None,
        key: ProofKey | None = None,
        traceparent: str | None = None,
        **options: Unpack[WriteOptions],
    ) -> RecordActionsResponse:
        """``POST /v1/vat/record/actions``: 1 to 1000 records in one call, committed together."""
        body = {"records": records}
        call = Call(
            "POST", "/v1/vat/record/actions", _agent(token, key), body, "write", traceparent=traceparent, **options
        )
        return cast(RecordActionsResponse, await self._t.call(call))

    async def complete(
        self,
        aar_id: str,
        request: CompleteRequest,
        *,
        token: str | None = None,
        key: ProofKey | None = None,
        relay: Relay | None = None,
        traceparent: str | None = None,
        **options: Unpack[WriteOptions],
    ) -> RecordBody:
        """``POST /v1/vat/aar/{aar_id}/complete``: see :meth:`Records.complete`."""
        lost = _Lost()
        try:
            call = _complete_call(aar_id, request, token, key, traceparent, lost, options, relay)
            return cast(RecordBody, await self._t.call(call))
        except MandateError as error:
            if not (lost.seen and error.status == 409 and error.code == "already_completed"):
                raise
            if self._t.api_key is not None:
                try:
                    record = await self.get(aar_id)
                except MandateError:
                    raise _unconfirmed(error) from error
                if completed_as(record, request):
                    return record
            raise _unconfirmed(error) from error

    async def feedback(
        self, aar_id: str, request: FeedbackRequest, **options: Unpack[RequestOptions]
    ) -> FeedbackResponse:
        """``POST /v1/vat/aar/{aar_id}/feedback``: a human's one rating of a completed action."""
        call = Call("POST", f"/v1/vat/aar/{segment(aar_id)}/feedback", API_KEY, request, "once", **options)
        return cast(FeedbackResponse, await self._t.call(call))

    async def rate_workflow(
        self, request: BulkFeedbackRequest, **options: Unpack[RequestOptions]
    ) -> BulkFeedbackResponse:
        """``POST /v1/vat/aar/feedback``: rates every unrated completed record of a workflow."""
        call = Call("POST", "/v1/vat/aar/feedback", API_KEY, request, "once", **options)
        return cast(BulkFeedbackResponse, await self._t.call(call))

    async def get(self, aar_id: str, **options: Unpack[RequestOptions]) -> RecordBody:
        """``GET /v1/vat/aar/{aar_id}``: one full record."""
        return cast(RecordBody, await self._t.call(Call("GET", f"/v1/vat/aar/{segment(aar_id)}", **options)))

    async def page(self, **query: Unpack[RecordQuery]) -> RecordPage:
        """``GET /v1/vat/aar``: one page of records, newest first."""
        return cast(RecordPage, await self._t.call(_listed("/v1/vat/aar", query)))

    async def list(self, **query: Unpack[RecordQuery]) -> AsyncIterator[RecordBody]:
        """Every record matching ``query``, newest first, page after page."""
        current: RecordQuery = {**query}
        while True:
            page = await self.page(**current)
            for record in page["records"]:
                yield record
            cursor = page.get("next_cursor")
            if not cursor:
                return
            current["cursor"] = cursor

    async def proof(self, aar_id: str, **options: Unpack[RequestOptions]) -> RecordProofBody:
        """``GET /v1/vat/aar/{aar_id}/proof``: every event of a record with its inclusion proof."""
        call = Call("GET", f"/v1/vat/aar/{segment(aar_id)}/proof", **options)
        return cast(RecordProofBody, await self._t.call(call))

    async def provenance(self, provenance_ref: str, **options: Unpack[RequestOptions]) -> SummaryBody:
        """``GET /v1/vat/aar/provenance/{provenance_ref}``: the workflow's summary."""
        path = f"/v1/vat/aar/provenance/{segment(provenance_ref)}"
        return cast(SummaryBody, await self._t.call(Call("GET", path, **options)))

    async def graph(
        self, provenance_ref: str, *, limit: int | None = None, **options: Unpack[RequestOptions]
    ) -> GraphBody:
        """``GET /v1/vat/aar/provenance/{provenance_ref}/graph``: tokens and records of a workflow."""
        path = f"/v1/vat/aar/provenance/{segment(provenance_ref)}/graph{query(limit=limit)}"
        return cast(GraphBody, await self._t.call(Call("GET", path, **options)))

    async def workflows_page(self, **query: Unpack[WorkflowQuery]) -> WorkflowPage:
        """``GET /v1/vat/workflows``: one page of workflows, newest activity first."""
        return cast(WorkflowPage, await self._t.call(_listed("/v1/vat/workflows", query)))

    async def workflows(self, **query: Unpack[WorkflowQuery]) -> AsyncIterator[WorkflowBody]:
        """Every workflow matching ``query``, page after page."""
        current: WorkflowQuery = {**query}
        while True:
            page = await self.workflows_page(**current)
            for workflow in page["workflows"]:
                yield workflow
            cursor = page.get("next_cursor")
            if not cursor:
                return
            current["cursor"] = cursor

    async def overview(self, *, window: str | None = None, **options: Unpack[RequestOptions]) -> OverviewBody:
        """``GET /v1/vat/overview``: the organisation over ``window``."""
        call = Call("GET", f"/v1/vat/overview{query(window=window)}", **options)
        return cast(OverviewBody, await self._t.call(call))

    async def inbox_counts(self, **options: Unpack[RequestOptions]) -> InboxCounts:
        """``GET /v1/vat/inbox/counts``: approvals pending and records awaiting a rating."""
        return cast(InboxCounts, await self._t.call(Call("GET", "/v1/vat/inbox/counts", **options)))
