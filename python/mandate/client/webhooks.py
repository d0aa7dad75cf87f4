"""Webhooks: where the organisation's events are POSTed, and their deliveries."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Unpack, cast

from mandate.client._models import (
    CreateWebhookRequest,
    DeliveryBody,
    DeliveryPage,
    SecretRotatedBody,
    UpdateWebhookRequest,
    WebhookBody,
    WebhookCreatedBody,
    WebhookList,
)
from mandate.client._transport import (
    API_KEY,
    AsyncTransport,
    Call,
    RequestOptions,
    Transport,
    query,
    segment,
)


def _one(webhook_id: str, tail: str = "") -> str:
    return f"/v1/webhooks/{segment(webhook_id)}{tail}"


def _deliveries(webhook_id: str, limit: int | None, cursor: str | None, options: RequestOptions) -> Call:
    return Call("GET", _one(webhook_id, f"/deliveries{query(limit=limit, cursor=cursor)}"), **options)


class Webhooks:
    """``mandate.webhooks``: the webhooks of the /v1 API (an owner key)."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def create(self, request: CreateWebhookRequest, **options: Unpack[RequestOptions]) -> WebhookCreatedBody:
        """``POST /v1/webhooks``: a webhook and its signing secret, shown only in this answer."""
        call = Call("POST", "/v1/webhooks", API_KEY, request, "once", **options)
        return cast(WebhookCreatedBody, self._t.call(call))

    def list(self, **options: Unpack[RequestOptions]) -> WebhookList:
        """``GET /v1/webhooks``: the organisation's webhooks."""
        return cast(WebhookList, self._t.call(Call("GET", "/v1/webhooks", **options)))

    def get(self, webhook_id: str, **options: Unpack[RequestOptions]) -> WebhookBody:
        """``GET /v1/webhooks/{webhook_id}``."""
        return cast(WebhookBody, self._t.call(Call("GET", _one(webhook_id), **options)))

    def update(self, webhook_id: str, request: UpdateWebhookRequest, **options: Unpack[RequestOptions]) -> WebhookBody:
        """``PATCH /v1/webhooks/{webhook_id}``: what to change; members left out stay."""
        call = Call("PATCH", _one(webhook_id), API_KEY, request, "once", **options)
        return cast(WebhookBody, self._t.call(call))

    def delete(self, webhook_id: str, **options: Unpack[RequestOptions]) -> None:
        """``DELETE /v1/webhooks/{webhook_id}``."""
        self._t.request(Call("DELETE", _one(webhook_id), retry="once", **options))

    def rotate_secret(self, webhook_id: str, **options: Unpack[RequestOptions]) -> SecretRotatedBody:
        """``POST /v1/webhooks/{webhook_id}/rotate-secret``: a new signing secret, the old one kept a while."""
        call = Call("POST", _one(webhook_id, "/rotate-secret"), retry="once", **options)
        return cast(SecretRotatedBody, self._t.call(call))

    def deliveries_page(
        self, webhook_id: str, *, limit: int | None = None, cursor: str | None = None, **options: Unpack[RequestOptions]
    ) -> DeliveryPage:
        """``GET /v1/webhooks/{webhook_id}/deliveries``: one page of deliveries, newest first."""
        return cast(DeliveryPage, self._t.call(_deliveries(webhook_id, limit, cursor, options)))

    def deliveries(self, webhook_id: str, **options: Unpack[RequestOptions]) -> Iterator[DeliveryBody]:
        """Every delivery of a webhook, page after page."""
        cursor: str | None = None
        while True:
            page = self.deliveries_page(webhook_id, cursor=cursor, **options)
            yield from page["deliveries"]
            cursor = page.get("next_cursor")
            if not cursor:
                return


class AsyncWebhooks:
    """``mandate.webhooks`` of :class:`AsyncMandate`: as :class:`Webhooks`, awaited."""

    def __init__(self, transport: AsyncTransport) -> None:
        self._t = transport

    async def create(self, request: CreateWebhookRequest, **options: Unpack[RequestOptions]) -> WebhookCreatedBody:
        """``POST /v1/webhooks``."""
        call = Call("POST", "/v1/webhooks", API_KEY, request, "once", **options)
        return cast(WebhookCreatedBody, await self._t.call(call))

    async def list(self, **options: Unpack[RequestOptions]) -> WebhookList:
        """``GET /v1/webhooks``."""
        return cast(WebhookList, await self._t.call(Call("GET", "/v1/webhooks", **options)))

    async def get(self, webhook_id: str, **options: Unpack[RequestOptions]) -> WebhookBody:
        """``GET /v1/webhooks/{webhook_id}``."""
        return cast(WebhookBody, await self._t.call(Call("GET", _one(webhook_id), **options)))

    async def update(
        self, webhook_id: str, request: UpdateWebhookRequest, **options: Unpack[RequestOptions]
    ) -> WebhookBody:
        """``PATCH /v1/webhooks/{webhook_id}``."""
        call = Call("PATCH", _one(webhook_id), API_KEY, request, "once", **options)
        return cast(WebhookBody, await self._t.call(call))

    async def delete(self, webhook_id: str, **options: Unpack[RequestOptions]) -> None:
        """``DELETE /v1/webhooks/{webhook_id}``."""
        await self._t.request(Call("DELETE", _one(webhook_id), retry="once", **options))

    async def rotate_secret(self, webhook_id: str, **options: Unpack[RequestOptions]) -> SecretRotatedBody:
        """``POST /v1/webhooks/{webhook_id}/rotate-secret``."""
        call = Call("POST", _one(webhook_id, "/rotate-secret"), retry="once", **options)
        return cast(SecretRotatedBody, await self._t.call(call))

    async def deliveries_page(
        self, webhook_id: str, *, limit: int | None = None, cursor: str | None = None, **options: Unpack[RequestOptions]
    ) -> DeliveryPage:
        """``GET /v1/webhooks/{webhook_id}/deliveries``."""
        return cast(DeliveryPage, await self._t.call(_deliveries(webhook_id, limit, cursor, options)))

    async def deliveries(self, webhook_id: str, **options: Unpack[RequestOptions]) -> AsyncIterator[DeliveryBody]:
        """Every delivery of a webhook, page after page."""
        cursor: str | None = None
        while True:
            page = await self.deliveries_page(webhook_id, cursor=cursor, **options)
            for delivery in page["deliveries"]:
                yield delivery
            cursor = page.get("next_cursor")
            if not cursor:
                return
