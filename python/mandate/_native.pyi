"""Types of the native module (the PyO3 extension built from mandate-core)."""

def verify_token(
    token: str,
    jwks: str,
    *,
    now: int | None = None,
    leeway_seconds: int | None = None,
    issuer: str | None = None,
) -> str: ...
