"""Tokens: issue, delegate, revoke, list and read them; the key set and status lists."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any, Unpack, cast

from mandate.client._models import (
    CaptureRequest,
    DelegateRequest,
    DelegationAwaitingApproval,
    IssuedToken,
    IssueL1Request,
    IssueL2Request,
    RevokeRequest,
    RevokeResponse,
    TokenListItem,
    TokenPage,
    TokenStatus,
)
from mandate.client._transport import (
    API_KEY,
    Agent,
    AsyncTransport,
    Call,
    Credential,
    ProofKey,
    RequestOptions,
    Transport,
    WriteOptions,
    query,
    segment,
)


def _issue(path: str, request: object, options: WriteOptions) -> Call:
    return Call("POST", path, API_KEY, request, "write", **options)


def _delegate(
    request: DelegateRequest, token: str, key: ProofKey | None, traceparent: str | None, options: WriteOptions
) -> Call:
    return Call("POST", "/v1/vat/delegate", Agent(token, key), request, "write", traceparent=traceparent, **options)


def _revoke(request: RevokeRequest, token: str | None, key: ProofKey | None, options: RequestOptions) -> Call:
    credential: Credential = API_KEY if token is None else Agent(token, key)
    return Call("POST", "/v1/vat/revoke", credential, request, "once", **options)


def _page(params: dict[str, Any], options: RequestOptions) -> Call:
    return Call("GET", f"/v1/vat/tokens{query(**params)}", **options)


def _status(name: str, limit: int | None, cursor: str | None, options: RequestOptions) -> Call:
    return Call("GET", f"/v1/vat/tokens/{segment(name)}{query(limit=limit, cursor=cursor)}", **options)


def _status_list(name: str, options: RequestOptions) -> Call:
    return Call("GET", f"/v1/vat/status/{segment(name)}", None, accept="application/statuslist+jwt", **options)


def _jwks(options: RequestOptions) -> Call:
    return Call("GET", "/.well-known/jwks.json", None, **options)


class Tokens:
    """``mandate.tokens``: the token calls of the /v1 API."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def issue_root(self, request: IssueL1Request, **options: Unpack[WriteOptions]) -> IssuedToken:
        """``POST /v1/vat/issue/l1``: a root token for an agent, on the API key."""
        return cast(IssuedToken, self._t.call(_issue("/v1/vat/issue/l1", request, options)))

    def issue_l2(self, request: IssueL2Request, **options: Unpack[WriteOptions]) -> IssuedToken:
        """``POST /v1/vat/issue/l2``: a root token at L2, on the API key and the human's OIDC ID token."""
        return cast(IssuedToken, self._t.call(_issue("/v1/vat/issue/l2", request, options)))

    def auth_capture(self, request: CaptureRequest, **options: Unpack[WriteOptions]) -> IssuedToken:
        """``POST /v1/vat/auth/capture``: a root token at L3 once a configured verifier accepts the evidence."""
        return cast(IssuedToken, self._t.call(_issue("/v1/vat/auth/capture", request, options)))

    def delegate(
        self,
        request: DelegateRequest,
        *,
        token: str,
        key: ProofKey | None = None,
        traceparent: str | None = None,
        **options: Unpack[WriteOptions],
    ) -> IssuedToken | DelegationAwaitingApproval:
        """``POST /v1/vat/delegate``: a narrower child token, on the parent token itself.

        A delegation a grant requires approval for answers the pending
        approval (``DelegationAwaitingApproval``): once approved, the same
        call with the same ``idempotency_key`` returns the child token.
        """
        answer = self._t.call(_delegate(request, token, key, traceparent, options))
        return cast(IssuedToken | DelegationAwaitingApproval, answer)

    def revoke(
        self,
        request: RevokeRequest,
        *,
        token: str | None = None,
        key: ProofKey | None = None,
        **options: Unpack[RequestOptions],
    ) -> RevokeResponse:
        """``POST /v1/vat/revoke``: a token and its descendants; on the API key or an ancestor's token. Sent once."""
        return cast(RevokeResponse, self._t.call(_revoke(request, token, key, options)))

    def page(
        self,
        *,
        agent_id: str | None = None,
        human_ref: str | None = None,
        provenance_ref: str | None = None,
        status: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        **options: Unpack[RequestOptions],
    ) -> TokenPage:
        """``GET /v1/vat/tokens``: one page of the organisation's tokens, active first."""
        params = {"agent_id": agent_id, "human_ref": human_ref, "provenance_ref": provenance_ref, "status": status}
        return cast(TokenPage, self._t.call(_page({**params, "limit": limit, "cursor": cursor}, options)))

    def list(
        self,
        *,
        agent_id: str | None = None,
        human_ref: str | None = None,
        provenance_ref: str | None = None,
        status: str | None = None,
        **options: Unpack[RequestOptions],
    ) -> Iterator[TokenListItem]:
        """Every token matching, page after page as iteration goes on."""
        params: dict[str, Any] = {
            "agent_id": agent_id,
            "human_ref": human_ref,
            "provenance_ref": provenance_ref,
            "status": status,
        }
        cursor: str | None = None
        while True:
            page = cast(TokenPage, self._t.call(_page({**params, "cursor": cursor}, options)))
            yield from page["tokens"]
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def status(
        self, name: str, *, limit: int | None = None, cursor: str | None = None, **options: Unpack[RequestOptions]
    ) -> TokenStatus:
        """``GET /v1/vat/tokens/{jth}``: a token's status and a page of its descendants (by jti hash or jti)."""
        return cast(TokenStatus, self._t.call(_status(name, limit, cursor, options)))

    def status_list(self, name: str, **options: Unpack[RequestOptions]) -> str:
        """``GET /v1/vat/status/{list}``: a signed status list (``statuslist+jwt``)."""
        return self._t.request(_status_list(name, options)).text.strip()

    def jwks(self, **options: Unpack[RequestOptions]) -> dict[str, Any]:
        """``GET /.well-known/jwks.json``: the public keys tokens are signed with."""
        return cast(dict[str, Any], self._t.call(_jwks(options)))


class AsyncTokens:
    """``mandate.tokens`` of :class:`AsyncMandate`: as :class:`Tokens`, awaited."""

    def __init__(self, transport: AsyncTransport) -> None:
        self._t = transport

    async def issue_root(self, request: IssueL1Request, **options: Unpack[WriteOptions]) -> IssuedToken:
        """``POST /v1/vat/issue/l1``: a root token for an agent, on the API key."""
        return cast(IssuedToken, await self._t.call(_issue("/v1/vat/issue/l1", request, options)))

    async def issue_l2(self, request: IssueL2Request, **options: Unpack[WriteOptions]) -> IssuedToken:
        """``POST /v1/vat/issue/l2``: a root token at L2."""
        return cast(IssuedToken, await self._t.call(_issue("/v1/vat/issue/l2", request, options)))

    async def auth_capture(self, request: CaptureRequest, **options: Unpack[WriteOptions]) -> IssuedToken:
        """``POST /v1/vat/auth/capture``: a root token at L3."""
        return cast(IssuedToken, await self._t.call(_issue("/v1/vat/auth/capture", request, options)))

    async def delegate(
        self,
        request: DelegateRequest,
        *,
        token: str,
        key: ProofKey | None = None,
        traceparent: str | None = None,
        **options: Unpack[WriteOptions],
    ) -> IssuedToken | DelegationAwaitingApproval:
        """``POST /v1/vat/delegate``: a narrower child token, on the parent token itself."""
        answer = await self._t.call(_delegate(request, token, key, traceparent, options))
        return cast(IssuedToken | DelegationAwaitingApproval, answer)

    async def revoke(
        self,
        request: RevokeRequest,
        *,
        token: str | None = None,
        key: ProofKey | None = None,
        **options: Unpack[RequestOptions],
    ) -> RevokeResponse:
        """``POST /v1/vat/revoke``: a token and its descendants. Sent once."""
        return cast(RevokeResponse, await self._t.call(_revoke(request, token, key, options)))

    async def page(
        self,
        *,
        agent_id: str | None = None,
        human_ref: str | None = None,
        provenance_ref: str | None = None,
        status: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        **options: Unpack[RequestOptions],
    ) -> TokenPage:
        """``GET /v1/vat/tokens``: one page of the organisation's tokens."""
        params = {"agent_id": agent_id, "human_ref": human_ref, "provenance_ref": provenance_ref, "status": status}
        return cast(TokenPage, await self._t.call(_page({**params, "limit": limit, "cursor": cursor}, options)))

    async def list(
        self,
        *,
        agent_id: str | None = None,
        human_ref: str | None = None,
        provenance_ref: str | None = None,
        status: str | None = None,
        **options: Unpack[RequestOptions],
    ) -> AsyncIterator[TokenListItem]:
        """Every token matching, page after page as iteration goes on."""
        params: dict[str, Any] = {
            "agent_id": agent_id,
            "human_ref": human_ref,
            "provenance_ref": provenance_ref,
            "status": status,
        }
        cursor: str | None = None
        while True:
            page = cast(TokenPage, await self._t.call(_page({**params, "cursor": cursor}, options)))
            for item in page["tokens"]:
                yield item
            cursor = page.get("next_cursor")
            if not cursor:
                return

    async def status(
        self, name: str, *, limit: int | None = None, cursor: str | None = None, **options: Unpack[RequestOptions]
    ) -> TokenStatus:
        """``GET /v1/vat/tokens/{jth}``: a token's status and a page of its descendants."""
        return cast(TokenStatus, await self._t.call(_status(name, limit, cursor, options)))

    async def status_list(self, name: str, **options: Unpack[RequestOptions]) -> str:
        """``GET /v1/vat/status/{list}``: a signed status list."""
        return (await self._t.request(_status_list(name, options))).text.strip()

    async def jwks(self, **options: Unpack[RequestOptions]) -> dict[str, Any]:
        """``GET /.well-known/jwks.json``: the public keys tokens are signed with."""
        return cast(dict[str, Any], await self._t.call(_jwks(options)))
