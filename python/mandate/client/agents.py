"""Agents: the organisation's agents, their history and reputation."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Unpack, cast

from mandate.client._models import AgentHistoryBody, AgentListItem, AgentPage, ReputationBody
from mandate.client._transport import AsyncTransport, Call, RequestOptions, Transport, query, segment


def _page(params: dict[str, str | int | None], options: RequestOptions) -> Call:
    return Call("GET", f"/v1/vat/agents{query(**params)}", **options)


def _history(agent_id: str, days: int | None, options: RequestOptions) -> Call:
    return Call("GET", f"/v1/vat/agents/{segment(agent_id)}/history{query(days=days)}", **options)


def _reputation(agent_id: str, options: RequestOptions) -> Call:
    return Call("GET", f"/v1/vat/reputation/{segment(agent_id)}", **options)


class Agents:
    """``mandate.agents``: the organisation's agents."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def page(self, *, options: RequestOptions | None = None, **params: str | int | None) -> AgentPage:
        """``GET /v1/vat/agents``: one page of agents (``window``, ``q``, ``sort``, ``order``, ``limit``, ``cursor``)."""
        return cast(AgentPage, self._t.call(_page(params, options or {})))

    def list(self, *, options: RequestOptions | None = None, **params: str | int | None) -> Iterator[AgentListItem]:
        """Every agent matching ``params``, in its order, page after page."""
        params.pop("cursor", None)
        cursor: str | None = None
        while True:
            page = self.page(options=options, **params, cursor=cursor)
            yield from page["agents"]
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def history(self, agent_id: str, *, days: int | None = None, **options: Unpack[RequestOptions]) -> AgentHistoryBody:
        """``GET /v1/vat/agents/{agent_id}/history``: the agent's last ``days`` UTC days."""
        return cast(AgentHistoryBody, self._t.call(_history(agent_id, days, options)))

    def reputation(self, agent_id: str, **options: Unpack[RequestOptions]) -> ReputationBody:
        """``GET /v1/vat/reputation/{agent_id}``; the id bare or as ``agent:<id>``."""
        return cast(ReputationBody, self._t.call(_reputation(agent_id, options)))


class AsyncAgents:
    """``mandate.agents`` of :class:`AsyncMandate`: as :class:`Agents`, awaited."""

    def __init__(self, transport: AsyncTransport) -> None:
        self._t = transport

    async def page(self, *, options: RequestOptions | None = None, **params: str | int | None) -> AgentPage:
        """``GET /v1/vat/agents``: one page of agents."""
        return cast(AgentPage, await self._t.call(_page(params, options or {})))

    async def list(
        self, *, options: RequestOptions | None = None, **params: str | int | None
    ) -> AsyncIterator[AgentListItem]:
        """Every agent matching ``params``, page after page."""
        params.pop("cursor", None)
        cursor: str | None = None
        while True:
            page = await self.page(options=options, **params, cursor=cursor)
            for agent in page["agents"]:
                yield agent
            cursor = page.get("next_cursor")
            if not cursor:
                return

    async def history(
        self, agent_id: str, *, days: int | None = None, **options: Unpack[RequestOptions]
    ) -> AgentHistoryBody:
        """``GET /v1/vat/agents/{agent_id}/history``."""
        return cast(AgentHistoryBody, await self._t.call(_history(agent_id, days, options)))

    async def reputation(self, agent_id: str, **options: Unpack[RequestOptions]) -> ReputationBody:
        """``GET /v1/vat/reputation/{agent_id}``."""
        return cast(ReputationBody, await self._t.call(_reputation(agent_id, options)))
