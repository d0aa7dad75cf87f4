"""The record log: its signed checkpoint, its keys, consistency proofs."""

from __future__ import annotations

from typing import Unpack, cast

from mandate.client._models import ConsistencyBody
from mandate.client._transport import AsyncTransport, Call, RequestOptions, Transport, query


def _text(path: str, options: RequestOptions) -> Call:
    return Call("GET", path, None, accept="text/plain", **options)


def _consistency(old: int, new: int, options: RequestOptions) -> Call:
    return Call("GET", f"/v1/log/consistency{query(old=old, new=new)}", **options)


class Log:
    """``mandate.log``: the transparency log of records."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def checkpoint(self, **options: Unpack[RequestOptions]) -> str:
        """``GET /v1/log/checkpoint``: the latest signed checkpoint (a C2SP signed note)."""
        return self._t.request(_text("/v1/log/checkpoint", options)).text

    def key(self, **options: Unpack[RequestOptions]) -> str:
        """``GET /v1/log/key``: the log's verifier keys, one a line, the active one first."""
        return self._t.request(_text("/v1/log/key", options)).text

    def consistency(self, old: int, new: int, **options: Unpack[RequestOptions]) -> ConsistencyBody:
        """``GET /v1/log/consistency``: the proof that the tree of ``new`` leaves extends that of ``old``."""
        return cast(ConsistencyBody, self._t.call(_consistency(old, new, options)))


class AsyncLog:
    """``mandate.log`` of :class:`AsyncMandate`: as :class:`Log`, awaited."""

    def __init__(self, transport: AsyncTransport) -> None:
        self._t = transport

    async def checkpoint(self, **options: Unpack[RequestOptions]) -> str:
        """``GET /v1/log/checkpoint``."""
        return (await self._t.request(_text("/v1/log/checkpoint", options))).text

    async def key(self, **options: Unpack[RequestOptions]) -> str:
        """``GET /v1/log/key``."""
        return (await self._t.request(_text("/v1/log/key", options))).text

    async def consistency(self, old: int, new: int, **options: Unpack[RequestOptions]) -> ConsistencyBody:
        """``GET /v1/log/consistency``."""
        return cast(ConsistencyBody, await self._t.call(_consistency(old, new, options)))
