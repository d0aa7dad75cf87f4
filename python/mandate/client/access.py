"""AuthZEN 1.0: a gateway (an API key of the ``gateway`` role) asks for decisions."""

from __future__ import annotations

from typing import Unpack, cast

from mandate.client._models import (
    AccessDecision,
    EvaluationRequest,
    EvaluationsRequest,
    EvaluationsResponse,
    PdpMetadata,
)
from mandate.client._transport import API_KEY, AsyncTransport, Call, RequestOptions, Transport


def _ask(path: str, request: object, options: RequestOptions) -> Call:
    # Sent once: an evaluation is recorded, and this client sends no
    # X-Request-ID, the header the server replays a retry by.
    return Call("POST", path, API_KEY, request, "once", **options)


def _configuration(options: RequestOptions) -> Call:
    return Call("GET", "/.well-known/authzen-configuration", None, **options)


class Access:
    """``mandate.access``: AuthZEN evaluations (docs/authzen.md)."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def evaluation(self, request: EvaluationRequest, **options: Unpack[RequestOptions]) -> AccessDecision:
        """``POST /v1/access/evaluation``: one decision; the subject is the agent's compact token."""
        return cast(AccessDecision, self._t.call(_ask("/v1/access/evaluation", request, options)))

    def evaluations(self, request: EvaluationsRequest, **options: Unpack[RequestOptions]) -> EvaluationsResponse:
        """``POST /v1/access/evaluations``: several decisions, by the request's ``evaluations_semantic``."""
        return cast(EvaluationsResponse, self._t.call(_ask("/v1/access/evaluations", request, options)))

    def configuration(self, **options: Unpack[RequestOptions]) -> PdpMetadata:
        """``GET /.well-known/authzen-configuration``: the policy decision point's metadata."""
        return cast(PdpMetadata, self._t.call(_configuration(options)))


class AsyncAccess:
    """``mandate.access`` of :class:`AsyncMandate`: as :class:`Access`, awaited."""

    def __init__(self, transport: AsyncTransport) -> None:
        self._t = transport

    async def evaluation(self, request: EvaluationRequest, **options: Unpack[RequestOptions]) -> AccessDecision:
        """``POST /v1/access/evaluation``."""
        return cast(AccessDecision, await self._t.call(_ask("/v1/access/evaluation", request, options)))

    async def evaluations(self, request: EvaluationsRequest, **options: Unpack[RequestOptions]) -> EvaluationsResponse:
        """``POST /v1/access/evaluations``."""
        return cast(EvaluationsResponse, await self._t.call(_ask("/v1/access/evaluations", request, options)))

    async def configuration(self, **options: Unpack[RequestOptions]) -> PdpMetadata:
        """``GET /.well-known/authzen-configuration``."""
        return cast(PdpMetadata, await self._t.call(_configuration(options)))
