"""Types of the native module (the PyO3 extension built from mandate-core).

Every function raises ``mandate.MandateError`` (with ``code`` and ``stage``)
when it refuses, including for an argument of the wrong type.
"""

from collections.abc import Mapping, Sequence
from typing import Any

from mandate._types import (
    Checkpoint,
    CosignedLink,
    DelegatedGrantResult,
    HeldStatusList,
    JsonObject,
    LogProofResult,
    NarrowingResult,
    PermitResult,
    PolicyResult,
    StatusListInfo,
    VerifiedProof,
    VerifiedToken,
    WebhookMessage,
    Witnessed,
    WitnessedLogProofResult,
    WitnessPolicy,
    WorkflowSummary,
)

Jwks = Mapping[str, Any] | str

def verify_token(
    token: str,
    jwks: Jwks,
    *,
    now: int | None = None,
    leeway_seconds: int | None = None,
    issuer: str | None = None,
    revoked: Sequence[str] | None = None,
    request: Mapping[str, str] | None = None,
    skip_proof_of_possession: bool = False,
    status_list: str | None = None,
    max_staleness_seconds: int | None = None,
    status_origins: Sequence[str] | None = None,
) -> VerifiedToken: ...
def decode_token_unverified(token: str) -> VerifiedToken: ...
def verify_chain(
    tokens: Sequence[str],
    jwks: Jwks,
    *,
    now: int | None = None,
    leeway_seconds: int | None = None,
    issuer: str | None = None,
    revoked: Sequence[str] | None = None,
) -> list[VerifiedToken]: ...
def verify_status_list(jwt: str, jwks: Jwks, *, now: int | None = None, uri: str | None = None) -> StatusListInfo: ...
def verify_proof(
    proof: str,
    *,
    method: str,
    url: str,
    access_token: str,
    jkt: str,
    now: int | None = None,
) -> VerifiedProof: ...
def permits(
    scope_or_claims: Mapping[str, Any],
    action: str,
    resource: str,
    args: Mapping[str, Any] | str | None = None,
) -> PermitResult: ...
def check_narrowing(child: Mapping[str, Any], parent: Mapping[str, Any]) -> NarrowingResult: ...
def delegated_grant(request: Mapping[str, Any], parent: Mapping[str, Any]) -> DelegatedGrantResult: ...
def evaluate_policy(pol: Sequence[Any] | str, args: Mapping[str, Any] | str) -> PolicyResult: ...
def sha256_ref(data: bytes | bytearray | str) -> str: ...
def audience_matches(aud: str, resource: str) -> bool: ...
def reputation(counts: Mapping[str, int]) -> JsonObject: ...
def summarize_workflow(records: Sequence[Mapping[str, Any]], provenance_ref: str | None = None) -> WorkflowSummary: ...
def trust_scores(
    graph: Mapping[str, Any],
    *,
    now: int | None = None,
    params: Mapping[str, float] | None = None,
) -> dict[str, JsonObject]: ...
def verify_trust_statement(
    jwt: str, jwks: Jwks, *, now: int | None = None, leeway_seconds: int | None = None
) -> JsonObject: ...
def verify_webhook(
    body: bytes | bytearray | str,
    headers: Mapping[str, str] | Sequence[tuple[str, str]],
    *,
    secrets: Sequence[str],
    now: int | None = None,
    tolerance_seconds: int | None = None,
) -> WebhookMessage: ...
def verify_checkpoint(note: str, vkeys: str | Sequence[str], *, origin: str | None = None) -> Checkpoint: ...
def verify_witnessed(
    note: str,
    vkeys: str | Sequence[str],
    policy: WitnessPolicy | Mapping[str, Any],
    *,
    origin: str | None = None,
    now: int | None = None,
) -> Witnessed: ...
def verify_cosignature(checkpoint: str, line: str, vkey: str) -> int: ...
def verify_log_proof(
    proof: str, leaf: str, vkeys: str | Sequence[str], *, origin: str | None = None
) -> LogProofResult: ...
def verify_witnessed_log_proof(
    proof: str,
    leaf: str,
    vkeys: str | Sequence[str],
    policy: WitnessPolicy | Mapping[str, Any],
    *,
    origin: str | None = None,
    cosigned: CosignedLink | Mapping[str, Any] | None = None,
    now: int | None = None,
) -> WitnessedLogProofResult: ...
def verify_consistency(consistency: Mapping[str, Any]) -> None: ...
def parse_log_leaf(leaf: str) -> JsonObject: ...

class Verifier:
    def __init__(
        self,
        jwks: Jwks,
        *,
        leeway_seconds: int | None = None,
        issuer: str | None = None,
        revoked: Sequence[str] | None = None,
        cache_size: int | None = None,
        check_status: bool = False,
        max_staleness_seconds: int | None = None,
        status_origins: Sequence[str] | None = None,
    ) -> None: ...
    @property
    def cached(self) -> int: ...
    def verify(self, token: str, *, now: int | None = None) -> VerifiedToken: ...
    def verify_request(
        self,
        token: str,
        *,
        method: str,
        url: str,
        proof: str | None = None,
        now: int | None = None,
    ) -> VerifiedToken: ...
    def revoke(self, jtis: str | Sequence[str]) -> None: ...
    def set_status_list(self, jwt: str, *, now: int | None = None) -> HeldStatusList: ...
    def set_keys(self, jwks: Jwks) -> None: ...
    def clear_cache(self) -> None: ...

class AgentKey:
    @staticmethod
    def generate(secret: bytes | None = None) -> AgentKey: ...
    @staticmethod
    def from_jwk(jwk: Mapping[str, str] | str) -> AgentKey: ...
    @property
    def public_jwk(self) -> JsonObject: ...
    @property
    def jkt(self) -> str: ...
    def export_jwk(self) -> JsonObject: ...
    def proof(self, *, method: str, url: str, access_token: str | None = None, now: int | None = None) -> str: ...
    def relay_proof(
        self,
        *,
        method: str,
        url: str,
        access_token: str,
        forwarded_proof: str | None = None,
        now: int | None = None,
    ) -> str: ...
