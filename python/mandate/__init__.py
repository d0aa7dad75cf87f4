"""Mandate for Python: the verifier from the server's own core, and a client."""

from mandate._native import verify_token
from mandate.client import AsyncMandate, Mandate
from mandate.errors import MandateApprovalPending, MandateError, MandateRefusal

__all__ = ["AsyncMandate", "Mandate", "MandateApprovalPending", "MandateError", "MandateRefusal", "verify_token"]
