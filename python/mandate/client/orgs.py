"""Organisations (the admin key) and API keys (an owner key)."""

from __future__ import annotations

from typing import Unpack, cast

from mandate.client._models import (
    CreateKeyRequest,
    CreateOrgRequest,
    IssuedKeyBody,
    KeyBody,
    KeyList,
    OrgBody,
    OrgCreatedBody,
    OrgPage,
    UpdateOrgRequest,
)
from mandate.client._transport import API_KEY, AsyncTransport, Call, RequestOptions, Transport, query, segment


def _orgs(limit: int | None, cursor: str | None, options: RequestOptions) -> Call:
    return Call("GET", f"/v1/orgs{query(limit=limit, cursor=cursor)}", **options)


class Orgs:
    """``mandate.orgs``: the deployment's organisations, on the admin key."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def create(self, request: CreateOrgRequest, **options: Unpack[RequestOptions]) -> OrgCreatedBody:
        """``POST /v1/orgs``: a new organisation and its first owner key, shown only in this answer."""
        return cast(OrgCreatedBody, self._t.call(Call("POST", "/v1/orgs", API_KEY, request, "once", **options)))

    def list(
        self, *, limit: int | None = None, cursor: str | None = None, **options: Unpack[RequestOptions]
    ) -> OrgPage:
        """``GET /v1/orgs``: one page of organisations, oldest first."""
        return cast(OrgPage, self._t.call(_orgs(limit, cursor, options)))

    def update(self, org_id: str, request: UpdateOrgRequest, **options: Unpack[RequestOptions]) -> OrgBody:
        """``PATCH /v1/orgs/{org_id}``: replaces an organisation's quotas."""
        call = Call("PATCH", f"/v1/orgs/{segment(org_id)}", API_KEY, request, "once", **options)
        return cast(OrgBody, self._t.call(call))


class Keys:
    """``mandate.keys``: the organisation's API keys, on an owner key."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def create(self, request: CreateKeyRequest, **options: Unpack[RequestOptions]) -> IssuedKeyBody:
        """``POST /v1/keys``: a new API key, shown only in this answer."""
        return cast(IssuedKeyBody, self._t.call(Call("POST", "/v1/keys", API_KEY, request, "once", **options)))

    def list(self, **options: Unpack[RequestOptions]) -> KeyList:
        """``GET /v1/keys``: the organisation's API keys, newest first."""
        return cast(KeyList, self._t.call(Call("GET", "/v1/keys", **options)))

    def revoke(self, key_id: str, **options: Unpack[RequestOptions]) -> KeyBody:
        """``DELETE /v1/keys/{key_id}``: revokes an API key at once."""
        return cast(KeyBody, self._t.call(Call("DELETE", f"/v1/keys/{segment(key_id)}", retry="once", **options)))


class AsyncOrgs:
    """``mandate.orgs`` of :class:`AsyncMandate`: as :class:`Orgs`, awaited."""

    def __init__(self, transport: AsyncTransport) -> None:
        self._t = transport

    async def create(self, request: CreateOrgRequest, **options: Unpack[RequestOptions]) -> OrgCreatedBody:
        """``POST /v1/orgs``."""
        return cast(OrgCreatedBody, await self._t.call(Call("POST", "/v1/orgs", API_KEY, request, "once", **options)))

    async def list(
        self, *, limit: int | None = None, cursor: str | None = None, **options: Unpack[RequestOptions]
    ) -> OrgPage:
        """``GET /v1/orgs``."""
        return cast(OrgPage, await self._t.call(_orgs(limit, cursor, options)))

    async def update(self, org_id: str, request: UpdateOrgRequest, **options: Unpack[RequestOptions]) -> OrgBody:
        """``PATCH /v1/orgs/{org_id}``."""
        call = Call("PATCH", f"/v1/orgs/{segment(org_id)}", API_KEY, request, "once", **options)
        return cast(OrgBody, await self._t.call(call))


class AsyncKeys:
    """``mandate.keys`` of :class:`AsyncMandate`: as :class:`Keys`, awaited."""

    def __init__(self, transport: AsyncTransport) -> None:
        self._t = transport

    async def create(self, request: CreateKeyRequest, **options: Unpack[RequestOptions]) -> IssuedKeyBody:
        """``POST /v1/keys``."""
        return cast(IssuedKeyBody, await self._t.call(Call("POST", "/v1/keys", API_KEY, request, "once", **options)))

    async def list(self, **options: Unpack[RequestOptions]) -> KeyList:
        """``GET /v1/keys``."""
        return cast(KeyList, await self._t.call(Call("GET", "/v1/keys", **options)))

    async def revoke(self, key_id: str, **options: Unpack[RequestOptions]) -> KeyBody:
        """``DELETE /v1/keys/{key_id}``."""
        call = Call("DELETE", f"/v1/keys/{segment(key_id)}", retry="once", **options)
        return cast(KeyBody, await self._t.call(call))
