"""The one exception class of the package: every refusal, local or remote."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class MandateError(Exception):
    """A refusal with a stable ``code``.

    Raised by the native verifier with core's code and the ``stage`` that
    refused, and by the client with the server's problem (``status``,
    ``field``, ``request_id``, ``retry_after``, the whole body as
    ``problem`` and the answer's ``headers``, names in lower case). A call
    that got no answer has ``status`` None and the client's own code:
    ``network_error``, ``timeout``.
    """

    def __init__(
        self,
        message: str,
        *,
        code: str,
        stage: str | None = None,
        index: int | None = None,
        status: int | None = None,
        field: str | None = None,
        request_id: str | None = None,
        retry_after: float | None = None,
        problem: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.stage = stage
        self.index = index
        self.status = status
        self.field = field
        self.request_id = request_id
        self.retry_after = retry_after
        self.problem: Mapping[str, Any] = problem if problem is not None else {}
        self.headers: Mapping[str, str] = headers if headers is not None else {}

    @property
    def detail(self) -> str | None:
        """The problem's ``detail``, when the server gave one."""
        detail = self.problem.get("detail")
        return detail if isinstance(detail, str) else None

    def __repr__(self) -> str:
        return f"MandateError({self.code!r}, {self.message!r})"


class MandateRefusal(MandateError):
    """Mandate refused the action ``act`` was asked to run, and it did not run.

    ``reason`` is the deny reason (``code`` is the same), ``reason_detail``
    the server's words on the argument rule that refused, ``aar_id`` the
    denied record. A refusal made offline, before anything was sent (the
    token's own argument rules refuse the call:
    :func:`mandate.client.check_args_offline`), has ``status`` 0 and no
    record; its ``problem`` names the ``rule`` and ``statement`` that
    refused, and the statement's ``truth``.
    """

    def __init__(
        self,
        reason: str,
        *,
        aar_id: str | None,
        reason_detail: str | None = None,
        message: str | None = None,
        status: int = 403,
        members: Mapping[str, Any] | None = None,
    ) -> None:
        text = message if message is not None else f"refused: {reason}"
        if reason_detail:
            text = f"{text} ({reason_detail})"
        problem: dict[str, Any] = {**(members or {}), "code": reason, "title": "Refused", "detail": text}
        if aar_id is not None:
            problem["aar_id"] = aar_id
        super().__init__(text, code=reason, status=status, problem=problem)
        self.reason = reason
        self.reason_detail = reason_detail
        self.aar_id = aar_id


class MandateApprovalPending(MandateError):
    """The action needs a human's approval not given (yet): it did not run.

    ``url`` is the reviewer's page in the dashboard; once approved, the
    record ``aar_id`` may be completed (or ``act`` called again).
    """

    def __init__(self, *, approval_id: str, aar_id: str, url: str, expires_at: str | None) -> None:
        text = f"a reviewer must approve this action first: {url}"
        super().__init__(
            text,
            code="approval_pending",
            status=403,
            problem={"code": "approval_pending", "title": "Approval pending", "detail": text, "aar_id": aar_id},
        )
        self.approval_id = approval_id
        self.aar_id = aar_id
        self.url = url
        self.expires_at = expires_at
