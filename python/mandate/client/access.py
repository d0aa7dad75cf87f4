"""AuthZEN 1.0: a gateway (an API key of the ``gateway`` role) asks for decisions."""

from __future__ import annotations

import secrets
from typing import Unpack, cast

from mandate.client._models import (
    AccessDecision,
    EvaluationRequest,
    EvaluationsRequest,
    EvaluationsResponse,
    PdpMetadata,
)
from mandate.client._transport import API_KEY, AsyncTransport, Call, EvaluationOptions, RequestOptions, Transport


def _ask(path: str, request: object, options: EvaluationOptions) -> Call:
    # An evaluation is recorded: it goes with an X-Request-ID (the caller's,
    # or one made here), by which the server answers a repeat with the first
    # decisions and records nothing, so the client may send it again.
    request_id = options.get("request_id") or f"mandate-sdk-{secrets.token_hex(16)}"
    return Call(
        "POST",
        path,
        API_KEY,
        request,
        "keyed",
        request_id=request_id,
        timeout=options.get("timeout"),
        max_retries=options.get("max_retries"),
    )


def _listed(answer: object) -> EvaluationsResponse:
    # A request without `evaluations` is answered as one Decision (AuthZEN
    # §7.1): a caller of the method named for the list gets the list.
    if isinstance(answer, dict) and "evaluations" not in answer:
        return {"evaluations": [cast(AccessDecision, answer)]}
    return cast(EvaluationsResponse, answer)


def _configuration(options: RequestOptions) -> Call:
    return Call("GET", "/.well-known/authzen-configuration", None, **options)


class Access:
    """``mandate.access``: AuthZEN evaluations (docs/authzen.md)."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def evaluation(self, request: EvaluationRequest, **options: Unpack[EvaluationOptions]) -> AccessDecision:
        """``POST /v1/access/evaluation``: one decision; the subject is the agent's compact token.

        Sent with an ``X-Request-ID`` (``request_id``, made when left out),
        so a retry answers the first decision and records nothing new.
        """
        return cast(AccessDecision, self._t.call(_ask("/v1/access/evaluation", request, options)))

    def evaluations(self, request: EvaluationsRequest, **options: Unpack[EvaluationOptions]) -> EvaluationsResponse:
        """``POST /v1/access/evaluations``: several decisions, by the request's ``evaluations_semantic``.

        A request without ``evaluations`` is answered by the server as one
        decision; this returns it as a list of one.
        """
        return _listed(self._t.call(_ask("/v1/access/evaluations", request, options)))

    def configuration(self, **options: Unpack[RequestOptions]) -> PdpMetadata:
        """``GET /.well-known/authzen-configuration``: the policy decision point's metadata."""
        return cast(PdpMetadata, self._t.call(_configuration(options)))


class AsyncAccess:
    """``mandate.access`` of :class:`AsyncMandate`: as :class:`Access`, awaited."""

    def __init__(self, transport: AsyncTransport) -> None:
        self._t = transport

    async def evaluation(self, request: EvaluationRequest, **options: Unpack[EvaluationOptions]) -> AccessDecision:
        """``POST /v1/access/evaluation``."""
        return cast(AccessDecision, await self._t.call(_ask("/v1/access/evaluation", request, options)))

    async def evaluations(
        self, request: EvaluationsRequest, **options: Unpack[EvaluationOptions]
    ) -> EvaluationsResponse:
        """``POST /v1/access/evaluations``."""
        return _listed(await self._t.call(_ask("/v1/access/evaluations", request, options)))

    async def configuration(self, **options: Unpack[RequestOptions]) -> PdpMetadata:
        """``GET /.well-known/authzen-configuration``."""
        return cast(PdpMetadata, await self._t.call(_configuration(options)))
