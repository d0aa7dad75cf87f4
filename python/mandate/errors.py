"""The one exception class of the package: every refusal, local or remote."""

from __future__ import annotations


class MandateError(Exception):
    """A refusal with a stable ``code``.

    Raised by the native verifier with core's code and the ``stage`` that
    refused, and by the client with the server's problem (``status``,
    ``field``, ``request_id``, ``retry_after``).
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

    def __repr__(self) -> str:
        return f"MandateError({self.code!r}, {self.message!r})"
