"""The shapes the native verifier answers: core's own JSON, as dicts."""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

JsonObject = dict[str, Any]
"""A JSON object as ``json.loads`` reads it."""

Truth = Literal["true", "false", "undefined"]


class VerifiedToken(TypedDict):
    """A token that verified: its header and claims, as the server wrote them.

    ``claims["aud"]``, when present, is the one resource server the token is
    for: a single resource URI (RFC 8707), never a list.
    """

    header: JsonObject
    claims: JsonObject


class StatusListInfo(TypedDict):
    """What a verified status list token says about itself."""

    uri: str
    kid: str
    iat: int
    exp: int
    ttl: int
    bits: int
    size: int


class HeldStatusList(StatusListInfo):
    """A list given to ``Verifier.set_status_list``; ``held``: whether it is now the one checked."""

    held: bool


class VerifiedProof(TypedDict):
    """A DPoP proof that verified."""

    jti: str
    iat: int
    jkt: str


class PermitReason(TypedDict):
    """Why ``permits`` refuses: the scope, or an argument rule."""

    code: str
    message: str
    rule: NotRequired[int]
    statement: NotRequired[int]
    truth: NotRequired[Truth]


class PermitResult(TypedDict):
    """``ok``, or ``reason`` why not."""

    ok: bool
    reason: NotRequired[PermitReason]


class Violation(TypedDict):
    """One way a child grant is wider than its parent."""

    field: str
    code: str
    message: str


class NarrowingResult(TypedDict):
    """Every way a child is wider than its parent; none when ``ok``."""

    ok: bool
    violations: list[Violation]


class DelegatedGrantResult(TypedDict):
    """``grant`` when ``ok``; else ``code`` and ``violations``."""

    ok: bool
    grant: NotRequired[JsonObject]
    code: NotRequired[str]
    violations: NotRequired[list[Violation]]


class PolicyResult(TypedDict):
    """A policy's truth over arguments; only ``"true"`` permits."""

    truth: Truth
    permits: bool


class WorkflowSummary(TypedDict):
    """Every action by every agent of one workflow, counted."""

    provenance_ref: str
    total_records: int
    unique_agents: int
    actions_by_type: dict[str, int]
    results_by_type: dict[str, int]


class WebhookMessage(TypedDict):
    """A webhook that verified: its message id and the Mandate event it carries."""

    id: str
    event: JsonObject


class Checkpoint(TypedDict):
    """A verified record log checkpoint; ``root`` in standard base64."""

    origin: str
    size: int
    root: str
    extensions: NotRequired[list[str]]


class LogProofResult(TypedDict):
    """A verified record log proof: the leaf's index, the checkpoint, the entry."""

    index: int
    checkpoint: Checkpoint
    entry: JsonObject
