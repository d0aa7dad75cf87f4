"""The organisation's events as they happen (``GET /v1/events``, Server-Sent Events).

A dropped connection, or one silent past the server's heartbeats, is
connected again after a pause (growing while attempts fail, and as the
stream's ``retry`` sets it) with ``Last-Event-ID``, so every event after the
last one yielded still comes, in order. A refusal that trying again cannot
cure (401, 403, 400 ``invalid_last_event_id`` once the server no longer
keeps that event) ends the iteration with a MandateError.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncGenerator, Callable, Generator
from dataclasses import dataclass
from typing import Any

from mandate.client._transport import (
    MAX_RECONNECT,
    RECONNECT,
    AsyncTransport,
    SseEvent,
    SseParser,
    Transport,
    as_object,
    transient,
)
from mandate.errors import MandateError


@dataclass(frozen=True)
class Event:
    """One event: its stream ``id`` (``msg_…``, to resume after), ``type``, ``timestamp`` and ``data``."""

    id: str
    type: str
    timestamp: str
    data: dict[str, Any]


def event_of(message: SseEvent) -> Event:
    """The event a message carries (the webhook payload), or a MandateError ``invalid_response``."""
    try:
        payload: object = json.loads(message.data)
    except ValueError:
        payload = None
    event = as_object(payload)
    if event is not None:
        kind, timestamp, data = event.get("type"), event.get("timestamp"), as_object(event.get("data"))
        if isinstance(kind, str) and isinstance(timestamp, str) and data is not None:
            return Event(message.id, kind, timestamp, data)
    raise MandateError(
        f"Invalid response: an event's data is not a Mandate event: {message.data[:200]}",
        code="invalid_response",
    )


@dataclass
class _Resume:
    """Where the stream stands between connections."""

    parser: SseParser
    failures: int = 0
    asked: float = 0.0

    def opened(self, on_open: Callable[[], None] | None) -> Callable[[], None]:
        def connected() -> None:
            self.failures = 0
            if on_open is not None:
                on_open()

        return connected

    def dropped(self, error: MandateError) -> None:
        if not transient(error):
            raise error
        self.failures += 1
        self.asked = error.retry_after or 0.0

    def pause(self, max_delay: float) -> float:
        reconnect = self.parser.retry if self.parser.retry is not None else RECONNECT
        backoff = min(reconnect * 2.0 ** max(0, self.failures - 1), MAX_RECONNECT)
        pause = max(backoff, min(self.asked, max_delay))
        self.asked = 0.0
        return pause


def events(
    transport: Transport,
    last_event_id: str | None,
    on_open: Callable[[], None] | None,
    on_drop: Callable[[], None] | None,
) -> Generator[Event, None, None]:
    """The events, connecting again after a drop; leave the loop (or close the iterator) to stop."""
    state = _Resume(SseParser(last_event_id))
    while True:
        try:
            for message in transport.sse(state.parser, state.opened(on_open)):
                yield event_of(message)
        except MandateError as error:
            state.dropped(error)
        if on_drop is not None:
            on_drop()
        time.sleep(state.pause(transport.max_retry_delay))


async def async_events(
    transport: AsyncTransport,
    last_event_id: str | None,
    on_open: Callable[[], None] | None,
    on_drop: Callable[[], None] | None,
) -> AsyncGenerator[Event, None]:
    """The events, connecting again after a drop; leave the loop (or ``aclose``) to stop."""
    state = _Resume(SseParser(last_event_id))
    while True:
        try:
            async for message in transport.sse(state.parser, state.opened(on_open)):
                yield event_of(message)
        except MandateError as error:
            state.dropped(error)
        if on_drop is not None:
            on_drop()
        await asyncio.sleep(state.pause(transport.max_retry_delay))
