"""Mandate as an OAuth authorization server (docs/oauth.md): its metadata, its token endpoint and the
organisation's pre-registered public clients (an owner key, ``manage_clients``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Unpack, cast

from mandate.client._models import (
    AuthorizationServerMetadata,
    ClientBody,
    ClientList,
    CreateClientRequest,
)
from mandate.client._transport import API_KEY, AsyncTransport, Call, RequestOptions, Transport, segment

_CLIENTS = "/v1/oauth/clients"


def _metadata(options: RequestOptions) -> Call:
    return Call("GET", "/.well-known/oauth-authorization-server", None, **options)


def _token(form: Mapping[str, str], options: RequestOptions) -> Call:
    # Sent once: a code or a refresh token is good for one use.
    return Call("POST", "/v1/oauth/token", None, form, "once", form=True, **options)


def _create(request: CreateClientRequest, options: RequestOptions) -> Call:
    return Call("POST", _CLIENTS, API_KEY, request, "once", **options)


def _open(request: str, options: RequestOptions) -> Call:
    return Call("POST", "/v1/oauth/requests/open", API_KEY, {"request": request}, "read", **options)


def _decide(body: Mapping[str, Any], options: RequestOptions) -> Call:
    # Sent once: a second approval of one request is refused (409).
    return Call("POST", "/v1/oauth/requests/decision", API_KEY, body, "once", **options)


def _delete(client_id: str, options: RequestOptions) -> Call:
    return Call("DELETE", f"{_CLIENTS}/{segment(client_id)}", retry="once", **options)


class OAuth:
    """``mandate.oauth``: the authorization server (docs/oauth.md)."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def metadata(self, **options: Unpack[RequestOptions]) -> AuthorizationServerMetadata:
        """``GET /.well-known/oauth-authorization-server``: the RFC 8414 metadata."""
        return cast(AuthorizationServerMetadata, self._t.call(_metadata(options)))

    def token(self, form: Mapping[str, str], **options: Unpack[RequestOptions]) -> dict[str, Any]:
        """``POST /v1/oauth/token``: a token request, sent as a form (RFC 6749 §3.2)."""
        return cast(dict[str, Any], self._t.call(_token(form, options)))

    def create_client(self, request: CreateClientRequest, **options: Unpack[RequestOptions]) -> ClientBody:
        """``POST /v1/oauth/clients``: registers a public client; its ``client_id`` is ``mcl_…``."""
        return cast(ClientBody, self._t.call(_create(request, options)))

    def list_clients(self, **options: Unpack[RequestOptions]) -> ClientList:
        """``GET /v1/oauth/clients``: the organisation's clients, newest first."""
        return cast(ClientList, self._t.call(Call("GET", _CLIENTS, **options)))

    def delete_client(self, client_id: str, **options: Unpack[RequestOptions]) -> None:
        """``DELETE /v1/oauth/clients/{client_id}``."""
        self._t.request(_delete(client_id, options))

    def open_request(self, request: str, **options: Unpack[RequestOptions]) -> dict[str, Any]:
        """``POST /v1/oauth/requests/open``: what a sealed authorization request asks."""
        return cast(dict[str, Any], self._t.call(_open(request, options)))

    def decide_request(self, body: Mapping[str, Any], **options: Unpack[RequestOptions]) -> dict[str, Any]:
        """``POST /v1/oauth/requests/decision``: approve (with the grant chosen) or deny; answers the redirect."""
        return cast(dict[str, Any], self._t.call(_decide(body, options)))


class AsyncOAuth:
    """``mandate.oauth`` of :class:`AsyncMandate`: as :class:`OAuth`, awaited."""

    def __init__(self, transport: AsyncTransport) -> None:
        self._t = transport

    async def metadata(self, **options: Unpack[RequestOptions]) -> AuthorizationServerMetadata:
        """``GET /.well-known/oauth-authorization-server``."""
        return cast(AuthorizationServerMetadata, await self._t.call(_metadata(options)))

    async def token(self, form: Mapping[str, str], **options: Unpack[RequestOptions]) -> dict[str, Any]:
        """``POST /v1/oauth/token``."""
        return cast(dict[str, Any], await self._t.call(_token(form, options)))

    async def create_client(self, request: CreateClientRequest, **options: Unpack[RequestOptions]) -> ClientBody:
        """``POST /v1/oauth/clients``."""
        return cast(ClientBody, await self._t.call(_create(request, options)))

    async def list_clients(self, **options: Unpack[RequestOptions]) -> ClientList:
        """``GET /v1/oauth/clients``."""
        return cast(ClientList, await self._t.call(Call("GET", _CLIENTS, **options)))

    async def open_request(self, request: str, **options: Unpack[RequestOptions]) -> dict[str, Any]:
        """``POST /v1/oauth/requests/open``: what a sealed authorization request asks."""
        return cast(dict[str, Any], await self._t.call(_open(request, options)))

    async def decide_request(self, body: Mapping[str, Any], **options: Unpack[RequestOptions]) -> dict[str, Any]:
        """``POST /v1/oauth/requests/decision``: approve (with the grant chosen) or deny; answers the redirect."""
        return cast(dict[str, Any], await self._t.call(_decide(body, options)))

    async def delete_client(self, client_id: str, **options: Unpack[RequestOptions]) -> None:
        """``DELETE /v1/oauth/clients/{client_id}``."""
        await self._t.request(_delete(client_id, options))
