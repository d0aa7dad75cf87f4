"""The token's own argument rules, judged before anything is sent: ``check_args_offline``."""

from __future__ import annotations

from typing import Any

from mandate._native import decode_token_unverified, permits
from mandate.client.records import Attempt
from mandate.errors import MandateError, MandateRefusal

#: The verdicts of the token's argument rules, the only refusals made offline.
_ARGS_CODES = ("args_required", "args_not_permitted")


def check_args_offline(token: str, attempt: Attempt) -> MandateError | None:
    """Why the token's own argument rules (``svc_constraints.args``) refuse ``attempt``, or None when they do not.

    Judged offline by mandate-core's evaluator (:func:`mandate.permits`): a
    :class:`~mandate.MandateRefusal` with ``status`` 0 and no record,
    ``args_required`` when a rule applies and ``attempt`` has no ``args``,
    ``args_not_permitted`` when a statement is not true (its ``problem``
    names ``rule``, ``statement`` and ``truth``); a
    :class:`~mandate.MandateError` with ``status`` 0 and the evaluator's
    code when the arguments are not ones the server takes (a member named
    twice, a number beyond ±2^53, not an object).

    The claims are read without checking the signature: this check can only
    refuse, never permit, and the server judges every call that passes it.
    So it leaves to the server what it cannot read (a string that is not a
    token, claims this version does not know: ``invalid_claims``) and a
    refusal by scope (``action_not_permitted``, ``resource_not_permitted``),
    which the server records as a denied record. The npm package's
    ``checkArgsOffline`` does the same.
    """
    try:
        claims = decode_token_unverified(token)["claims"]
    except MandateError:
        return None
    action, resource = attempt["action"], attempt["resource"]
    args: Any = attempt.get("args")
    try:
        verdict = permits(claims, action, resource, args)
    except MandateError as error:
        if error.code == "invalid_claims":
            return None
        problem = {"code": error.code, "title": "Invalid arguments", "detail": error.message}
        return MandateError(error.message, code=error.code, stage=error.stage, status=0, problem=problem)
    reason = verdict.get("reason")
    if verdict["ok"] or reason is None or reason["code"] not in _ARGS_CODES:
        return None
    members: dict[str, Any] = {}
    if "rule" in reason:
        members["rule"] = reason["rule"]
    if "statement" in reason:
        members["statement"] = reason["statement"]
    if "truth" in reason:
        members["truth"] = reason["truth"]
    code = reason["code"]
    return MandateRefusal(
        code,
        aar_id=None,
        status=0,
        members=members,
        message=(
            f"{action} on {resource} was refused offline by the token's argument rules ({code}): {reason['message']}"
        ),
    )
