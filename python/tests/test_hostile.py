"""Hostile input: every argument of the wrong type or shape is a
MandateError (stage ``input``, or the stage whose input it is), never a
TypeError, a panic or a crash; nothing refused is ever answered as valid."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import mandate
from mandate import MandateError

VECTORS = Path(__file__).resolve().parents[2] / "tests" / "vectors"
TOKENS = json.loads((VECTORS / "tokens.json").read_text(encoding="utf-8"))
JWKS = TOKENS["jwks"]
VALID = next(c for c in TOKENS["cases"] if c["name"] == "valid_root")

JUNK: list[Any] = [
    None,
    42,
    -1,
    2**70,
    1.5,
    math.nan,
    True,
    b"\xff\x00",
    bytearray(b"x"),
    "",
    "\ud800",
    "x" * 100_000,
    [],
    [None],
    {},
    {"a": object()},
    object(),
    {1: 2},
    ("a", "b"),
]


def refused(call: Callable[[], object]) -> MandateError:
    with pytest.raises(MandateError) as error:
        call()
    return error.value


def test_verify_token_refuses_junk_tokens_and_key_sets() -> None:
    judged = 0
    for junk in JUNK:
        if isinstance(junk, str):
            error = refused(lambda: mandate.verify_token(junk, JWKS, now=VALID["now"]))
            assert error.stage in {"input", "verify"}, repr(junk)[:40]
        else:
            error = refused(lambda: mandate.verify_token(junk, JWKS, now=VALID["now"]))
            assert error.stage == "input", repr(junk)[:40]
        error = refused(lambda: mandate.verify_token(VALID["token"], junk, now=VALID["now"]))
        assert error.stage in {"jwks", "input"}, repr(junk)[:40]
        judged += 1
    assert judged == len(JUNK)


@pytest.mark.parametrize(
    "options",
    [
        {"now": "soon"},
        {"now": 1.5},
        {"now": True},
        {"now": 2**80},
        {"leeway_seconds": -1},
        {"leeway_seconds": "5"},
        {"issuer": 5},
        {"revoked": "jti"},
        {"revoked": [5]},
        {"revoked": ["not a jti"]},
        {"request": "POST"},
        {"request": {"method": "POST"}},
        {"request": {"method": "POST", "url": "https://x", "extra": 1}},
        {"request": {"method": "POST", "url": "https://x"}, "skip_proof_of_possession": True},
        {"skip_proof_of_possession": 1},
        {"status_list": 5},
        {"max_staleness_seconds": 5},
        {"status_origins": ["https://x"]},
        {"status_list": "x", "status_origins": ["https://x/path"]},
        {"status_list": "x", "status_origins": "https://x"},
    ],
)
def test_verify_token_refuses_bad_options(options: dict[str, Any]) -> None:
    error = refused(lambda: mandate.verify_token(VALID["token"], JWKS, **options))
    assert error.stage == "input", options
    assert error.code in {"invalid_argument", "invalid_options", "invalid_revoked"}, options


def test_the_verifier_refuses_junk() -> None:
    bad_options: list[dict[str, Any]] = [
        {"cache_size": -1},
        {"check_status": "yes"},
        {"max_staleness_seconds": 5},
        {"status_origins": ["ftp://x"], "check_status": True},
    ]
    for options in bad_options:
        assert refused(lambda: mandate.Verifier(JWKS, **options)).stage == "input", options
    verifier = mandate.Verifier(JWKS, cache_size=4)
    for junk in JUNK:
        if not isinstance(junk, str):
            assert refused(lambda: verifier.verify(junk)).stage == "input"
            if junk == []:
                # Revoking nothing is not an error.
                verifier.revoke(junk)
                continue
            assert refused(lambda: verifier.revoke(junk)).code in {
                "invalid_argument",
                "invalid_revoked",
            }
    assert refused(lambda: verifier.revoke(["x", VALID["expect"]["claims"]["jti"]])).code == ("invalid_revoked")
    # All or nothing: the valid jti was not added.
    assert verifier.verify(VALID["token"], now=VALID["now"])["claims"] == VALID["expect"]["claims"]
    assert refused(lambda: verifier.set_status_list("x")).code == "status_checking_off"
    assert refused(lambda: verifier.verify_request(VALID["token"], method=JUNK[1], url="x")).stage == ("input")


def test_a_cache_hit_is_checked_again() -> None:
    verifier = mandate.Verifier(JWKS, cache_size=8)
    first = verifier.verify(VALID["token"], now=VALID["now"])
    assert verifier.cached == 1
    # Each hit is fresh Python values: changing one changes no other.
    first["claims"]["sub"] = "changed"
    assert verifier.verify(VALID["token"], now=VALID["now"])["claims"] == VALID["expect"]["claims"]
    verifier.revoke(VALID["expect"]["claims"]["jti"])
    assert refused(lambda: verifier.verify(VALID["token"], now=VALID["now"])).code == "revoked"
    late = VALID["expect"]["claims"]["exp"] + 3600
    assert refused(lambda: verifier.verify(VALID["token"], now=late)).stage == "verify"
    verifier.clear_cache()
    assert verifier.cached == 0


def test_functions_refuse_junk_with_a_code() -> None:
    calls: list[Callable[[Any], object]] = [
        lambda j: mandate.decode_token_unverified(j),
        lambda j: mandate.verify_chain(j, JWKS),
        lambda j: mandate.verify_status_list(j, JWKS),
        lambda j: mandate.verify_proof(j, method="GET", url="https://x", access_token="t", jkt="k"),
        lambda j: mandate.permits(j, "read", "a:b"),
        lambda j: mandate.permits({"resources": ["a:*"], "actions": ["read"]}, j, "a:b"),
        lambda j: mandate.permits({"resources": ["a:*"], "actions": ["read"]}, "read", j),
        lambda j: mandate.check_narrowing(j, {}),
        lambda j: mandate.delegated_grant(j, {}),
        lambda j: mandate.evaluate_policy(j, {}),
        lambda j: mandate.evaluate_policy([], j),
        lambda j: mandate.sha256_ref(j),
        lambda j: mandate.reputation(j),
        lambda j: mandate.summarize_workflow(j),
        lambda j: mandate.summarize_workflow([j]),
        lambda j: mandate.trust_scores(j),
        lambda j: mandate.verify_trust_statement(j, JWKS),
        lambda j: mandate.verify_webhook(j, {}, secrets=[]),
        lambda j: mandate.verify_webhook("{}", j, secrets=[]),
        lambda j: mandate.verify_webhook("{}", {}, secrets=j),
        lambda j: mandate.verify_checkpoint(j, "k"),
        lambda j: mandate.verify_checkpoint("n", j),
        lambda j: mandate.verify_log_proof(j, "AA==", "k"),
        lambda j: mandate.verify_consistency(j),
        lambda j: mandate.parse_log_leaf(j),
        lambda j: mandate.AgentKey.from_jwk(j),
        lambda j: mandate.AgentKey.generate(j),
        lambda j: mandate.verify_record_proof(j, "k"),
    ]
    refusals = 0
    for call in calls:
        for junk in JUNK:
            try:
                call(junk)
            except MandateError as error:
                assert error.code and error.stage, (call, junk)
                refusals += 1
    # Most junk is refused by every function (a str is text for some, bytes
    # are data for sha256_ref, None is "none" for optional arguments).
    assert refusals >= len(calls) * len(JUNK) * 3 // 4


def test_agent_key_round_trip_and_proofs_verify() -> None:
    key = mandate.AgentKey.generate(bytes(range(32)))
    again = mandate.AgentKey.from_jwk(key.export_jwk())
    assert again.jkt == key.jkt
    assert mandate.AgentKey.from_jwk(json.dumps(key.export_jwk())).public_jwk == key.public_jwk
    assert "d" not in key.public_jwk
    proof = key.proof(method="POST", url="https://x.example/a", access_token="tok", now=1_800_000_000)
    verified = mandate.verify_proof(
        proof,
        method="POST",
        url="https://x.example/a",
        access_token="tok",
        jkt=key.jkt,
        now=1_800_000_000,
    )
    assert verified["jkt"] == key.jkt
    assert mandate.AgentKey.generate().jkt != key.jkt
    assert refused(lambda: mandate.AgentKey.generate(b"short")).code == "invalid_argument"


def test_summarize_workflow_and_its_refusals() -> None:
    records: list[dict[str, Any]] = [
        {
            "agent_id": "a",
            "action": "read",
            "status": "completed",
            "result": "success",
            "provenance_ref": "p",
            "extra": 1,
        },
        {"agent_id": "b", "action": "read", "status": "denied", "provenance_ref": "p"},
    ]
    summary = mandate.summarize_workflow(records)
    assert (summary["provenance_ref"], summary["total_records"], summary["unique_agents"]) == ("p", 2, 2)
    assert refused(lambda: mandate.summarize_workflow(records, "q")).code == "provenance_mismatch"
    assert refused(lambda: mandate.summarize_workflow([])).code == "missing_provenance_ref"
    assert mandate.summarize_workflow([], "p")["total_records"] == 0
    assert refused(lambda: mandate.summarize_workflow([{**records[0], "status": "odd"}])).stage == "input"


def test_deep_nesting_is_refused_not_a_crash() -> None:
    deep: Any = 0
    for _ in range(5_000):
        deep = [deep]
    assert refused(lambda: mandate.evaluate_policy(deep, {})).stage == "input"
    assert refused(lambda: mandate.evaluate_policy([], {"a": deep})).stage == "input"
    assert refused(lambda: mandate.verify_token(VALID["token"], {"keys": deep})).stage in {
        "input",
        "jwks",
    }
    nested: Any = {}
    for _ in range(5_000):
        nested = {"a": nested}
    assert refused(lambda: mandate.trust_scores(nested)).code == "invalid_graph"
