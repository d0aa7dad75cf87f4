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


class WitnessPolicy(TypedDict):
    """Which witnesses a verifier trusts (C2SP tlog-cosignature, cosignature/v1).

    The caller's own configuration, never one fetched from the log it checks:
    the witnesses' vkeys (key type 0x04; each carries its name), how many fresh
    cosignatures by distinct witnesses a checkpoint needs, and the oldest a
    cosignature may be, in seconds.
    """

    witnesses: list[str]
    threshold: int
    max_age_seconds: int


class Cosigned(TypedDict):
    """A cosignature that counted: the witness's name and its timestamp (unix seconds)."""

    name: str
    timestamp: int


class Witnessed(TypedDict):
    """A checkpoint signed by its log and cosigned by enough of a policy's witnesses."""

    checkpoint: Checkpoint
    cosigned_by: list[Cosigned]


class LogProofResult(TypedDict):
    """A verified record log proof: the leaf's index, the checkpoint, the entry."""

    index: int
    checkpoint: Checkpoint
    entry: JsonObject


class CosignedLink(TypedDict):
    """An older cosigned checkpoint and the consistency proof (base64 hashes)
    from it to the checkpoint a record's proofs lead to: a record proof
    answer's ``cosigned``."""

    checkpoint: str
    consistency: list[str]


class WitnessedLogProofResult(TypedDict):
    """A record log proof that met a witness policy: as ``LogProofResult``,
    with whether the policy was met through the linked, older checkpoint and
    the checkpoint that met it."""

    index: int
    checkpoint: Checkpoint
    entry: JsonObject
    linked: bool
    witnessed: Witnessed
