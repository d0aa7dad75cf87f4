"""Trust: vouches, an agent's trust and signed statement, the trust graph."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Unpack, cast

from mandate.client._models import AgentTrustBody, TrustGraphPage, VouchBody, VouchRequest
from mandate.client._transport import (
    API_KEY,
    Agent,
    AsyncTransport,
    Call,
    Credential,
    ProofKey,
    RequestOptions,
    Transport,
    query,
    segment,
)


def _as(token: str | None, key: ProofKey | None) -> Credential:
    return API_KEY if token is None else Agent(token, key)


def _vouch(request: VouchRequest, token: str | None, key: ProofKey | None, options: RequestOptions) -> Call:
    return Call("POST", "/v1/trust/vouches", _as(token, key), request, "once", **options)


def _withdraw(vouch_id: str, token: str | None, key: ProofKey | None, options: RequestOptions) -> Call:
    return Call("DELETE", f"/v1/trust/vouches/{segment(vouch_id)}", _as(token, key), retry="once", **options)


def _graph(limit: int | None, cursor: str | None, options: RequestOptions) -> Call:
    return Call("GET", f"/v1/trust/graph{query(limit=limit, cursor=cursor)}", **options)


def _statement(agent_id: str, token: str | None, key: ProofKey | None, options: RequestOptions) -> Call:
    path = f"/v1/trust/agents/{segment(agent_id)}/statement"
    return Call("GET", path, _as(token, key), accept="application/trust-statement+jwt", **options)


class Trust:
    """``mandate.trust``: vouches and trust of the /v1 API."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def vouch(
        self,
        request: VouchRequest,
        *,
        token: str | None = None,
        key: ProofKey | None = None,
        **options: Unpack[RequestOptions],
    ) -> VouchBody:
        """``POST /v1/trust/vouches``: on the API key, or as the agent holding ``token`` for one it delegated to."""
        return cast(VouchBody, self._t.call(_vouch(request, token, key, options)))

    def withdraw_vouch(
        self, vouch_id: str, *, token: str | None = None, key: ProofKey | None = None, **options: Unpack[RequestOptions]
    ) -> VouchBody:
        """``DELETE /v1/trust/vouches/{vouch_id}``: withdraws a vouch, by its voucher or an owner key."""
        return cast(VouchBody, self._t.call(_withdraw(vouch_id, token, key, options)))

    def agent(self, agent_id: str, **options: Unpack[RequestOptions]) -> AgentTrustBody:
        """``GET /v1/trust/agents/{agent_id}``: the agent's trust, its parts and its active vouches."""
        call = Call("GET", f"/v1/trust/agents/{segment(agent_id)}", **options)
        return cast(AgentTrustBody, self._t.call(call))

    def statement(
        self, agent_id: str, *, token: str | None = None, key: ProofKey | None = None, **options: Unpack[RequestOptions]
    ) -> str:
        """``GET /v1/trust/agents/{agent_id}/statement``: the agent's signed trust statement (a compact JWT)."""
        return self._t.request(_statement(agent_id, token, key, options)).text.strip()

    def graph_page(
        self, *, limit: int | None = None, cursor: str | None = None, **options: Unpack[RequestOptions]
    ) -> TrustGraphPage:
        """``GET /v1/trust/graph``: one page of the trust graph, agents in id order with their vouches."""
        return cast(TrustGraphPage, self._t.call(_graph(limit, cursor, options)))

    def graph(self, **options: Unpack[RequestOptions]) -> Iterator[TrustGraphPage]:
        """The whole trust graph, page after page."""
        cursor: str | None = None
        while True:
            page = self.graph_page(cursor=cursor, **options)
            yield page
            cursor = page.get("next_cursor")
            if not cursor:
                return


class AsyncTrust:
    """``mandate.trust`` of :class:`AsyncMandate`: as :class:`Trust`, awaited."""

    def __init__(self, transport: AsyncTransport) -> None:
        self._t = transport

    async def vouch(
        self,
        request: VouchRequest,
        *,
        token: str | None = None,
        key: ProofKey | None = None,
        **options: Unpack[RequestOptions],
    ) -> VouchBody:
        """``POST /v1/trust/vouches``."""
        return cast(VouchBody, await self._t.call(_vouch(request, token, key, options)))

    async def withdraw_vouch(
        self, vouch_id: str, *, token: str | None = None, key: ProofKey | None = None, **options: Unpack[RequestOptions]
    ) -> VouchBody:
        """``DELETE /v1/trust/vouches/{vouch_id}``."""
        return cast(VouchBody, await self._t.call(_withdraw(vouch_id, token, key, options)))

    async def agent(self, agent_id: str, **options: Unpack[RequestOptions]) -> AgentTrustBody:
        """``GET /v1/trust/agents/{agent_id}``."""
        call = Call("GET", f"/v1/trust/agents/{segment(agent_id)}", **options)
        return cast(AgentTrustBody, await self._t.call(call))

    async def statement(
        self, agent_id: str, *, token: str | None = None, key: ProofKey | None = None, **options: Unpack[RequestOptions]
    ) -> str:
        """``GET /v1/trust/agents/{agent_id}/statement``."""
        return (await self._t.request(_statement(agent_id, token, key, options))).text.strip()

    async def graph_page(
        self, *, limit: int | None = None, cursor: str | None = None, **options: Unpack[RequestOptions]
    ) -> TrustGraphPage:
        """``GET /v1/trust/graph``."""
        return cast(TrustGraphPage, await self._t.call(_graph(limit, cursor, options)))

    async def graph(self, **options: Unpack[RequestOptions]) -> AsyncIterator[TrustGraphPage]:
        """The whole trust graph, page after page."""
        cursor: str | None = None
        while True:
            page = await self.graph_page(cursor=cursor, **options)
            yield page
            cursor = page.get("next_cursor")
            if not cursor:
                return
