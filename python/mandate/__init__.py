"""Mandate for Python: the verifier from the server's own core, and a client."""

from mandate._native import verify_token
from mandate.errors import MandateError

__all__ = ["MandateError", "verify_token"]
