"""The record log, offline: a record's proof checked event by event, and a
monitor that holds a log to its past.

Every rule is core's, through the native functions (``verify_checkpoint``,
``verify_witnessed``, ``verify_log_proof``, ``verify_witnessed_log_proof``,
``verify_consistency``); this module only combines their verdicts. With a
witness policy — the caller's own configuration, never one the log sends —
a checkpoint counts only with the policy's threshold of fresh cosignatures.
It makes no HTTP request: ``LogMonitor`` is given the two calls that fetch
the latest checkpoint and a consistency proof (a client's methods, or any
callables).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from mandate._native import (
    verify_checkpoint,
    verify_consistency,
    verify_log_proof,
    verify_witnessed,
    verify_witnessed_log_proof,
)
from mandate._types import (
    Checkpoint,
    JsonObject,
    LogProofResult,
    Witnessed,
    WitnessedLogProofResult,
    WitnessPolicy,
)
from mandate.errors import MandateError

LogKeys = str | Sequence[str]
"""Trusted log keys: one vkey, several one a line (as ``GET /v1/log/key``
serves them), or a list."""


def _refusal(code: str, message: str, index: int | None = None) -> MandateError:
    return MandateError(message, code=code, stage="log", index=index)


@dataclass(frozen=True)
class RecordEvent:
    """One event of a record whose proof verified."""

    index: int
    """The leaf's index in the log."""
    entry: JsonObject
    """The leaf, read as a log entry."""


@dataclass(frozen=True)
class VerifiedRecordProof:
    """A record's proof that verified: its checkpoint and every event."""

    aar_id: str
    checkpoint: Checkpoint
    events: list[RecordEvent]
    witnessed: Witnessed | None = None
    """With a policy: the checkpoint that met it (the proofs' own, or the
    older cosigned one the answer linked to) and the cosignatures that
    counted."""


def verify_record_proof(
    proof: Mapping[str, Any],
    vkeys: LogKeys,
    *,
    origin: str | None = None,
    policy: WitnessPolicy | Mapping[str, Any] | None = None,
    now: int | None = None,
) -> VerifiedRecordProof:
    """Checks a record's proof as ``GET /v1/vat/aar/{aar_id}/proof`` answers it.

    The checkpoint is signed by a trusted key (of ``origin``, when given),
    and every event's leaf is included in that same tree at the index
    given, is a log entry of the kind given, and names this record. With
    ``policy`` (the caller's), the checkpoint must also carry the policy's
    threshold of fresh cosignatures at ``now``, or the answer's
    ``cosigned`` must carry an older checkpoint that does and a consistency
    proof that the proofs' checkpoint extends it. A refusal raises
    ``MandateError`` (stage ``log``, or ``input``) naming the event at
    fault (``index``).
    """
    # Typed, but checked: a caller may hand over any JSON the server sent.
    given = cast(object, proof)
    if not isinstance(given, Mapping):
        raise MandateError("proof must be {aar_id, checkpoint, events}", code="invalid_argument", stage="input")
    aar_id: object = proof.get("aar_id")
    note: object = proof.get("checkpoint")
    events: object = proof.get("events")
    if not isinstance(aar_id, str) or not isinstance(note, str) or not isinstance(events, list):
        raise MandateError("proof must be {aar_id, checkpoint, events}", code="invalid_argument", stage="input")
    listed: list[object] = list(events)  # pyright: ignore[reportUnknownArgumentType]
    if not listed:
        raise _refusal("record_no_events", "the answer lists no event of the record")
    checkpoint = verify_checkpoint(note, vkeys, origin=origin)
    cosigned: object = proof.get("cosigned")
    if cosigned is not None and not isinstance(cosigned, Mapping):
        raise MandateError("cosigned must be {checkpoint, consistency}", code="invalid_argument", stage="input")
    witnessed: Witnessed | None = None
    verified_events: list[RecordEvent] = []
    for index, event in enumerate(listed):
        if not isinstance(event, Mapping):
            raise MandateError(
                "an event is {kind, index, leaf, proof}",
                code="invalid_argument",
                stage="input",
                index=index,
            )
        fields: Mapping[str, object] = event  # pyright: ignore[reportUnknownVariableType]
        event_proof = fields.get("proof")
        leaf = fields.get("leaf")
        if not isinstance(event_proof, str) or not isinstance(leaf, str):
            raise MandateError(
                "an event is {kind, index, leaf, proof}",
                code="invalid_argument",
                stage="input",
                index=index,
            )
        verified: LogProofResult | WitnessedLogProofResult
        try:
            if policy is None:
                verified = verify_log_proof(event_proof, leaf, vkeys, origin=origin)
            else:
                verified = verify_witnessed_log_proof(
                    event_proof,
                    leaf,
                    vkeys,
                    policy,
                    origin=origin,
                    cosigned=cast("Mapping[str, Any] | None", cosigned),
                    now=now,
                )
                witnessed = verified["witnessed"]
        except MandateError as error:
            error.index = index
            raise
        if verified["checkpoint"]["size"] != checkpoint["size"] or verified["checkpoint"]["root"] != checkpoint["root"]:
            raise _refusal(
                "record_checkpoint_mismatch",
                "the event's proof leads to another checkpoint than the answer's",
                index,
            )
        if verified["index"] != fields.get("index"):
            raise _refusal("record_index_mismatch", "the event's index is not the one its proof proves", index)
        if verified["entry"].get("kind") != fields.get("kind"):
            raise _refusal("record_kind_mismatch", "the event's kind is not its leaf's", index)
        if verified["entry"].get("aar_id") != aar_id:
            raise _refusal("record_mismatch", "the event's leaf is of another record", index)
        verified_events.append(RecordEvent(index=verified["index"], entry=verified["entry"]))
    return VerifiedRecordProof(aar_id=aar_id, checkpoint=checkpoint, events=verified_events, witnessed=witnessed)


MonitorStatus = Literal["first", "unchanged", "grew", "fork", "invalid"]


@dataclass(frozen=True)
class LogMonitorResult:
    """What one ``LogMonitor.check()`` found.

    ``first``: no checkpoint was trusted; the served one (``new``) is now.
    ``unchanged``: the same tree as the trusted one. ``grew``: a larger tree
    that extends the trusted one (its consistency proof verified); it is
    trusted now. ``fork``: the log contradicts what it showed before
    (``error`` says how); the new checkpoint is not trusted, and
    ``old_note`` and ``new_note`` are the two signed checkpoints that
    together prove it (a split view, to report). ``invalid``: the served
    checkpoint does not verify (or, with a policy, is not witnessed
    enough); nothing changes.
    """

    status: MonitorStatus
    old: Checkpoint | None = None
    new: Checkpoint | None = None
    error: MandateError | None = None
    old_note: str | None = None
    new_note: str | None = None


class LogMonitor:
    """Watches a record log.

    Each ``check()`` fetches the latest checkpoint, verifies it with the
    trusted keys and holds it to the last trusted one (RFC 6962
    consistency). With ``policy`` (the caller's witness policy), a
    checkpoint is trusted only with the policy's threshold of fresh
    cosignatures. Persist ``trusted`` to resume later. A fork or rollback is
    reported with both signed checkpoints and never trusted.
    """

    def __init__(
        self,
        *,
        vkeys: LogKeys,
        origin: str,
        fetch_checkpoint: Callable[[], str],
        fetch_consistency: Callable[[int, int], Mapping[str, Any]],
        trusted: str | None = None,
        policy: WitnessPolicy | Mapping[str, Any] | None = None,
        now: Callable[[], int] | None = None,
    ) -> None:
        """``fetch_checkpoint()`` answers ``GET /v1/log/checkpoint``'s note;
        ``fetch_consistency(old, new)`` answers ``GET /v1/log/consistency``
        (``{old, new, proof}``). ``trusted``: the note trusted last, to
        resume from; it must verify (else ``MandateError``) — its
        signature only: cosignatures that were fresh when it was trusted
        have since aged. ``policy``: the witness policy to hold served
        checkpoints to; ``now``: the clock it is judged by (default the
        system's)."""
        self._vkeys = vkeys
        self._origin = origin
        self._policy = policy
        self._now = now
        self._fetch_checkpoint = fetch_checkpoint
        self._fetch_consistency = fetch_consistency
        self._trusted: tuple[str, Checkpoint] | None = None
        if trusted is not None:
            self._trusted = (trusted, verify_checkpoint(trusted, vkeys, origin=origin))

    @property
    def trusted(self) -> str | None:
        """The checkpoint note trusted last: persist it to resume."""
        return None if self._trusted is None else self._trusted[0]

    @property
    def checkpoint(self) -> Checkpoint | None:
        """The checkpoint trusted last, read."""
        return None if self._trusted is None else self._trusted[1]

    def check(self) -> LogMonitorResult:
        """Fetches and judges the latest checkpoint. Raises only what the
        fetching callables raise."""
        note = self._fetch_checkpoint()
        try:
            if self._policy is None:
                latest = verify_checkpoint(note, self._vkeys, origin=self._origin)
            else:
                now = None if self._now is None else self._now()
                latest = verify_witnessed(note, self._vkeys, self._policy, origin=self._origin, now=now)["checkpoint"]
        except MandateError as error:
            return LogMonitorResult("invalid", error=error, new_note=note)
        if self._trusted is None:
            self._trusted = (note, latest)
            return LogMonitorResult("first", new=latest)
        old_note, old = self._trusted

        def fork(code: str, message: str) -> LogMonitorResult:
            return forked(_refusal(code, message))

        def forked(error: MandateError) -> LogMonitorResult:
            return LogMonitorResult("fork", old=old, new=latest, error=error, old_note=old_note, new_note=note)

        if latest["size"] == old["size"]:
            if latest["root"] == old["root"]:
                return LogMonitorResult("unchanged", old=old, new=latest)
            return fork("log_fork", f"two roots for the tree of {old['size']} leaves")
        if latest["size"] < old["size"]:
            return fork("log_rollback", f"the log shows {latest['size']} leaves after showing {old['size']}")
        answer = cast(object, self._fetch_consistency(old["size"], latest["size"]))
        if not isinstance(answer, Mapping):
            return fork("log_consistency_unusable", "the consistency answer is not for the sizes asked")
        fields: Mapping[str, object] = answer  # pyright: ignore[reportUnknownVariableType]
        proof = fields.get("proof")
        if fields.get("old") != old["size"] or fields.get("new") != latest["size"] or not isinstance(proof, list):
            return fork("log_consistency_unusable", "the consistency answer is not for the sizes asked")
        try:
            verify_consistency(
                {
                    "old_size": old["size"],
                    "old_root": old["root"],
                    "new_size": latest["size"],
                    "new_root": latest["root"],
                    "proof": proof,
                }
            )
        except MandateError as error:
            return forked(error)
        self._trusted = (note, latest)
        return LogMonitorResult("grew", old=old, new=latest)
