"""Approvals: read (and wait for) them, list them, decide them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Unpack, cast

from mandate.client._models import ApprovalBody, ApprovalPage, DecisionRequest
from mandate.client._transport import (
    API_KEY,
    AsyncTransport,
    Call,
    ProofKey,
    Relay,
    RequestOptions,
    Transport,
    query,
    segment,
)
from mandate.client.records import approval_call


def _page(status: str | None, limit: int | None, cursor: str | None, options: RequestOptions) -> Call:
    return Call("GET", f"/v1/vat/approvals{query(status=status, limit=limit, cursor=cursor)}", **options)


def _decide(approval_id: str, request: DecisionRequest, options: RequestOptions) -> Call:
    path = f"/v1/vat/approvals/{segment(approval_id)}/decision"
    return Call("POST", path, API_KEY, request, "once", **options)


def approval_url(base_url: str, approval_id: str) -> str:
    """The dashboard's page of an approval, where a reviewer decides it."""
    return f"{base_url}/#/approval/{segment(approval_id)}"


class Approvals:
    """``mandate.approvals``: the approvals of the /v1 API."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def get(
        self,
        approval_id: str,
        *,
        wait: int | None = None,
        token: str | None = None,
        key: ProofKey | None = None,
        relay: Relay | None = None,
        **options: Unpack[RequestOptions],
    ) -> ApprovalBody:
        """``GET /v1/vat/approvals/{approval_id}``; with ``wait`` (0–30 s), answered once decided or after it.

        Read with the API key, or with the agent's ``token`` (and ``key`` when bound, or an MCP gate's
        ``relay``, whose proof alone reads an approval of a record it authorized).
        """
        return cast(ApprovalBody, self._t.call(approval_call(approval_id, wait, token, key, options, relay)))

    def page(
        self,
        *,
        status: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        **options: Unpack[RequestOptions],
    ) -> ApprovalPage:
        """``GET /v1/vat/approvals``: one page of the organisation's approvals, newest first."""
        return cast(ApprovalPage, self._t.call(_page(status, limit, cursor, options)))

    def list(self, *, status: str | None = None, **options: Unpack[RequestOptions]) -> Iterator[ApprovalBody]:
        """Every approval (with ``status``), newest first, page after page."""
        cursor: str | None = None
        while True:
            page = self.page(status=status, cursor=cursor, **options)
            yield from page["approvals"]
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def decide(self, approval_id: str, request: DecisionRequest, **options: Unpack[RequestOptions]) -> ApprovalBody:
        """``POST /v1/vat/approvals/{approval_id}/decision``: approves or denies, on a reviewer's key."""
        return cast(ApprovalBody, self._t.call(_decide(approval_id, request, options)))

    def url(self, approval_id: str) -> str:
        """The dashboard's page of an approval."""
        return approval_url(self._t.base_url, approval_id)


class AsyncApprovals:
    """``mandate.approvals`` of :class:`AsyncMandate`: as :class:`Approvals`, awaited."""

    def __init__(self, transport: AsyncTransport) -> None:
        self._t = transport

    async def get(
        self,
        approval_id: str,
        *,
        wait: int | None = None,
        token: str | None = None,
        key: ProofKey | None = None,
        relay: Relay | None = None,
        **options: Unpack[RequestOptions],
    ) -> ApprovalBody:
        """``GET /v1/vat/approvals/{approval_id}``; see :meth:`Approvals.get`."""
        return cast(ApprovalBody, await self._t.call(approval_call(approval_id, wait, token, key, options, relay)))

    async def page(
        self,
        *,
        status: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        **options: Unpack[RequestOptions],
    ) -> ApprovalPage:
        """``GET /v1/vat/approvals``: one page of the organisation's approvals."""
        return cast(ApprovalPage, await self._t.call(_page(status, limit, cursor, options)))

    async def list(
        self, *, status: str | None = None, **options: Unpack[RequestOptions]
    ) -> AsyncIterator[ApprovalBody]:
        """Every approval (with ``status``), newest first, page after page."""
        cursor: str | None = None
        while True:
            page = await self.page(status=status, cursor=cursor, **options)
            for approval in page["approvals"]:
                yield approval
            cursor = page.get("next_cursor")
            if not cursor:
                return

    async def decide(
        self, approval_id: str, request: DecisionRequest, **options: Unpack[RequestOptions]
    ) -> ApprovalBody:
        """``POST /v1/vat/approvals/{approval_id}/decision``: approves or denies."""
        return cast(ApprovalBody, await self._t.call(_decide(approval_id, request, options)))

    def url(self, approval_id: str) -> str:
        """The dashboard's page of an approval."""
        return approval_url(self._t.base_url, approval_id)
