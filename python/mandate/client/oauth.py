"""Mandate as an OAuth authorization server (docs/oauth.md): its metadata, its token and revocation
endpoints, the organisation's pre-registered public clients (an owner key, ``manage_clients``) and the
grants clients hold."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Unpack, cast

from mandate.client._models import (
    AuthorizationServerMetadata,
    ClientBody,
    ClientList,
    CreateClientRequest,
    CreateResourceRequest,
    GrantList,
    ResourceBody,
    ResourceList,
    SignInProviders,
)
from mandate.client._transport import (
    API_KEY,
    AsyncTransport,
    Call,
    Holder,
    HolderKey,
    RequestOptions,
    Transport,
    query,
    segment,
)

_CLIENTS = "/v1/oauth/clients"
_GRANTS = "/v1/oauth/grants"
_RESOURCES = "/v1/oauth/resources"


def _metadata(options: RequestOptions) -> Call:
    return Call("GET", "/.well-known/oauth-authorization-server", None, **options)


def _token(form: Mapping[str, str], dpop_key: HolderKey | None, options: RequestOptions) -> Call:
    # Sent once: a code or a refresh token is good for one use.
    credential = None if dpop_key is None else Holder(dpop_key)
    return Call("POST", "/v1/oauth/token", credential, form, "once", form=True, **options)


def _revoke(form: Mapping[str, str], options: RequestOptions) -> Call:
    # Revoking twice is harmless (RFC 7009 §2.2 answers 200 either way).
    return Call("POST", "/v1/oauth/revoke", None, form, "once", form=True, **options)


def _grants(
    human_ref: str | None, client_id: str | None, limit: int | None, cursor: str | None, options: RequestOptions
) -> Call:
    path = f"{_GRANTS}{query(human_ref=human_ref, client_id=client_id, limit=limit, cursor=cursor)}"
    return Call("GET", path, **options)


def _revoke_grant(grant_id: str, options: RequestOptions) -> Call:
    return Call("DELETE", f"{_GRANTS}/{segment(grant_id)}", retry="once", **options)


def _create(request: CreateClientRequest, options: RequestOptions) -> Call:
    return Call("POST", _CLIENTS, API_KEY, request, "once", **options)


def _sign_in_providers(options: RequestOptions) -> Call:
    return Call("GET", "/v1/oauth/oidc/providers", None, **options)


def _open(request: str, options: RequestOptions) -> Call:
    return Call("POST", "/v1/oauth/requests/open", API_KEY, {"request": request}, "read", **options)


def _decide(body: Mapping[str, Any], options: RequestOptions) -> Call:
    # Sent once: a second approval of one request is refused (409).
    return Call("POST", "/v1/oauth/requests/decision", API_KEY, body, "once", **options)


def _delete(client_id: str, options: RequestOptions) -> Call:
    return Call("DELETE", f"{_CLIENTS}/{segment(client_id)}", retry="once", **options)


def _create_resource(request: CreateResourceRequest, options: RequestOptions) -> Call:
    return Call("POST", _RESOURCES, API_KEY, request, "once", **options)


def _delete_resource(resource_id: str, options: RequestOptions) -> Call:
    return Call("DELETE", f"{_RESOURCES}/{segment(resource_id)}", retry="once", **options)


class OAuth:
    """``mandate.oauth``: the authorization server (docs/oauth.md)."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def metadata(self, **options: Unpack[RequestOptions]) -> AuthorizationServerMetadata:
        """``GET /.well-known/oauth-authorization-server``: the RFC 8414 metadata."""
        return cast(AuthorizationServerMetadata, self._t.call(_metadata(options)))

    def token(
        self, form: Mapping[str, str], *, dpop_key: HolderKey | None = None, **options: Unpack[RequestOptions]
    ) -> dict[str, Any]:
        """``POST /v1/oauth/token``: a token request, sent as a form (RFC 6749 §3.2). With ``dpop_key`` (an
        ``AgentKey``) it carries that key's DPoP proof (RFC 9449 §5): the tokens issued are bound to the key, and a
        bound grant's refresh or a bound subject's exchange needs it."""
        return cast(dict[str, Any], self._t.call(_token(form, dpop_key, options)))

    def revoke(self, form: Mapping[str, str], **options: Unpack[RequestOptions]) -> None:
        """``POST /v1/oauth/revoke``: revokes a refresh token (its whole grant) or an access token (RFC 7009)."""
        self._t.request(_revoke(form, options))

    def list_grants(
        self,
        *,
        human_ref: str | None = None,
        client_id: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        **options: Unpack[RequestOptions],
    ) -> GrantList:
        """``GET /v1/oauth/grants``: a page of the grants clients hold, newest first (a developer key: its own
        human's); pass ``next_cursor`` back as ``cursor`` for the next."""
        return cast(GrantList, self._t.call(_grants(human_ref, client_id, limit, cursor, options)))

    def revoke_grant(self, grant_id: str, **options: Unpack[RequestOptions]) -> None:
        """``DELETE /v1/oauth/grants/{grant_id}``: ends the grant and revokes its root with everything under it."""
        self._t.request(_revoke_grant(grant_id, options))

    def create_client(self, request: CreateClientRequest, **options: Unpack[RequestOptions]) -> ClientBody:
        """``POST /v1/oauth/clients``: registers a public client; its ``client_id`` is ``mcl_…``."""
        return cast(ClientBody, self._t.call(_create(request, options)))

    def list_clients(self, **options: Unpack[RequestOptions]) -> ClientList:
        """``GET /v1/oauth/clients``: the organisation's clients, newest first."""
        return cast(ClientList, self._t.call(Call("GET", _CLIENTS, **options)))

    def delete_client(self, client_id: str, **options: Unpack[RequestOptions]) -> None:
        """``DELETE /v1/oauth/clients/{client_id}``."""
        self._t.request(_delete(client_id, options))

    def create_resource(self, request: CreateResourceRequest, **options: Unpack[RequestOptions]) -> ResourceBody:
        """``POST /v1/oauth/resources``: registers a resource (as tokens name it in ``aud``) and the thumbprints of
        the relay keys its MCP gates sign ``Mandate-Relay`` proofs with."""
        return cast(ResourceBody, self._t.call(_create_resource(request, options)))

    def list_resources(self, **options: Unpack[RequestOptions]) -> ResourceList:
        """``GET /v1/oauth/resources``: the organisation's resources, newest first."""
        return cast(ResourceList, self._t.call(Call("GET", _RESOURCES, **options)))

    def delete_resource(self, resource_id: str, **options: Unpack[RequestOptions]) -> None:
        """``DELETE /v1/oauth/resources/{resource_id}``: its relay keys relay nothing from now on."""
        self._t.request(_delete_resource(resource_id, options))

    def sign_in_providers(self, **options: Unpack[RequestOptions]) -> SignInProviders:
        """``GET /v1/oauth/oidc/providers``: the identity providers people may sign in with on the consent page."""
        return cast(SignInProviders, self._t.call(_sign_in_providers(options)))

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

    async def token(
        self, form: Mapping[str, str], *, dpop_key: HolderKey | None = None, **options: Unpack[RequestOptions]
    ) -> dict[str, Any]:
        """``POST /v1/oauth/token``; ``dpop_key`` as :meth:`OAuth.token`."""
        return cast(dict[str, Any], await self._t.call(_token(form, dpop_key, options)))

    async def revoke(self, form: Mapping[str, str], **options: Unpack[RequestOptions]) -> None:
        """``POST /v1/oauth/revoke``."""
        await self._t.request(_revoke(form, options))

    async def list_grants(
        self,
        *,
        human_ref: str | None = None,
        client_id: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        **options: Unpack[RequestOptions],
    ) -> GrantList:
        """``GET /v1/oauth/grants``."""
        return cast(GrantList, await self._t.call(_grants(human_ref, client_id, limit, cursor, options)))

    async def revoke_grant(self, grant_id: str, **options: Unpack[RequestOptions]) -> None:
        """``DELETE /v1/oauth/grants/{grant_id}``."""
        await self._t.request(_revoke_grant(grant_id, options))

    async def create_client(self, request: CreateClientRequest, **options: Unpack[RequestOptions]) -> ClientBody:
        """``POST /v1/oauth/clients``."""
        return cast(ClientBody, await self._t.call(_create(request, options)))

    async def list_clients(self, **options: Unpack[RequestOptions]) -> ClientList:
        """``GET /v1/oauth/clients``."""
        return cast(ClientList, await self._t.call(Call("GET", _CLIENTS, **options)))

    async def create_resource(self, request: CreateResourceRequest, **options: Unpack[RequestOptions]) -> ResourceBody:
        """``POST /v1/oauth/resources``."""
        return cast(ResourceBody, await self._t.call(_create_resource(request, options)))

    async def list_resources(self, **options: Unpack[RequestOptions]) -> ResourceList:
        """``GET /v1/oauth/resources``."""
        return cast(ResourceList, await self._t.call(Call("GET", _RESOURCES, **options)))

    async def delete_resource(self, resource_id: str, **options: Unpack[RequestOptions]) -> None:
        """``DELETE /v1/oauth/resources/{resource_id}``."""
        await self._t.request(_delete_resource(resource_id, options))

    async def sign_in_providers(self, **options: Unpack[RequestOptions]) -> SignInProviders:
        """``GET /v1/oauth/oidc/providers``."""
        return cast(SignInProviders, await self._t.call(_sign_in_providers(options)))

    async def open_request(self, request: str, **options: Unpack[RequestOptions]) -> dict[str, Any]:
        """``POST /v1/oauth/requests/open``: what a sealed authorization request asks."""
        return cast(dict[str, Any], await self._t.call(_open(request, options)))

    async def decide_request(self, body: Mapping[str, Any], **options: Unpack[RequestOptions]) -> dict[str, Any]:
        """``POST /v1/oauth/requests/decision``: approve (with the grant chosen) or deny; answers the redirect."""
        return cast(dict[str, Any], await self._t.call(_decide(body, options)))

    async def delete_client(self, client_id: str, **options: Unpack[RequestOptions]) -> None:
        """``DELETE /v1/oauth/clients/{client_id}``."""
        await self._t.request(_delete(client_id, options))
