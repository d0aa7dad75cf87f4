"""``Mandate`` and ``AsyncMandate``: every /v1 call, grouped, and ``act``."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Generator, Mapping
from types import TracebackType
from typing import Any, Self, TypeVar, Unpack, cast

import httpx

from mandate.client._act import (
    ActContext,
    PendingApproval,
    attempt,
    completion,
    failed,
    pending_of,
    refusal,
    shielded,
    still_pending,
)
from mandate.client._models import (
    ApprovalBody,
    AuthorizeResponse,
    CompleteRequest,
    DelegateRequest,
    DelegationAwaitingApproval,
    IssuedToken,
    MeBody,
    RecordActionResponse,
    RecordActionsResponse,
    RecordBody,
    RevokeRequest,
    RevokeResponse,
    VouchBody,
    VouchRequest,
)
from mandate.client._offline import check_args_offline
from mandate.client._transport import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_MAX_RETRY_DELAY,
    DEFAULT_TIMEOUT,
    AsyncTransport,
    Call,
    ProofKey,
    RequestOptions,
    Transport,
    WriteOptions,
    client_error,
    segment,
    token_claims,
)
from mandate.client.access import Access, AsyncAccess
from mandate.client.agents import Agents, AsyncAgents
from mandate.client.approvals import Approvals, AsyncApprovals
from mandate.client.events import Event, async_events, events
from mandate.client.log import AsyncLog, Log
from mandate.client.oauth import AsyncOAuth, OAuth
from mandate.client.orgs import AsyncKeys, AsyncOrgs, Keys, Orgs
from mandate.client.records import AsyncRecords, Attempt, Records, UnconfirmedCompletion
from mandate.client.tokens import AsyncTokens, Tokens
from mandate.client.trust import AsyncTrust, Trust
from mandate.client.webhooks import AsyncWebhooks, Webhooks
from mandate.errors import MandateError
from mandate.remote import AsyncRemoteVerifier, RemoteVerifier, RemoteVerifierOptions

T = TypeVar("T")


def _completion_key(aar_id: str) -> str:
    # The key makes a retried completion (a lost answer) harmless.
    return f"complete-{aar_id}"


class Mandate:
    """A client of a Mandate server's /v1 API (synchronous, over httpx).

    ``api_key`` (``mk_…``) goes with the calls that need one; agent calls
    take the agent's ``token`` (and ``key`` when the token is bound, for
    its DPoP proofs). ``timeout`` is per attempt, seconds; a call safe to
    send again is retried up to ``max_retries`` times, never waiting longer
    than ``max_retry_delay`` (a longer ``Retry-After`` raises at once, its
    ``retry_after`` saying when to try again).
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        max_retry_delay: float = DEFAULT_MAX_RETRY_DELAY,
        http: httpx.Client | None = None,
    ) -> None:
        self._t = Transport(
            base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            max_retry_delay=max_retry_delay,
            http=http,
        )
        self.tokens = Tokens(self._t)
        self.records = Records(self._t)
        self.approvals = Approvals(self._t)
        self.agents = Agents(self._t)
        self.webhooks = Webhooks(self._t)
        self.trust = Trust(self._t)
        self.orgs = Orgs(self._t)
        self.keys = Keys(self._t)
        self.log = Log(self._t)
        self.access = Access(self._t)
        self.oauth = OAuth(self._t)

    @property
    def base_url(self) -> str:
        return self._t.base_url

    def close(self) -> None:
        """Closes the HTTP client the client made (not one it was given)."""
        self._t.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def me(self, **options: Unpack[RequestOptions]) -> MeBody:
        """``GET /v1/me``: the API key's organisation, role and permissions."""
        return cast(MeBody, self._t.call(Call("GET", "/v1/me", **options)))

    def openapi(self, **options: Unpack[RequestOptions]) -> dict[str, Any]:
        """``GET /v1/openapi.json``: the server's OpenAPI document."""
        return cast(dict[str, Any], self._t.call(Call("GET", "/v1/openapi.json", None, **options)))

    def events(
        self,
        *,
        last_event_id: str | None = None,
        on_open: Callable[[], None] | None = None,
        on_drop: Callable[[], None] | None = None,
    ) -> Generator[Event, None, None]:
        """``GET /v1/events``: the organisation's events as they happen, resuming after a drop.

        Start after ``last_event_id`` (an event's ``id``) to get every later
        event the server still keeps first. The iteration never ends by
        itself: leave the loop and ``close()`` the generator (which closes
        the connection).
        """
        return events(self._t, last_event_id, on_open, on_drop)

    def workflow_url(self, provenance_ref: str) -> str:
        """The dashboard's page of a workflow: its chain of tokens and every record."""
        return f"{self._t.base_url}/#/workflow/{segment(provenance_ref)}"

    def remote_verifier(
        self, *, max_staleness_seconds: int, **options: Unpack[RemoteVerifierOptions]
    ) -> RemoteVerifier:
        """A verifier of this server's tokens that keeps itself current (:class:`~mandate.remote.RemoteVerifier`).

        It fetches through this client's HTTP client, without its API key,
        the key set — again when a token names a kid it lacks, at most once
        per ``key_refresh_cooldown_seconds`` — and the status list each token
        names, so a revoked token is refused (``token_revoked``) within
        ``max_staleness_seconds``. Raises :class:`~mandate.MandateError` when
        the key set cannot be fetched or used.
        """
        return RemoteVerifier.create(
            max_staleness_seconds=max_staleness_seconds,
            base_url=self._t.base_url,
            http=self._t.http,
            timeout=self._t.timeout or None,
            **options,
        )

    def as_agent(self, token: str, *, key: ProofKey | None = None, traceparent: str | None = None) -> AgentMandate:
        """A client acting as the agent holding ``token`` (with ``key`` for a bound token)."""
        return AgentMandate(self, token, key=key, traceparent=traceparent)

    def act(
        self,
        token: str,
        action: str,
        resource: str,
        args: dict[str, Any] | None,
        fn: Callable[[ActContext], T],
        *,
        spend_usd: float | None = None,
        key: ProofKey | None = None,
        traceparent: str | None = None,
        wait_for_approval: float | None = None,
        on_approval: Callable[[PendingApproval], None] | None = None,
        result_hash: Callable[[T], str | None] | None = None,
        timeout: float | None = None,
    ) -> T:
        """Runs ``fn`` as an action of the agent holding ``token``.

        The token's own argument rules first, offline
        (:func:`~mandate.client.check_args_offline`): arguments they refuse
        raise with ``status`` 0 before anything is sent, and no record is
        made. Then ``authorize`` — nothing runs when it is refused
        (:class:`~mandate.errors.MandateRefusal`, with the server's reason and
        ``reason_detail``) or when it needs a human's approval not given
        (:class:`~mandate.errors.MandateApprovalPending` with the reviewer's
        URL; with ``wait_for_approval`` seconds, the decision is waited for
        first) — then ``fn``, then ``complete`` with the output's
        ``result_hash`` (``sha256:`` of the text, bytes or compact JSON), or
        with ``error`` (``cancelled`` on KeyboardInterrupt) when ``fn``
        raises, whose exception ``act`` raises again. Returns ``fn``'s output.
        """
        options: WriteOptions = {} if timeout is None else {"timeout": timeout}
        request = attempt(action, resource, args, spend_usd)
        # Arguments the token's own rules refuse are refused here: nothing is sent, nothing runs.
        offline = check_args_offline(token, request)
        if offline is not None:
            raise offline
        answer = self.records.authorize(request, token=token, key=key, traceparent=traceparent, **options)
        found = pending_of(self._t.base_url, answer)
        if found is not None:
            ref, pending = found
            if on_approval is not None:
                on_approval(pending)
            if wait_for_approval is None:
                raise still_pending(pending)
            answer = self.records.await_decision(answer, ref, wait_for_approval, token, key, timeout)
            if pending_of(self._t.base_url, answer) is not None:
                raise still_pending(pending)
        if not answer["authorized"]:
            raise refusal(answer, action, resource)
        context = ActContext(answer["aar_id"], answer["provenance_ref"], answer)
        complete: WriteOptions = {**options, "idempotency_key": _completion_key(answer["aar_id"])}
        try:
            output = fn(context)
        except BaseException as error:
            self._complete_after(answer["aar_id"], failed(error), token, key, traceparent, complete, error)
            raise
        try:
            self.records.complete(
                answer["aar_id"],
                completion(output, result_hash),
                token=token,
                key=key,
                traceparent=traceparent,
                **complete,
            )
        except UnconfirmedCompletion:
            pass  # The attempt whose answer was lost completed it: nothing else completes this record.
        return output

    def _complete_after(
        self,
        aar_id: str,
        request: CompleteRequest,
        token: str,
        key: ProofKey | None,
        traceparent: str | None,
        options: WriteOptions,
        error: BaseException,
    ) -> None:
        try:
            self.records.complete(aar_id, request, token=token, key=key, traceparent=traceparent, **options)
        except UnconfirmedCompletion:
            pass  # The attempt whose answer was lost completed it.
        except MandateError as failure:
            error.add_note(f"mandate: completing {aar_id} as {request['result']} failed too: {failure}")


class AgentMandate:
    """A client bound to one agent token (``Mandate.as_agent``)."""

    def __init__(
        self, client: Mandate, token: str, *, key: ProofKey | None = None, traceparent: str | None = None
    ) -> None:
        self._client = client
        self.token = token
        self._key = key
        self._traceparent = traceparent

    @property
    def claims(self) -> dict[str, Any] | None:
        """The token's claims, read without any check (for display and routing, never to authorize)."""
        return token_claims(self.token)

    def act(
        self,
        action: str,
        resource: str,
        args: dict[str, Any] | None,
        fn: Callable[[ActContext], T],
        *,
        spend_usd: float | None = None,
        wait_for_approval: float | None = None,
        on_approval: Callable[[PendingApproval], None] | None = None,
        result_hash: Callable[[T], str | None] | None = None,
        timeout: float | None = None,
    ) -> T:
        """``Mandate.act`` with this agent's token."""
        return self._client.act(
            self.token,
            action,
            resource,
            args,
            fn,
            spend_usd=spend_usd,
            key=self._key,
            traceparent=self._traceparent,
            wait_for_approval=wait_for_approval,
            on_approval=on_approval,
            result_hash=result_hash,
            timeout=timeout,
        )

    def authorize(
        self, request: Attempt, *, wait_for_approval: float | None = None, **options: Unpack[WriteOptions]
    ) -> AuthorizeResponse:
        """``records.authorize`` with this agent's token."""
        return self._client.records.authorize(
            request,
            token=self.token,
            key=self._key,
            traceparent=self._traceparent,
            wait_for_approval=wait_for_approval,
            **options,
        )

    def record_action(self, request: Mapping[str, Any], **options: Unpack[WriteOptions]) -> RecordActionResponse:
        """``records.record_action`` with this agent's token."""
        return self._client.records.record_action(
            request, token=self.token, key=self._key, traceparent=self._traceparent, **options
        )

    def record_actions(
        self, records: list[Mapping[str, Any]], **options: Unpack[WriteOptions]
    ) -> RecordActionsResponse:
        """``records.record_actions`` with this agent's token: every record acts with it."""
        return self._client.records.record_actions(
            records, token=self.token, key=self._key, traceparent=self._traceparent, **options
        )

    def complete(self, aar_id: str, request: CompleteRequest, **options: Unpack[WriteOptions]) -> RecordBody:
        """``records.complete`` with this agent's token."""
        return self._client.records.complete(
            aar_id, request, token=self.token, key=self._key, traceparent=self._traceparent, **options
        )

    def delegate(
        self, request: DelegateRequest, **options: Unpack[WriteOptions]
    ) -> IssuedToken | DelegationAwaitingApproval:
        """``tokens.delegate`` with this agent's token: a narrower child token."""
        return self._client.tokens.delegate(
            request, token=self.token, key=self._key, traceparent=self._traceparent, **options
        )

    def revoke(self, request: RevokeRequest, **options: Unpack[RequestOptions]) -> RevokeResponse:
        """``tokens.revoke`` with this agent's token (itself or a descendant)."""
        return self._client.tokens.revoke(request, token=self.token, key=self._key, **options)

    def approval(self, approval_id: str, *, wait: int | None = None, **options: Unpack[RequestOptions]) -> ApprovalBody:
        """``approvals.get`` read with this agent's token."""
        return self._client.approvals.get(approval_id, wait=wait, token=self.token, key=self._key, **options)

    def vouch(self, request: VouchRequest, **options: Unpack[RequestOptions]) -> VouchBody:
        """``trust.vouch`` as this agent: for an agent it delegated to."""
        return self._client.trust.vouch(request, token=self.token, key=self._key, **options)

    def withdraw_vouch(self, vouch_id: str, **options: Unpack[RequestOptions]) -> VouchBody:
        """``trust.withdraw_vouch`` as this agent: one of its own vouches."""
        return self._client.trust.withdraw_vouch(vouch_id, token=self.token, key=self._key, **options)

    def trust_statement(self, agent_id: str | None = None, **options: Unpack[RequestOptions]) -> str:
        """This agent's signed trust statement (or ``agent_id``'s), on its token."""
        return self._client.trust.statement(_agent_of(self.token, agent_id), token=self.token, key=self._key, **options)


def _agent_of(token: str, agent_id: str | None) -> str:
    if agent_id is not None:
        return agent_id
    claims = token_claims(token)
    sub = claims.get("sub") if claims is not None else None
    if not isinstance(sub, str):
        raise client_error("invalid_options", "the token names no agent: pass agent_id")
    return sub.removeprefix("agent:")


class AsyncMandate:
    """:class:`Mandate` for asyncio (over ``httpx.AsyncClient``): the same groups and calls, awaited."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        max_retry_delay: float = DEFAULT_MAX_RETRY_DELAY,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self._t = AsyncTransport(
            base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            max_retry_delay=max_retry_delay,
            http=http,
        )
        self.tokens = AsyncTokens(self._t)
        self.records = AsyncRecords(self._t)
        self.approvals = AsyncApprovals(self._t)
        self.agents = AsyncAgents(self._t)
        self.webhooks = AsyncWebhooks(self._t)
        self.trust = AsyncTrust(self._t)
        self.orgs = AsyncOrgs(self._t)
        self.keys = AsyncKeys(self._t)
        self.log = AsyncLog(self._t)
        self.access = AsyncAccess(self._t)
        self.oauth = AsyncOAuth(self._t)

    @property
    def base_url(self) -> str:
        return self._t.base_url

    async def close(self) -> None:
        """Closes the HTTP client the client made (not one it was given)."""
        await self._t.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.close()

    async def me(self, **options: Unpack[RequestOptions]) -> MeBody:
        """``GET /v1/me``."""
        return cast(MeBody, await self._t.call(Call("GET", "/v1/me", **options)))

    async def openapi(self, **options: Unpack[RequestOptions]) -> dict[str, Any]:
        """``GET /v1/openapi.json``."""
        return cast(dict[str, Any], await self._t.call(Call("GET", "/v1/openapi.json", None, **options)))

    def events(
        self,
        *,
        last_event_id: str | None = None,
        on_open: Callable[[], None] | None = None,
        on_drop: Callable[[], None] | None = None,
    ) -> AsyncGenerator[Event, None]:
        """``GET /v1/events``: see :meth:`Mandate.events`; iterate with ``async for``."""
        return async_events(self._t, last_event_id, on_open, on_drop)

    def workflow_url(self, provenance_ref: str) -> str:
        """The dashboard's page of a workflow."""
        return f"{self._t.base_url}/#/workflow/{segment(provenance_ref)}"

    async def remote_verifier(
        self, *, max_staleness_seconds: int, **options: Unpack[RemoteVerifierOptions]
    ) -> AsyncRemoteVerifier:
        """As :meth:`Mandate.remote_verifier`: an :class:`~mandate.remote.AsyncRemoteVerifier`, awaited."""
        return await AsyncRemoteVerifier.create(
            max_staleness_seconds=max_staleness_seconds,
            base_url=self._t.base_url,
            http=self._t.http,
            timeout=self._t.timeout or None,
            **options,
        )

    def as_agent(self, token: str, *, key: ProofKey | None = None, traceparent: str | None = None) -> AsyncAgentMandate:
        """A client acting as the agent holding ``token``."""
        return AsyncAgentMandate(self, token, key=key, traceparent=traceparent)

    async def act(
        self,
        token: str,
        action: str,
        resource: str,
        args: dict[str, Any] | None,
        fn: Callable[[ActContext], Awaitable[T]],
        *,
        spend_usd: float | None = None,
        key: ProofKey | None = None,
        traceparent: str | None = None,
        wait_for_approval: float | None = None,
        on_approval: Callable[[PendingApproval], None] | None = None,
        result_hash: Callable[[T], str | None] | None = None,
        timeout: float | None = None,
    ) -> T:
        """:meth:`Mandate.act` for a coroutine function ``fn`` (a cancelled task completes as ``cancelled``)."""
        options: WriteOptions = {} if timeout is None else {"timeout": timeout}
        request = attempt(action, resource, args, spend_usd)
        offline = check_args_offline(token, request)
        if offline is not None:
            raise offline
        answer = await self.records.authorize(request, token=token, key=key, traceparent=traceparent, **options)
        found = pending_of(self._t.base_url, answer)
        if found is not None:
            ref, pending = found
            if on_approval is not None:
                on_approval(pending)
            if wait_for_approval is None:
                raise still_pending(pending)
            answer = await self.records.await_decision(answer, ref, wait_for_approval, token, key, timeout)
            if pending_of(self._t.base_url, answer) is not None:
                raise still_pending(pending)
        if not answer["authorized"]:
            raise refusal(answer, action, resource)
        context = ActContext(answer["aar_id"], answer["provenance_ref"], answer)
        complete: WriteOptions = {**options, "idempotency_key": _completion_key(answer["aar_id"])}
        try:
            output = await fn(context)
        except BaseException as error:
            try:
                # Shielded: a cancelled task's scope would cancel the completion too.
                await shielded(
                    self.records.complete(
                        answer["aar_id"], failed(error), token=token, key=key, traceparent=traceparent, **complete
                    )
                )
            except UnconfirmedCompletion:
                pass  # The attempt whose answer was lost completed it.
            except MandateError as failure:
                error.add_note(f"mandate: completing {answer['aar_id']} failed too: {failure}")
            raise
        try:
            await self.records.complete(
                answer["aar_id"],
                completion(output, result_hash),
                token=token,
                key=key,
                traceparent=traceparent,
                **complete,
            )
        except UnconfirmedCompletion:
            pass  # The attempt whose answer was lost completed it: nothing else completes this record.
        return output


class AsyncAgentMandate:
    """A client bound to one agent token (``AsyncMandate.as_agent``)."""

    def __init__(
        self, client: AsyncMandate, token: str, *, key: ProofKey | None = None, traceparent: str | None = None
    ) -> None:
        self._client = client
        self.token = token
        self._key = key
        self._traceparent = traceparent

    @property
    def claims(self) -> dict[str, Any] | None:
        """The token's claims, read without any check."""
        return token_claims(self.token)

    async def act(
        self,
        action: str,
        resource: str,
        args: dict[str, Any] | None,
        fn: Callable[[ActContext], Awaitable[T]],
        *,
        spend_usd: float | None = None,
        wait_for_approval: float | None = None,
        on_approval: Callable[[PendingApproval], None] | None = None,
        result_hash: Callable[[T], str | None] | None = None,
        timeout: float | None = None,
    ) -> T:
        """``AsyncMandate.act`` with this agent's token."""
        return await self._client.act(
            self.token,
            action,
            resource,
            args,
            fn,
            spend_usd=spend_usd,
            key=self._key,
            traceparent=self._traceparent,
            wait_for_approval=wait_for_approval,
            on_approval=on_approval,
            result_hash=result_hash,
            timeout=timeout,
        )

    async def authorize(
        self, request: Attempt, *, wait_for_approval: float | None = None, **options: Unpack[WriteOptions]
    ) -> AuthorizeResponse:
        """``records.authorize`` with this agent's token."""
        return await self._client.records.authorize(
            request,
            token=self.token,
            key=self._key,
            traceparent=self._traceparent,
            wait_for_approval=wait_for_approval,
            **options,
        )

    async def record_action(self, request: Mapping[str, Any], **options: Unpack[WriteOptions]) -> RecordActionResponse:
        """``records.record_action`` with this agent's token."""
        return await self._client.records.record_action(
            request, token=self.token, key=self._key, traceparent=self._traceparent, **options
        )

    async def record_actions(
        self, records: list[Mapping[str, Any]], **options: Unpack[WriteOptions]
    ) -> RecordActionsResponse:
        """``records.record_actions`` with this agent's token."""
        return await self._client.records.record_actions(
            records, token=self.token, key=self._key, traceparent=self._traceparent, **options
        )

    async def complete(self, aar_id: str, request: CompleteRequest, **options: Unpack[WriteOptions]) -> RecordBody:
        """``records.complete`` with this agent's token."""
        return await self._client.records.complete(
            aar_id, request, token=self.token, key=self._key, traceparent=self._traceparent, **options
        )

    async def delegate(
        self, request: DelegateRequest, **options: Unpack[WriteOptions]
    ) -> IssuedToken | DelegationAwaitingApproval:
        """``tokens.delegate`` with this agent's token."""
        return await self._client.tokens.delegate(
            request, token=self.token, key=self._key, traceparent=self._traceparent, **options
        )

    async def revoke(self, request: RevokeRequest, **options: Unpack[RequestOptions]) -> RevokeResponse:
        """``tokens.revoke`` with this agent's token."""
        return await self._client.tokens.revoke(request, token=self.token, key=self._key, **options)

    async def approval(
        self, approval_id: str, *, wait: int | None = None, **options: Unpack[RequestOptions]
    ) -> ApprovalBody:
        """``approvals.get`` read with this agent's token."""
        return await self._client.approvals.get(approval_id, wait=wait, token=self.token, key=self._key, **options)

    async def vouch(self, request: VouchRequest, **options: Unpack[RequestOptions]) -> VouchBody:
        """``trust.vouch`` as this agent."""
        return await self._client.trust.vouch(request, token=self.token, key=self._key, **options)

    async def withdraw_vouch(self, vouch_id: str, **options: Unpack[RequestOptions]) -> VouchBody:
        """``trust.withdraw_vouch`` as this agent."""
        return await self._client.trust.withdraw_vouch(vouch_id, token=self.token, key=self._key, **options)

    async def trust_statement(self, agent_id: str | None = None, **options: Unpack[RequestOptions]) -> str:
        """This agent's signed trust statement (or ``agent_id``'s), on its token."""
        agent = _agent_of(self.token, agent_id)
        return await self._client.trust.statement(agent, token=self.token, key=self._key, **options)
