"""Agents: the organisation's agents, their history and reputation."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Unpack, cast

from mandate.client._models import AgentHistoryBody, AgentListItem, AgentPage, ReputationBody
from mandate.client._transport import AsyncTransport, Call, RequestOptions, Transport, query, segment, split


class AgentQuery(RequestOptions, total=False):
    """The choices of ``GET /v1/vat/agents`` (and the call's options)."""

    #: The counts' window: ``24h``, ``7d`` (the default) or ``30d``.
    window: str
    #: Agents whose id contains this.
    q: str
    sort: str
    order: str
    limit: int
    cursor: str


def _page(given: Mapping[str, object]) -> Call:
    params, options = split(given)
    return Call("GET", f"/v1/vat/agents{query(**params)}", **options)


def _history(agent_id: str, days: int | None, options: RequestOptions) -> Call:
    return Call("GET", f"/v1/vat/agents/{segment(agent_id)}/history{query(days=days)}", **options)


def _reputation(agent_id: str, options: RequestOptions) -> Call:
    return Call("GET", f"/v1/vat/reputation/{segment(agent_id)}", **options)


class Agents:
    """``mandate.agents``: the organisation's agents."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def page(self, **query: Unpack[AgentQuery]) -> AgentPage:
        """``GET /v1/vat/agents``: one page of the organisation's agents, with scores and counts."""
        return cast(AgentPage, self._t.call(_page(query)))

    def list(self, **query: Unpack[AgentQuery]) -> Iterator[AgentListItem]:
        """Every agent, in the order asked, page after page."""
        current: AgentQuery = {**query}
        while True:
            page = self.page(**current)
            yield from page["agents"]
            cursor = page.get("next_cursor")
            if not cursor:
                return
            current["cursor"] = cursor

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

    async def page(self, **query: Unpack[AgentQuery]) -> AgentPage:
        """``GET /v1/vat/agents``: one page of the organisation's agents."""
        return cast(AgentPage, await self._t.call(_page(query)))

    async def list(self, **query: Unpack[AgentQuery]) -> AsyncIterator[AgentListItem]:
        """Every agent, in the order asked, page after page."""
        current: AgentQuery = {**query}
        while True:
            page = await self.page(**current)
            for agent in page["agents"]:
                yield agent
            cursor = page.get("next_cursor")
            if not cursor:
                return
            current["cursor"] = cursor

    async def history(
        self, agent_id: str, *, days: int | None = None, **options: Unpack[RequestOptions]
    ) -> AgentHistoryBody:
        """``GET /v1/vat/agents/{agent_id}/history``."""
        return cast(AgentHistoryBody, await self._t.call(_history(agent_id, days, options)))

    async def reputation(self, agent_id: str, **options: Unpack[RequestOptions]) -> ReputationBody:
        """``GET /v1/vat/reputation/{agent_id}``."""
        return cast(ReputationBody, await self._t.call(_reputation(agent_id, options)))
