"""Mandate for MCP servers built with the MCP Python SDK (``mcp``, ``MCPServer``).

An MCP server takes the agent's token (a VAT) as its OAuth access token,
checks it offline, and runs each gated tool call as authorize → tool →
complete, asking a human through URL-mode elicitation when the grant
requires an approval. The npm package's ``mandate-sdk/mcp`` does the same
for the TypeScript SDK.

- :class:`MandateTokenVerifier` is the SDK's ``TokenVerifier``
  (``MCPServer(token_verifier=..., auth=AuthSettings(...))``): the token is
  verified by a :class:`TokenChecker` (a ``RemoteVerifier`` fetching the
  server's keys and status lists, or the native ``Verifier`` with its status
  lists, so a revoked token is refused), and its audience (``aud``) must be
  this server's ``resource`` when it names one (``audience="required"``:
  always). The hook sees the token and
  never the request, so a bound (DPoP) token is refused unless
  :class:`DPoPAuthentication`, the ASGI middleware in front of the SDK's
  app, checked its holder's proof for this request.
- :func:`mandate_tool` turns an async tool function into a gated one for
  ``@server.tool()``. The tool's arguments are sent as the call's ``args``,
  and judged first offline against the token's own argument rules
  (:func:`mandate.client.check_args_offline`): refused there
  (``args_required``, ``args_not_permitted``, or arguments Mandate would
  not take), nothing is sent to Mandate and the result is a tool error with
  ``_meta`` ``io.mandate/error`` (the code) and no record. The call acts
  with the token that authenticated the request, or with a child of it the
  agent delegated to this server, sent in the request's ``_meta`` as
  ``io.mandate/delegated_token`` (:data:`META_DELEGATED_TOKEN`). Mandate
  takes a bound token only with its holder's proof, so a bound token is
  acted with only when it is bound to the gate's own ``key`` (an
  :class:`~mandate.AgentKey`, which signs the proofs); a token bound to any
  other key is refused (``dpop_key_not_held``) — unless the gate has a
  ``relay_key`` and the request carried the client's DPoP proof, which the
  gate then relays to Mandate (docs/oauth.md, "The gate relays the client's
  proof"), as ``mandate-sdk/mcp``'s ``relayKey`` does. Refused, or Mandate not
  answering: the function does not run and the
  result is a tool error (``is_error``) naming the reason, with ``_meta``
  ``io.mandate/error`` (the code) and ``io.mandate/aar_id`` (the denied
  record). Needing approval: a client that declared URL-mode elicitation is
  sent the reviewer's page (``elicitation/create``, mode ``url``) and the
  call waits for the decision; any other client gets a tool error naming the
  page (``io.mandate/approval_url``). The function runs only once Mandate
  says approved. Run, the record is completed ``success`` with the output's
  hash (as ``act`` hashes an output), or ``error`` when the function raised
  (``cancelled`` when the request was cancelled mid-tool: the completion is
  shielded from the cancellation).
  A function returning a ``CallToolResult`` gets the npm gate's behaviour:
  ``is_error`` completes the record ``error``, the hash is
  :func:`tool_result_hash` of its content, and ``_meta`` carries
  ``io.mandate/aar_id``, ``io.mandate/provenance_ref`` and
  ``io.mandate/result_hash``; any other output is returned as it is, for the
  SDK to convert.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import inspect
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeAlias, TypeVar, cast

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.utilities.context_injection import find_context_parameter
from mcp_types import (
    CallToolResult,
    ElicitRequest,
    ElicitRequestURLParams,
    ElicitResult,
    InputRequiredResult,
    TextContent,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mandate._native import audience_matches, decode_token_unverified, verify_proof
from mandate._types import VerifiedToken
from mandate.client import (
    AsyncMandate,
    ProofKey,
    Relay,
    RelayKey,
    WriteOptions,
    check_args_offline,
    output_hash,
    sha256_ref,
)
from mandate.client._act import failed, shielded
from mandate.client._models import ApprovalBody, AuthorizeResponse, CompleteRequest
from mandate.client.records import Attempt
from mandate.errors import MandateError, MandateRefusal

__all__ = [
    "AudiencePolicy",
    "DPoPAuthentication",
    "META_AAR_ID",
    "META_APPROVAL_URL",
    "META_DELEGATED_TOKEN",
    "META_ERROR",
    "META_PROVENANCE_REF",
    "META_RESULT_HASH",
    "MandateTokenVerifier",
    "TokenChecker",
    "ToolGrant",
    "audience_problem",
    "jti_hash",
    "mandate_tool",
    "tool_result_hash",
]

#: The ``_meta`` keys the gate sets on a tool error (reverse-DNS prefix, as MCP asks).
META_AAR_ID = "io.mandate/aar_id"
META_PROVENANCE_REF = "io.mandate/provenance_ref"
#: The hash recorded for a ``CallToolResult`` the function returned.
META_RESULT_HASH = "io.mandate/result_hash"
#: A refused call's reason code: a deny reason, or the gate's own (``token_required``, ``approval_pending``, …).
META_ERROR = "io.mandate/error"
#: An approval's reviewer page, on a call that ended waiting for it.
META_APPROVAL_URL = "io.mandate/approval_url"
#: In a request's ``_meta``: a child of the authenticated token the agent delegated to this server
#: (bound to the gate's ``key``, or unbound), which the gate acts with instead of the authenticated token.
META_DELEGATED_TOKEN = "io.mandate/delegated_token"

_log = logging.getLogger(__name__)

#: The bound token of the HTTP request being handled, with its method, URL and the DPoP proof
#: :class:`DPoPAuthentication` checked for it.
_proved: ContextVar[tuple[str, str, str, str] | None] = ContextVar("mandate_mcp_proved", default=None)

_Scope: TypeAlias = MutableMapping[str, Any]
_Receive: TypeAlias = Callable[[], Awaitable[MutableMapping[str, Any]]]
_Send: TypeAlias = Callable[[MutableMapping[str, Any]], Awaitable[None]]
_App: TypeAlias = Callable[[_Scope, _Receive, _Send], Awaitable[None]]

Claims: TypeAlias = Mapping[str, Any]
Args: TypeAlias = dict[str, Any]
R = TypeVar("R")

#: The keyword the gate adds to a function that takes no ``Context`` of its own.
_CONTEXT = "mandate_context"
#: The key of the approval's elicitation in an ``InputRequiredResult``, and the prefix of its request state.
_INPUT = "io.mandate/approval"
_STATE_PREFIX = "mandate-approval-"


class TokenChecker(Protocol):
    """What checks a token offline: a :class:`~mandate.RemoteVerifier` or :class:`~mandate.AsyncRemoteVerifier`
    (which fetch the key set and status lists themselves), the native :class:`~mandate.Verifier`, or anything
    with their ``verify``.

    ``verify`` returns (or, async, answers) the verified token (its
    ``claims``) and raises :class:`~mandate.MandateError` (core's code) for
    a token it refuses. A native ``Verifier`` needs ``check_status=True`` and
    its status lists kept current (``set_status_list``) for a revoked token
    to be refused; a remote verifier does that itself.
    """

    def verify(self, token: str) -> VerifiedToken | Awaitable[VerifiedToken]: ...


def tool_result_hash(result: CallToolResult) -> str:
    """The ``result_hash`` of a tool result: ``sha256:`` of the compact JSON of its content blocks as MCP sends them.

    The npm package's ``toolResultHash`` hashes ``JSON.stringify(content)``:
    the same blocks give the same hash when their members come in the same
    order.
    """
    blocks = [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content]
    return sha256_ref(json.dumps(blocks, separators=(",", ":"), ensure_ascii=False))


def jti_hash(jti: str) -> str:
    """base64url (no padding) SHA-256 of the jti: the token's jti hash (``svc_parent``, events)."""
    return base64.urlsafe_b64encode(hashlib.sha256(jti.encode()).digest()).decode().rstrip("=")


#: What the token verifier asks of a token's audience (``aud``, the one resource server it was issued for):
#: ``"if-present"`` refuses a token whose ``aud`` is not this server's ``resource`` and takes a token without
#: ``aud`` (tokens Mandate's API issues name none); ``"required"`` also refuses a token without ``aud``.
AudiencePolicy: TypeAlias = Literal["required", "if-present"]


def audience_problem(claims: Claims, resource: str | None, audience: AudiencePolicy) -> str | None:
    """Why verified ``claims`` are not for the server whose resource identifier is ``resource``, or None.

    MCP authorization, "Token Handling": a server MUST validate that a token
    was issued for it as the audience (RFC 8707 §2). A token naming an
    audience passes only when it names ``resource`` (compared after RFC 3986
    normalisation: :func:`mandate.audience_matches`; a URL under it is
    another resource); with no ``resource``, a token naming any audience is
    refused. ``"required"`` also refuses a token naming none.
    """
    aud = claims.get("aud")
    if aud is None:
        if audience == "required":
            return (
                f"audience_required: the token names no audience (aud); this server takes only tokens issued for "
                f"{resource}"
            )
        return None
    if not isinstance(aud, str):
        return "audience_mismatch: the token's aud is not one resource URI"
    if resource is None:
        return f"audience_mismatch: the token is for {aud}, and this server names no resource to compare it with"
    if not audience_matches(aud, resource):
        return f"audience_mismatch: the token is for {aud}, not for this server ({resource})"
    return None


class MandateTokenVerifier:
    """The MCP SDK's ``TokenVerifier`` for Mandate tokens, checked offline.

    ``resource`` is this MCP server's resource identifier: the ``resource``
    of its protected-resource metadata (``AuthSettings.resource_server_url``),
    which OAuth clients send as RFC 8707 ``resource`` and Mandate writes as
    the token's ``aud``. ``audience`` (:data:`AudiencePolicy`, keyword-only,
    default ``"if-present"``) says whether a token must name one:
    :func:`audience_problem` decides. A refused token is None, which the SDK
    answers 401 ``invalid_token`` (with its own description; the reason is
    logged at warning level on the ``mandate.mcp`` logger).

    ``AccessToken.client_id`` is the agent's id, ``scopes`` the token's
    actions, ``resource`` this server's ``resource`` when given (so the SDK's
    own ``resource_server_url`` check passes a token that passed here), else
    the token's ``aud``; ``claims`` the verified claims without ``jti`` (a
    bare ``vat_jti`` would be a credential) and with ``jth``, its hash.
    """

    def __init__(
        self, verifier: TokenChecker, *, resource: str | None = None, audience: AudiencePolicy = "if-present"
    ) -> None:
        if audience not in ("if-present", "required"):
            raise ValueError(f'audience must be "required" or "if-present", not {audience!r}')
        if audience == "required" and resource is None:
            raise ValueError('audience "required" needs the server\'s resource (its protected-resource metadata)')
        self.verifier = verifier
        self.resource = resource
        self.audience: AudiencePolicy = audience

    async def verify_token(self, token: str) -> AccessToken | None:
        """The token's ``AccessToken``, or None (the SDK answers 401) when it is refused."""
        proved = _proved.get()
        proved = proved if proved is not None and proved[0] == token else None
        # A bound token is verified with its proof for this request (the checker's verify_request), else refused.
        request = getattr(self.verifier, "verify_request", None) if proved is not None else None
        try:
            checked: VerifiedToken | Awaitable[VerifiedToken]
            if proved is not None and request is not None:
                checked = cast(
                    "VerifiedToken | Awaitable[VerifiedToken]",
                    request(token, method=proved[1], url=proved[2], proof=proved[3]),
                )
            else:
                checked = self.verifier.verify(token)
            verified: VerifiedToken = await checked if isinstance(checked, Awaitable) else checked
            claims = verified["claims"]
        except MandateError:
            return None
        if "cnf" in claims and proved is None:
            # A bound token passes only with its holder's proof, checked by DPoPAuthentication.
            return None
        problem = audience_problem(claims, self.resource, self.audience)
        if problem is not None:
            _log.warning("token refused: %s", problem)
            return None
        aud = claims.get("aud")
        resource = self.resource if self.resource is not None else aud if isinstance(aud, str) else None
        return access_token_of(token, claims, resource)


class DPoPAuthentication:
    """ASGI middleware in front of the SDK's app (``server.streamable_http_app()``) for DPoP-bound tokens.

    The SDK authenticates ``Authorization: Bearer`` only; a stock client
    holding a token bound to its own key sends ``Authorization: DPoP`` with
    a ``DPoP`` proof (RFC 9449 §7.1). This checks that proof by core's rules
    (``verify_proof``: signature, key = the token's ``cnf.jkt``, ``ath``,
    ``htm``, ``htu``, ``iat``; Mandate checks replay when the gate relays
    it) for this request's method and URL — ``public_url`` (the server's
    origin as clients reach it, e.g. behind a proxy) with the request's
    path, else the request's own scheme, ``Host`` and path — and hands the
    request on as ``Bearer``, for :class:`MandateTokenVerifier`, which then
    verifies this bound token with its checker's ``verify_request`` (the
    native ``Verifier`` and ``RemoteVerifier`` have it) and the same proof. A bound token sent as ``Bearer``, a ``DPoP``
    token without exactly one proof, or a proof that fails is answered 401
    (``WWW-Authenticate: DPoP``). The ``DPoP`` header stays on the request:
    :func:`mandate_tool` with ``relay_key`` forwards it to Mandate.
    """

    def __init__(self, app: _App, *, public_url: str | None = None) -> None:
        self.app = app
        self.public_url = None if public_url is None else public_url.rstrip("/")

    async def __call__(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = cast(list[tuple[bytes, bytes]], scope["headers"])
        authorization = [v.decode("latin-1") for k, v in headers if k.lower() == b"authorization"]
        proofs = [v.decode("latin-1") for k, v in headers if k.lower() == b"dpop"]
        scheme, _, token = authorization[0].partition(" ") if len(authorization) == 1 else ("", "", "")
        if scheme.lower() == "bearer" and _bound_to(token) is not None:
            await _unauthorized(send, "invalid_token", "a DPoP-bound token is sent with the DPoP scheme")
            return
        if scheme.lower() != "dpop":
            await self.app(scope, receive, send)
            return
        jkt = _bound_to(token)
        if jkt is None:
            await _unauthorized(send, "invalid_token", "the DPoP scheme takes a DPoP-bound token")
            return
        if len(proofs) != 1 or "," in proofs[0]:
            await _unauthorized(send, "invalid_dpop_proof", "dpop_required: a DPoP token needs exactly one DPoP proof")
            return
        url = self._url(scope)
        try:
            verify_proof(proofs[0], method=scope["method"], url=url, access_token=token, jkt=jkt)
        except MandateError as error:
            await _unauthorized(send, "invalid_dpop_proof", f"{error.code}: {error.message}")
            return
        others = [(k, v) for k, v in headers if k.lower() != b"authorization"]
        bearer = {**scope, "headers": [*others, (b"authorization", f"Bearer {token}".encode("latin-1"))]}
        mark = _proved.set((token, scope["method"], url, proofs[0]))
        try:
            await self.app(bearer, receive, send)
        finally:
            _proved.reset(mark)

    def _url(self, scope: _Scope) -> str:
        path = f"{scope.get('root_path', '')}{scope['path']}"
        if self.public_url is not None:
            return f"{self.public_url}{path}"
        hosts = [v.decode("latin-1") for k, v in cast(list[tuple[bytes, bytes]], scope["headers"]) if k == b"host"]
        return f"{scope['scheme']}://{hosts[0] if hosts else 'localhost'}{path}"


async def _unauthorized(send: _Send, error: str, description: str) -> None:
    body = json.dumps({"error": error, "error_description": description}).encode()
    challenge = f'DPoP algs="EdDSA", error="{error}"'.encode()
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", challenge),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def access_token_of(token: str, claims: Claims, resource: str | None) -> AccessToken:
    """The SDK's ``AccessToken`` for verified ``claims``."""
    sub = str(claims.get("sub", ""))
    scope = claims.get("svc_scope")
    actions: list[str] = []
    if isinstance(scope, Mapping):
        listed = cast(Mapping[str, object], scope).get("actions")
        if isinstance(listed, list):
            actions = [a for a in cast(list[object], listed) if isinstance(a, str)]
    kept = {name: value for name, value in claims.items() if name != "jti"}
    kept["jth"] = jti_hash(str(claims.get("jti", "")))
    exp = claims.get("exp")
    return AccessToken(
        token=token,
        client_id=sub.removeprefix("agent:"),
        scopes=actions,
        expires_at=exp if isinstance(exp, int) else None,
        resource=resource,
        subject=sub,
        claims=kept,
    )


@dataclass(frozen=True)
class ToolGrant:
    """What a gated tool's calls ask Mandate for: the action, the resource and the spend, fixed or from the
    arguments."""

    action: str | Callable[[Args], str]
    resource: str | Callable[[Args], str]
    spend_usd: float | Callable[[Args], float | None] | None = None


def _value(value: Any, args: Args) -> Any:
    return value(args) if callable(value) else value


def _tool_error(text: str, meta: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True, _meta=meta)


_KEY_NOT_HELD = (
    "Not authorized: the token is bound to a key this server does not hold, and Mandate takes a bound token "
    "only with its holder's proof. Delegate a child token to this server's key and send it in _meta "
    f"as {META_DELEGATED_TOKEN}, or relay the client's proof with a registered relay_key."
)


def _claims_of(token: str) -> Claims | None:
    """The token's claims, read without checking them (Mandate checks them when the gate authorizes)."""
    try:
        return decode_token_unverified(token)["claims"]
    except MandateError:
        return None


def _bound_to(token: str) -> str | None:
    """The thumbprint of the key the token is bound to (``cnf.jkt``), if any."""
    claims = _claims_of(token)
    cnf = claims.get("cnf") if claims is not None else None
    jkt = cast(Mapping[str, object], cnf).get("jkt") if isinstance(cnf, Mapping) else None
    return jkt if isinstance(jkt, str) else None


def _client_proof(context: Context) -> str | None:
    """The client's DPoP proof of the HTTP request that carried this call, exactly as received: one header."""
    request = context.request_context.request
    headers = getattr(request, "headers", None)
    if headers is None:
        return None
    proofs = cast(list[str], headers.getlist("dpop"))
    return proofs[0] if len(proofs) == 1 and "," not in proofs[0] else None


def _delegation_problem(parent: str, child: str) -> str | None:
    """Why ``child`` may not stand in for ``parent`` (the authenticated token), or None.

    It must be ``parent``'s own child (``svc_parent`` is its jti hash) in the
    same workflow. Mandate verifies it (signature, expiry, revocation, and
    that it is no wider than its parent) when the gate authorizes with it.
    """
    up, down = _claims_of(parent), _claims_of(child)
    if up is None or down is None:
        return "it is not a token"
    jti = up.get("jti")
    descended = isinstance(jti, str) and down.get("svc_parent") == jti_hash(jti)
    if not descended or down.get("svc_prov") != up.get("svc_prov"):
        return "it was not delegated by the token that authenticated the request"
    return None


def _refused_offline(error: MandateError) -> CallToolResult:
    """A call the token's own argument rules refused before anything was sent: no record was made."""
    if isinstance(error, MandateRefusal):
        text = f"Refused by Mandate's rules for this token: {error.reason}: {error.message}"
        return _tool_error(text, {META_ERROR: error.reason})
    return _tool_error(f"Not run: Mandate could not authorize the call: {error.message}", {META_ERROR: error.code})


def _refused(answer: AuthorizeResponse, attempt: Attempt) -> CallToolResult:
    reason = answer.get("reason") or "action_not_permitted"
    text = f"Refused by Mandate: {reason} ({attempt['action']} on {attempt['resource']})."
    detail = answer.get("reason_detail")
    if detail:
        text = f"{text} {detail}"
    return _tool_error(text, {META_ERROR: reason, META_AAR_ID: answer["aar_id"]})


@dataclass
class _Gate:
    client: AsyncMandate
    grant: ToolGrant
    key: ProofKey | None
    approval_timeout_seconds: float
    relay_key: RelayKey | None = None

    async def approved(self, token: str, approval_id: str, relay: Relay | None) -> ApprovalBody:
        """Mandate's decision on the approval, waited for until the timeout."""
        deadline = time.monotonic() + self.approval_timeout_seconds
        while True:
            left = deadline - time.monotonic()
            wait = max(0, min(30, int(left)))
            approval = await self.client.approvals.get(approval_id, wait=wait, token=token, key=self.key, relay=relay)
            if approval["status"] != "pending" or left <= 0 or wait == 0:
                return approval

    async def run(self, fn: Callable[..., Awaitable[Any]], args: Args, extra: Args, context: Context) -> Any:
        access = get_access_token()
        if access is None:
            return _tool_error("Not authorized: the request carried no Mandate token.", {META_ERROR: "token_required"})
        token = presented = access.token
        delegated = cast(Mapping[str, Any], context.request_context.meta or {}).get(META_DELEGATED_TOKEN)
        if delegated is not None:
            problem = _delegation_problem(token, delegated) if isinstance(delegated, str) else "it is not a string"
            if problem is not None:
                return _tool_error(
                    f"Not authorized: the delegated token in _meta is refused: {problem}.",
                    {META_ERROR: "delegation_invalid"},
                )
            token = cast(str, delegated)
        jkt = _bound_to(token)
        relay: Relay | None = None
        if jkt is not None and (self.key is None or self.key.jkt != jkt):
            # The client's own proof, relayed: only for the token it was made with.
            forwarded = _client_proof(context) if token == presented else None
            if self.relay_key is None or forwarded is None:
                return _tool_error(_KEY_NOT_HELD, {META_ERROR: "dpop_key_not_held"})
            relay = Relay(self.relay_key, forwarded)
        attempt: Attempt = {
            "action": _value(self.grant.action, args),
            "resource": _value(self.grant.resource, args),
            "args": args,
        }
        spend = _value(self.grant.spend_usd, args)
        if spend is not None:
            attempt["spend_usd"] = spend
        # The token's own argument rules refuse here, before any round trip to Mandate: no record is made.
        offline = check_args_offline(token, attempt)
        if offline is not None:
            return _refused_offline(offline)
        modern = context.protocol_version in MODERN_PROTOCOL_VERSIONS
        state = context.request_state if modern else None
        if state is not None and not state.startswith(_STATE_PREFIX):
            return _tool_error("Not run: the request's state is not the gate's.", {META_ERROR: "request_state_invalid"})
        # On 2026-07-28 connections an approval takes two rounds: the key makes the second round's
        # authorize answer with the first round's record and approval, for the same request only.
        key = state if state is not None else (f"{_STATE_PREFIX}{secrets.token_hex(16)}" if modern else None)
        try:
            keyed: WriteOptions = {} if key is None else {"idempotency_key": key}
            answer = await self.client.records.authorize(attempt, token=token, key=self.key, relay=relay, **keyed)
            ref = answer.get("approval")
            if not answer["authorized"] and ref is not None and ref["status"] == "pending":
                url = self.client.approvals.url(ref["approval_id"])
                if modern and state is None and _can_elicit(context):
                    message = f"A reviewer must approve {attempt['action']} on {attempt['resource']} before it runs."
                    ask = ElicitRequest(params=ElicitRequestURLParams(message=message, url=url))
                    return InputRequiredResult(input_requests={_INPUT: ask}, request_state=key)
                stopped = await self._ask(context, token, relay, answer, ref["approval_id"], attempt, modern)
                if stopped is not None:
                    return stopped
            elif not answer["authorized"]:
                return _refused(answer, attempt)
        except MandateError as error:
            return _tool_error(
                f"Not run: Mandate could not authorize the call: {error.message}", {META_ERROR: error.code}
            )
        aar_id = answer["aar_id"]
        meta = {META_AAR_ID: aar_id, META_PROVENANCE_REF: answer["provenance_ref"]}
        try:
            output = await fn(**args, **extra)
        except BaseException as error:
            # A request cancelled mid-tool (``notifications/cancelled``) completes as ``cancelled``.
            await self._complete(token, relay, aar_id, failed(error))
            raise
        if isinstance(output, CallToolResult) and output.is_error:
            await self._complete(token, relay, aar_id, {"result": "error"})
            return output.model_copy(update={"meta": {**(output.meta or {}), **meta}})
        body: CompleteRequest = {"result": "success"}
        digest = tool_result_hash(output) if isinstance(output, CallToolResult) else output_hash(output)
        if digest is not None:
            body["result_hash"] = digest
        try:
            # The tool ran: its record is completed even when the request is cancelled now.
            await shielded(self.client.records.complete(aar_id, body, token=token, key=self.key, relay=relay))
        except MandateError as error:
            return _tool_error(
                f"The tool ran, but Mandate could not record how it ended: {error.message}",
                {**meta, META_ERROR: error.code},
            )
        if isinstance(output, CallToolResult):
            return output.model_copy(update={"meta": {**(output.meta or {}), **meta, META_RESULT_HASH: digest}})
        return output

    async def _complete(self, token: str, relay: Relay | None, aar_id: str, body: CompleteRequest) -> None:
        try:
            # Shielded: a cancelled request's scope would cancel the completion too.
            await shielded(self.client.records.complete(aar_id, body, token=token, key=self.key, relay=relay))
        except MandateError:
            # The function's own exception is what the caller sees; the record stays pending.
            return

    async def _ask(
        self,
        context: Context,
        token: str,
        relay: Relay | None,
        answer: AuthorizeResponse,
        approval_id: str,
        attempt: Attempt,
        modern: bool,
    ) -> CallToolResult | None:
        """Shows the reviewer's page and waits for the decision: None once approved, else the tool error.

        On a 2026-07-28 connection this is the second round, the client's
        answer in ``input_responses``; on an older one the page is sent with
        ``elicitation/create`` now.
        """
        url = self.client.approvals.url(approval_id)
        pending = {META_ERROR: "approval_pending", META_AAR_ID: answer["aar_id"], META_APPROVAL_URL: url}
        if not _can_elicit(context):
            return _tool_error(f"Approval required: a reviewer must approve this call first: {url}", pending)
        if modern:
            response = (context.input_responses or {}).get(_INPUT)
            action = response.action if isinstance(response, ElicitResult) else "cancel"
        else:
            message = f"A reviewer must approve {attempt['action']} on {attempt['resource']} before it runs."
            action = (await context.elicit_url(message, url, approval_id)).action
        if action != "accept":
            return _tool_error(
                f"Not run: the user did not open the approval page ({action}); the approval stays pending "
                f"until it expires: {url}",
                {**pending, META_ERROR: "approval_declined"},
            )
        approval = await self.approved(token, approval_id, relay)
        if not modern:
            await context.session.send_elicit_complete(approval_id, related_request_id=context.request_id)
        status = approval["status"]
        if status == "approved" and approval["record_status"] != "pending":
            # A repeat of a round that already ran under this approval.
            return _tool_error(
                f"Not run: the approved call already ran: {url}", {**pending, META_ERROR: "already_completed"}
            )
        if status == "approved":
            return None
        code = {"denied": "approval_denied", "expired": "approval_expired"}.get(status, "approval_pending")
        return _tool_error(f"Not run: the approval is {status}: {url}", {**pending, META_ERROR: code})


def _can_elicit(context: Context) -> bool:
    capabilities = context.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and elicitation.url is not None


def mandate_tool(
    client: AsyncMandate,
    grant: ToolGrant,
    *,
    key: ProofKey | None = None,
    relay_key: RelayKey | None = None,
    approval_timeout_seconds: float = 300,
) -> Callable[[Callable[..., Awaitable[R]]], Callable[..., Awaitable[R | CallToolResult | InputRequiredResult]]]:
    """Gates an async tool function for ``@server.tool()``: authorize → function → complete.

    Apply it under the SDK's decorator::

        @server.tool()
        @mandate_tool(client, ToolGrant(action="read", resource=lambda a: f"crm:accounts/{a['id']}"))
        async def read_account(id: str) -> dict[str, str]: ...

    The call acts with the token that authenticated the request
    (``MandateTokenVerifier``), or with the child of it the agent delegated
    to this server (``_meta`` ``io.mandate/delegated_token``: it must name
    the authenticated token as its parent, in the same workflow). ``key``
    is the MCP server's own key (an :class:`~mandate.AgentKey`): a token
    bound to it is acted with, each request signed with a fresh proof; a
    token bound to any other key is refused (``dpop_key_not_held``), since
    Mandate takes a bound token only with its holder's proof. An agent
    delegates to the server with ``holder_key`` set to ``key.public_jwk``.
    ``relay_key`` (an :class:`~mandate.AgentKey`, its ``jkt`` registered for
    this server's resource: ``oauth.create_resource``) relays instead a
    token bound to the client's own key, the way ``mandate-sdk/mcp``'s
    ``relayKey`` does (docs/oauth.md, "The gate relays the client's proof"):
    ``authorize`` carries the client's DPoP proof of the HTTP request
    exactly as received (``Mandate-Client-DPoP``) with the gate's own proof
    (``Mandate-Relay``, by core's ``sign_relay``); the completion and
    approval reads carry the gate's proof alone. Without a client proof,
    or for a delegated token in ``_meta``, a token bound to another key is
    still refused (``dpop_key_not_held``).
    The function keeps its own signature (the
    tool's input schema); a function without a ``Context`` parameter is
    given one the SDK fills, which it never sees.
    """

    def gate(fn: Callable[..., Awaitable[R]]) -> Callable[..., Awaitable[R | CallToolResult | InputRequiredResult]]:
        gated = _Gate(client, grant, key, approval_timeout_seconds, relay_key)
        signature = inspect.signature(fn)
        own = find_context_parameter(fn)
        context_name = own if own is not None else _CONTEXT

        @functools.wraps(fn)
        async def tool(*args: Any, **kwargs: Any) -> R | CallToolResult | InputRequiredResult:
            if args:
                raise TypeError("a gated tool takes its arguments by name")
            context = cast(Context, kwargs.pop(context_name))
            extra = {} if own is None else {own: context}
            return cast("R | CallToolResult | InputRequiredResult", await gated.run(fn, kwargs, extra, context))

        if own is None:
            parameter = inspect.Parameter(_CONTEXT, inspect.Parameter.KEYWORD_ONLY, annotation=Context)
            # A function's __signature__ is not among the attributes its type declares.
            setattr(tool, "__signature__", signature.replace(parameters=[*signature.parameters.values(), parameter]))  # noqa: B010
            tool.__annotations__ = {**fn.__annotations__, _CONTEXT: Context}
        return tool

    return gate
