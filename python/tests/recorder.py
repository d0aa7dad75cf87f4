"""A Mandate that is not there: an httpx transport that records every request and answers as Mandate would a
permitted call.

The npm suite's ``recorder()`` (wasm/test/args.test.mjs) does the same with a fetch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx

BASE = "https://mandate.example"
AUTHORIZED = {
    "authorized": True,
    "aar_id": "aar_1",
    "trust_score": 0.4,
    "provenance_ref": "prov_1",
    "human_ref": "hr",
    "assurance_level": "L1",
}
COMPLETED = {"aar_id": "aar_1", "status": "completed", "result": "success"}


@dataclass
class Sent:
    path: str
    body: Any


@dataclass
class Recorder:
    """Every request sent, as (path, JSON body)."""

    sent: list[Sent] = field(default_factory=list[Sent])

    def answer(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        self.sent.append(Sent(request.url.path, body))
        return httpx.Response(200, json=COMPLETED if request.url.path.endswith("/complete") else AUTHORIZED)

    def sync(self) -> httpx.Client:
        return httpx.Client(transport=httpx.MockTransport(self.answer))

    def asynchronous(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self.answer))

    def paths(self) -> list[tuple[str, Any]]:
        """Each request's path and the ``args`` it sent."""
        return [(s.path, (s.body or {}).get("args")) for s in self.sent]
