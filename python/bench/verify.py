"""Verification in Python, side by side in one process.

mandate's ``verify_token`` and ``Verifier.verify`` (uncached and through its
cache) against PyJWT with ``cryptography``'s Ed25519 on the same valid token
(the key set's key, the header's ``typ`` and the claims' lifetime checked by
each). Rounds interleave the contenders; each figure is the median (with min
and max) of the per-round figures, as wall time per call.

    python bench/verify.py [--quick] [--json]

``cargo xtask bench --only python`` runs it with ``--json``.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from jwt.algorithms import OKPAlgorithm

import mandate

VECTORS = Path(__file__).resolve().parents[2] / "tests" / "vectors" / "tokens.json"


def main() -> None:
    quick = "--quick" in sys.argv
    vectors = json.loads(VECTORS.read_text())
    case = next(c for c in vectors["cases"] if c["name"] == "valid_root")
    token: str = case["token"]
    now: int = case["now"]
    jwks: dict[str, Any] = vectors["jwks"]
    jwks_text = json.dumps(jwks)
    kid = jwt.get_unverified_header(token)["kid"]
    key = OKPAlgorithm.from_jwk(json.dumps(next(k for k in jwks["keys"] if k["kid"] == kid)))
    if not isinstance(key, Ed25519PublicKey):
        raise RuntimeError("the key set's key is not an Ed25519 public key")
    verifier = mandate.Verifier(jwks)
    cached = mandate.Verifier(jwks, cache_size=1024)

    def pyjwt() -> None:
        # PyJWT reads the clock itself; the vector's `now` is given as leeway
        # from the real clock so its `exp` and `nbf` checks pass as mandate's do.
        decoded = jwt.api_jwt.decode_complete(
            token,
            key,
            algorithms=["EdDSA"],
            options={"require": ["exp", "iat", "iss", "sub", "jti"], "verify_aud": False},
            leeway=abs(time.time() - now) + 60,
        )
        if decoded["header"].get("typ") != "vat+jwt":
            raise RuntimeError("PyJWT: wrong typ")

    contenders: dict[str, Callable[[], object]] = {
        "verify_token": lambda: mandate.verify_token(token, jwks_text, now=now),
        "verifier": lambda: verifier.verify(token, now=now),
        "cached": lambda: cached.verify(token, now=now),
        "pyjwt": pyjwt,
    }
    calls = 200 if quick else 2000
    rounds = 3 if quick else 15
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for round_ in range(rounds + 1):
        for name, call in contenders.items():
            started = time.perf_counter_ns()
            for _ in range(calls):
                call()
            # Round 0 warms up and is not counted.
            if round_ > 0:
                times[name].append((time.perf_counter_ns() - started) / calls)

    def spread(samples: list[float]) -> dict[str, float]:
        return {"median": statistics.median(samples), "min": min(samples), "max": max(samples)}

    def ratio(a: str, b: str) -> dict[str, float]:
        return spread([x / y for x, y in zip(times[a], times[b], strict=True)])

    ns = {name: spread(samples) for name, samples in times.items()}
    ratios = {name: ratio("pyjwt", name) for name in ("verify_token", "verifier", "cached")}
    report = {
        "rounds": rounds,
        "calls": calls,
        "python": sys.version.split()[0],
        "pyjwt": jwt.__version__,
        "ns": ns,
        **{f"pyjwt_over_{name}": figures for name, figures in ratios.items()},
    }
    if "--json" in sys.argv:
        print(json.dumps(report))
        return
    print(f"median ns per call over {rounds} interleaved rounds of {calls} calls")
    for name, figures in ns.items():
        print(f"{name:<13} {figures['median']:>9.0f}")
    for name, figures in ratios.items():
        print(f"PyJWT / {name:<13} {figures['median']:.2f}")


if __name__ == "__main__":
    main()
