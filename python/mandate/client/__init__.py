"""The typed client of a Mandate server's /v1 API: :class:`Mandate` (sync) and :class:`AsyncMandate`.

::

    from mandate import Mandate, MandateRefusal

    with Mandate("https://mandate.example.com", api_key="mk_...") as mandate:
        root = mandate.tokens.issue_root(
            {"developer_email": "dev@example.com", "agent_id": "crm-bot",
             "resources": ["crm:*"], "actions": ["read"]}
        )
        rows = mandate.act(root["compact_jwt"], "read", "crm:accounts", {"limit": 10},
                           lambda context: fetch_accounts(limit=10))

Every failure raises :class:`mandate.MandateError` (a refused action
:class:`mandate.MandateRefusal`, one awaiting a reviewer
:class:`mandate.MandateApprovalPending`); the request and response types
are the TypedDicts of ``mandate.client._models``, generated from the
server's OpenAPI document.
"""

from mandate.client._act import ActContext, PendingApproval, output_hash, sha256_ref
from mandate.client._client import AgentMandate, AsyncAgentMandate, AsyncMandate, Mandate
from mandate.client._offline import check_args_offline
from mandate.client._transport import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_MAX_RETRY_DELAY,
    DEFAULT_TIMEOUT,
    EvaluationOptions,
    ProofKey,
    Relay,
    RelayKey,
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
    "EvaluationOptions",
    "Event",
    "Mandate",
    "PendingApproval",
    "ProofKey",
    "Relay",
    "RelayKey",
    "RequestOptions",
    "WriteOptions",
    "check_args_offline",
    "output_hash",
    "sha256_ref",
]
