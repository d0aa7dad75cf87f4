"""The typed client of a Mandate server's /v1 API: :class:`Mandate` (sync) and :class:`AsyncMandate`."""

from mandate.client._act import ActContext, PendingApproval, output_hash, sha256_ref
from mandate.client._client import AgentMandate, AsyncAgentMandate, AsyncMandate, Mandate
from mandate.client._transport import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_MAX_RETRY_DELAY,
    DEFAULT_TIMEOUT,
    ProofKey,
    RequestOptions,
    WriteOptions,
)
from mandate.client.events import Event
from mandate.client.records import Attempt

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_MAX_RETRY_DELAY",
    "DEFAULT_TIMEOUT",
    "ActContext",
    "AgentMandate",
    "AsyncAgentMandate",
    "AsyncMandate",
    "Attempt",
    "Event",
    "Mandate",
    "PendingApproval",
    "ProofKey",
    "RequestOptions",
    "WriteOptions",
    "output_hash",
    "sha256_ref",
]
