"""The wheel installs and its native module refuses with core's codes."""

import json
from pathlib import Path

import pytest

import mandate

VECTORS = Path(__file__).resolve().parents[2] / "tests" / "vectors"


def test_a_token_with_alg_none_is_refused_with_cores_code() -> None:
    tokens = json.loads((VECTORS / "tokens.json").read_text())
    case = next(c for c in tokens["cases"] if c["name"] == "alg_none")
    with pytest.raises(mandate.MandateError) as refused:
        mandate.verify_token(case["token"], json.dumps(tokens["jwks"]), now=case["now"])
    assert refused.value.code == "unsupported_alg"
    assert refused.value.stage == "verify"
