"""mandate.RemoteVerifier and AsyncRemoteVerifier: key refresh on an unknown kid, status lists from allowed origins.

The hostile cases run against a fake server (``httpx.MockTransport``) and
the status list vectors, or lists and tokens signed here with keys of our
own; rotation and revocation against a live ``mandate serve``.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import subprocess
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import LiveServer
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

import mandate
from mandate import AgentKey, AsyncMandate, AsyncRemoteVerifier, Mandate, MandateError, RemoteVerifier
from mandate.mcp import MandateTokenVerifier
from mandate.remote import MAX_STATUS_TTL_SECONDS, MIN_STATUS_TTL_SECONDS

VECTORS = Path(__file__).resolve().parents[2] / "tests" / "vectors"
LISTS: dict[str, Any] = json.loads((VECTORS / "status_list.json").read_text())
CASES: dict[str, dict[str, Any]] = {case["name"]: case for case in LISTS["cases"]}
NOW: int = LISTS["now"]
BASE = "https://mandate.example"
JWKS_URL = f"{BASE}/.well-known/jwks.json"
LIST0 = f"{BASE}/v1/vat/status/0"

GOOD = CASES["valid"]["list"]  # list 0 signed at NOW - 60: entries 7, 8, 1000 and 65535 revoked
EARLIER = CASES["valid_before_revocation"]["list"]  # list 0 at NOW - 600: nothing revoked
OLD = CASES["stale"]["list"]  # list 0 at NOW - 7200
VALID = CASES["valid"]["token"]  # entry 3 of list 0
REVOKED = CASES["revoked"]["token"]  # entry 7 of list 0
UNLISTED = CASES["no_status_claim"]["token"]

Route = Callable[[httpx.Request], httpx.Response]


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def claims_of(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    data: dict[str, Any] = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return data


class Key:
    """A signing key of our own, published as the server would (kid: its RFC 7638 thumbprint)."""

    def __init__(self) -> None:
        self.private = Ed25519PrivateKey.generate()
        x = b64(self.private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw))
        self.kid = b64(
            hashlib.sha256(
                json.dumps({"crv": "Ed25519", "kty": "OKP", "x": x}, separators=(",", ":")).encode()
            ).digest()
        )
        self.jwk = {"kty": "OKP", "crv": "Ed25519", "x": x, "kid": self.kid, "alg": "EdDSA", "use": "sig"}

    def sign(self, typ: str, claims: dict[str, Any]) -> str:
        head = b64(json.dumps({"alg": "EdDSA", "typ": typ, "kid": self.kid}).encode())
        body = b64(json.dumps(claims).encode())
        return f"{head}.{body}.{b64(self.private.sign(f'{head}.{body}'.encode()))}"

    def token(self, **extra: Any) -> str:
        """The vectors' valid token (entry 3 of list 0), signed with this key."""
        return self.sign("vat+jwt", {**claims_of(VALID), **extra})

    def status_list(self, *, revoked: tuple[int, ...] = (), iat: int = NOW - 60, ttl: int = 300) -> str:
        bits = bytearray(16)
        for index in revoked:
            bits[index // 8] |= 1 << (index % 8)
        lst = b64(zlib.compress(bytes(bits), 9))
        claims = {"sub": LIST0, "iat": iat, "exp": iat + 86_400, "ttl": ttl, "status_list": {"bits": 1, "lst": lst}}
        return self.sign("statuslist+jwt", claims)


class Fake:
    """A fake server: the key set at JWKS_URL, each other URL from ``routes``; every request recorded."""

    def __init__(self, routes: dict[str, Route], *, keys: list[dict[str, Any]] | None = None) -> None:
        self.routes = routes
        self.jwks: dict[str, Any] = LISTS["jwks"] if keys is None else {"keys": keys}
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        url = str(request.url)
        if url == JWKS_URL:
            return httpx.Response(200, json=self.jwks)
        route = self.routes.get(url)
        return httpx.Response(404) if route is None else route(request)

    def status_requests(self) -> list[httpx.Request]:
        return [r for r in self.requests if str(r.url) != JWKS_URL]

    def key_requests(self) -> int:
        return sum(1 for r in self.requests if str(r.url) == JWKS_URL)

    def client(self) -> httpx.Client:
        return httpx.Client(transport=httpx.MockTransport(self))


def answer(jwt: str, etag: str | None = None) -> Route:
    headers = {"content-type": "application/statuslist+jwt", **({"etag": etag} if etag else {})}
    return lambda _request: httpx.Response(200, text=jwt, headers=headers)


def status(code: int, **headers: str) -> Route:
    return lambda _request: httpx.Response(code, headers=headers)


def offline(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("offline", request=request)


class Switch:
    """A route whose answer the test changes."""

    def __init__(self, route: Route) -> None:
        self.route = route

    def __call__(self, request: httpx.Request) -> httpx.Response:
        return self.route(request)


def remote(fake: Fake, **options: Any) -> RemoteVerifier:
    settings: dict[str, Any] = {"base_url": f"{BASE}/", "max_staleness_seconds": 3600, "clock": lambda: NOW, **options}
    return RemoteVerifier.create(http=fake.client(), **settings)


def code(call: Callable[[], object]) -> str | None:
    try:
        call()
    except MandateError as error:
        return error.code
    return None


def refusal(call: Callable[[], object]) -> MandateError:
    with pytest.raises(MandateError) as caught:
        call()
    return caught.value


def test_one_fetch_of_the_list_by_its_media_type_without_credentials() -> None:
    fake = Fake({LIST0: answer(GOOD, '"v1"')})
    verifier = remote(fake)
    assert [str(r.url) for r in fake.requests] == [JWKS_URL]
    assert verifier.allowed_status_origins == [BASE]
    assert verifier.verify(VALID, now=NOW)["claims"]["status"]["status_list"]["idx"] == 3
    assert refusal(lambda: verifier.verify(REVOKED, now=NOW)).code == "token_revoked"
    assert code(lambda: verifier.verify(VALID, now=NOW + 299)) is None
    [fetched] = fake.status_requests()
    assert str(fetched.url) == LIST0
    assert fetched.headers["accept"] == "application/statuslist+jwt"
    assert "authorization" not in fetched.headers and "if-none-match" not in fetched.headers
    # A token without a status claim, an invalid one and an expired one fetch nothing.
    assert code(lambda: verifier.verify(UNLISTED, now=NOW)) is None
    assert code(lambda: verifier.verify(CASES["typ_jwt"]["list"], now=NOW)) == "invalid_typ"
    assert code(lambda: verifier.verify(VALID, now=NOW + 5000)) == "expired"
    assert len(fake.status_requests()) == 1


def test_after_its_ttl_the_list_is_asked_for_again_with_its_etag_and_a_304_keeps_it() -> None:
    route = Switch(answer(EARLIER, '"v1"'))
    fake = Fake({LIST0: route})
    verifier = remote(fake)
    assert code(lambda: verifier.verify(REVOKED, now=NOW)) is None
    route.route = status(304)
    # Within the ttl (300 s): no fetch, whatever the server now has.
    assert code(lambda: verifier.verify(REVOKED, now=NOW + 299)) is None
    assert len(fake.status_requests()) == 1
    # Past it: asked again with the ETag; the 304 keeps the list and restarts the ttl.
    assert code(lambda: verifier.verify(REVOKED, now=NOW + 300)) is None
    assert len(fake.status_requests()) == 2
    assert fake.status_requests()[1].headers["if-none-match"] == '"v1"'
    assert code(lambda: verifier.verify(REVOKED, now=NOW + 599)) is None
    assert len(fake.status_requests()) == 2
    # The revocation is published: the next refresh brings it.
    route.route = answer(GOOD, '"v2"')
    assert code(lambda: verifier.verify(REVOKED, now=NOW + 600)) == "token_revoked"
    assert len(fake.status_requests()) == 3


def test_a_304_does_not_make_a_list_younger_past_max_staleness_it_fails_closed() -> None:
    route = Switch(answer(GOOD, '"v1"'))
    verifier = remote(Fake({LIST0: route}), max_staleness_seconds=600)
    assert code(lambda: verifier.verify(VALID, now=NOW)) is None
    route.route = status(304)
    # GOOD was signed at NOW - 60: at NOW + 541 it is 601 s old.
    assert code(lambda: verifier.verify(VALID, now=NOW + 540)) is None
    stale = refusal(lambda: verifier.verify(VALID, now=NOW + 541))
    assert (stale.code, stale.stage) == ("status_stale", "status")


@pytest.mark.parametrize(
    ("route", "reason"),
    [
        (offline, "could not be fetched"),
        (status(500), "HTTP 500"),
        (status(304), "HTTP 304"),
        (answer(CASES["tampered_lst"]["list"]), "invalid_signature"),
        (answer(CASES["wrong_key"]["list"]), "invalid_signature"),
        (answer(CASES["zip_bomb"]["list"]), "list_too_large"),
        (answer(CASES["other_list_valid"]["list"]), "is the list of"),
        (answer(OLD), "issued longer ago"),
        (status(302, location="https://elsewhere.example/list"), "not an allowed origin"),
    ],
)
def test_a_list_that_cannot_be_fetched_or_is_refused_fails_closed_and_is_not_asked_again_at_once(
    route: Route, reason: str
) -> None:
    fake = Fake({LIST0: route})
    verifier = remote(fake)
    refused = refusal(lambda: verifier.verify(VALID, now=NOW))
    assert refused.code in ("status_unknown", "status_stale") and refused.stage == "status"
    assert reason in refused.message
    # Throttled: asking again at once does not fetch again.
    assert code(lambda: verifier.verify(VALID, now=NOW + MIN_STATUS_TTL_SECONDS - 1)) == refused.code
    assert len(fake.status_requests()) == 1
    assert all(r.url.host == "mandate.example" for r in fake.requests)


def test_a_redirect_within_the_origin_is_followed() -> None:
    fake = Fake({LIST0: status(307, location="/lists/0"), f"{BASE}/lists/0": answer(GOOD)})
    verifier = remote(fake)
    assert code(lambda: verifier.verify(REVOKED, now=NOW)) == "token_revoked"
    assert [r.url.path for r in fake.status_requests()] == ["/v1/vat/status/0", "/lists/0"]


def test_a_list_held_is_still_used_while_a_refresh_fails() -> None:
    route = Switch(answer(GOOD, '"v1"'))
    fake = Fake({LIST0: route})
    verifier = remote(fake)
    assert code(lambda: verifier.verify(REVOKED, now=NOW)) == "token_revoked"
    route.route = offline
    assert code(lambda: verifier.verify(REVOKED, now=NOW + 400)) == "token_revoked"
    assert code(lambda: verifier.verify(VALID, now=NOW + 400)) is None
    assert len(fake.status_requests()) == 2


def test_a_token_naming_another_origin_makes_no_request_there() -> None:
    fake = Fake({LIST0: answer(GOOD)})
    elsewhere = RemoteVerifier.create(
        jwks_url=JWKS_URL,
        allowed_status_origins=["https://status.example/"],
        max_staleness_seconds=3600,
        http=fake.client(),
    )
    assert elsewhere.allowed_status_origins == ["https://status.example"]
    refused = refusal(lambda: elsewhere.verify(VALID, now=NOW))
    assert (refused.code, refused.stage) == ("status_origin_not_allowed", "status")
    assert fake.status_requests() == []
    # Allowed explicitly, it is fetched.
    allowed = remote(fake, allowed_status_origins=["HTTPS://Mandate.Example"])
    assert code(lambda: allowed.verify(VALID, now=NOW)) is None
    assert len(fake.status_requests()) == 1


def test_the_ttl_is_held_within_its_bounds() -> None:
    key = Key()
    for ttl, kept in ((1, MIN_STATUS_TTL_SECONDS), (10 * MAX_STATUS_TTL_SECONDS, MAX_STATUS_TTL_SECONDS)):
        fake = Fake({LIST0: answer(key.status_list(ttl=ttl, iat=NOW))}, keys=[key.jwk])
        verifier = remote(fake, max_staleness_seconds=86_400)
        token = key.token(exp=NOW + 2 * MAX_STATUS_TTL_SECONDS)
        assert code(lambda: verifier.verify(token, now=NOW)) is None
        assert code(lambda: verifier.verify(token, now=NOW + kept - 1)) is None
        assert len(fake.status_requests()) == 1, ttl
        assert code(lambda: verifier.verify(token, now=NOW + kept)) is None
        assert len(fake.status_requests()) == 2, ttl


def test_forged_kids_make_one_fetch_per_cooldown_and_a_rotated_key_is_followed() -> None:
    first, rotated, stranger = Key(), Key(), Key()
    fake = Fake({LIST0: answer(first.status_list())}, keys=[first.jwk])
    clock = [NOW]
    verifier = remote(fake, clock=lambda: clock[0])
    assert code(lambda: verifier.verify(first.token())) is None
    assert fake.key_requests() == 1
    # A storm of tokens naming a kid nobody publishes: one fetch per cooldown (30 s), then unknown_kid.
    forged = stranger.token()
    clock[0] += 31
    for _ in range(60):
        clock[0] += 1
        assert code(lambda: verifier.verify(forged)) == "unknown_kid"
    assert fake.key_requests() == 3
    # The server rotates in a new key: a token of it is verified after one fetch.
    fake.jwks = {"keys": [rotated.jwk, first.jwk]}
    clock[0] += 31
    assert code(lambda: verifier.verify(rotated.token())) is None
    assert fake.key_requests() == 4
    assert code(lambda: verifier.verify(first.token())) is None
    # A list signed by a key rotated in makes the verifier fetch the key set too.
    late_fake = Fake({LIST0: answer(rotated.status_list(revoked=(3,)))}, keys=[first.jwk])
    late = remote(late_fake)
    late_fake.jwks = {"keys": [rotated.jwk, first.jwk]}
    refused = refusal(lambda: late.verify(first.token(), now=NOW + 31))
    assert refused.code == "token_revoked", refused.message
    assert late_fake.key_requests() == 2
    # The cooldown is an option: 0 fetches for every unknown kid.
    eager = remote(Fake({}, keys=[first.jwk]), key_refresh_cooldown_seconds=0)
    for _ in range(3):
        assert code(lambda: eager.verify(forged, now=NOW)) == "unknown_kid"
    assert refusal(lambda: remote(Fake({}), key_refresh_cooldown_seconds=-1)).code == "invalid_options"


def test_verify_request_checks_the_proof_once_even_when_the_list_is_refreshed_first() -> None:
    key, agent = Key(), AgentKey.generate()
    fake = Fake({LIST0: answer(key.status_list(iat=NOW))}, keys=[key.jwk])
    verifier = remote(fake)
    token = key.token(cnf={"jkt": agent.jkt})
    url = "https://api.example/crm"

    def proof(at: int) -> str:
        return agent.proof(method="POST", url=url, access_token=token, now=at)

    assert code(lambda: verifier.verify(token, now=NOW)) == "dpop_required"
    first = proof(NOW)
    assert verifier.verify_request(token, method="POST", url=url, proof=first, now=NOW)["claims"]["cnf"]
    assert code(lambda: verifier.verify_request(token, method="POST", url=url, proof=first, now=NOW)) == "dpop_replayed"
    assert code(lambda: verifier.verify_request(token, method="POST", url=url, now=NOW)) == "dpop_required"
    # Past the list's ttl the list is fetched first, and the proof is still good once.
    later = proof(NOW + 300)
    assert code(lambda: verifier.verify_request(token, method="POST", url=url, proof=later, now=NOW + 300)) is None
    assert len(fake.status_requests()) == 2
    # A key refresh (which anyone can cause with a forged kid) does not make a proof good again.
    assert code(lambda: verifier.verify(Key().token(), now=NOW + 301)) == "unknown_kid"
    assert fake.key_requests() == 2
    assert (
        code(lambda: verifier.verify_request(token, method="POST", url=url, proof=later, now=NOW + 301))
        == "dpop_replayed"
    )
    assert verifier.verify_request(token, method="POST", url=url, proof=proof(NOW + 301), now=NOW + 301)


def test_an_unusable_key_set_or_server_is_a_mandate_error() -> None:
    bad = Fake({}, keys=[])
    bad.jwks = {"keys": "no"}
    assert refusal(lambda: remote(bad)).code == "malformed_jwks"

    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("down", request=request)

    for transport, expected in (
        (down, "network_error"),
        (lambda _r: httpx.Response(503), "jwks_unavailable"),
        (lambda _r: httpx.Response(200, text="<html>"), "invalid_response"),
    ):
        http = httpx.Client(transport=httpx.MockTransport(transport))
        error = refusal(lambda: RemoteVerifier.create(base_url=BASE, max_staleness_seconds=60, http=http))
        assert error.code == expected
    assert refusal(lambda: RemoteVerifier.create(max_staleness_seconds=60)).code == "invalid_options"
    for staleness in (-1, None, "60"):
        assert refusal(lambda: remote(Fake({}), max_staleness_seconds=staleness)).code == "invalid_options"
    for origins in (["https://x.example/path"], "https://x.example", [5]):
        assert refusal(lambda: remote(Fake({}), allowed_status_origins=origins)).code == "invalid_options"


def test_async_verifications_at_once_share_one_fetch() -> None:
    fake = Fake({LIST0: answer(GOOD)})

    async def handler(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(0.05)
        return fake(request)

    async def go() -> list[str | None]:
        verifier = await AsyncRemoteVerifier.create(
            base_url=BASE,
            max_staleness_seconds=3600,
            clock=lambda: NOW,
            http=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
        )

        async def one(token: str) -> str | None:
            try:
                await verifier.verify(token)
            except MandateError as error:
                return error.code
            return None

        verdicts = await asyncio.gather(one(VALID), one(REVOKED), one(VALID), one(UNLISTED))
        await verifier.close()
        return list(verdicts)

    assert asyncio.run(go()) == [None, "token_revoked", None, None]
    assert len(fake.status_requests()) == 1


def test_the_mcp_token_verifier_takes_either_remote_verifier() -> None:
    key = Key()
    fake = Fake({LIST0: answer(key.status_list(revoked=(7,), iat=NOW))}, keys=[key.jwk])
    good, revoked = key.token(), key.token(status={"status_list": {"idx": 7, "uri": LIST0}})

    async def go() -> list[bool]:
        sync = MandateTokenVerifier(remote(fake))
        asynchronous = await AsyncRemoteVerifier.create(
            base_url=BASE,
            max_staleness_seconds=3600,
            clock=lambda: NOW,
            http=httpx.AsyncClient(transport=httpx.MockTransport(fake)),
        )
        checker = MandateTokenVerifier(asynchronous)
        seen = [await v.verify_token(t) is not None for v in (sync, checker) for t in (good, revoked, "junk")]
        await asynchronous.close()
        return seen

    assert asyncio.run(go()) == [True, False, False, True, False, False]


# Against a live server.


def issue(admin: Mandate, agent: str) -> str:
    token: str = admin.tokens.issue_root(
        {"developer_email": "dev@example.com", "agent_id": agent, "resources": ["crm:*"], "actions": ["read"]}
    )["compact_jwt"]
    return token


def test_live_a_revocation_reaches_the_verifier_through_the_status_list(live_server: LiveServer) -> None:
    with Mandate(live_server.base_url, api_key=live_server.api_key) as admin:
        token = issue(admin, "remote-revoked")
        jti = mandate.decode_token_unverified(token)["claims"]["jti"]
        now = int(time.time())
        with admin.remote_verifier(max_staleness_seconds=600, clock=lambda: now) as verifier:
            assert verifier.allowed_status_origins == [live_server.base_url]
            assert verifier.verify(token)["claims"]["jti"] == jti
            admin.tokens.revoke({"jti": jti})
            # Within the list's ttl the list held decides: the revocation is not seen yet.
            assert code(lambda: verifier.verify(token)) is None
            # Past it the list is fetched again, and the revocation is in it.
            now += 300
            verdict = code(lambda: verifier.verify(token))
            assert verdict == "token_revoked"
            # Never further than max_staleness_seconds from a list the server signed: fails closed.
            now += 10_000
            assert code(lambda: verifier.verify(token)) in ("status_stale", "expired")

        async def through_mcp() -> tuple[bool, bool]:
            async with AsyncMandate(live_server.base_url) as client:
                checker = MandateTokenVerifier(await client.remote_verifier(max_staleness_seconds=600))
                fresh = issue(admin, "remote-mcp")
                return await checker.verify_token(fresh) is not None, await checker.verify_token(token) is not None

        assert asyncio.run(through_mcp()) == (True, False)


def test_live_a_rotated_signing_key_is_fetched_once_a_token_names_it(own_server: LiveServer) -> None:
    binary = os.environ["MANDATE_BIN"]
    with Mandate(own_server.base_url, api_key=own_server.api_key) as admin:
        before = issue(admin, "remote-before")
        now = int(time.time())
        with admin.remote_verifier(max_staleness_seconds=600, clock=lambda: now) as verifier:
            assert code(lambda: verifier.verify(before)) is None
            old_kid = mandate.decode_token_unverified(before)["header"]["kid"]
            subprocess.run(
                [binary, "signing-key", "rotate", "--data-dir", own_server.data_dir], check=True, capture_output=True
            )
            after = before
            deadline = time.monotonic() + 30
            while mandate.decode_token_unverified(after)["header"]["kid"] == old_kid and time.monotonic() < deadline:
                time.sleep(0.5)
                after = issue(admin, "remote-after")
            assert mandate.decode_token_unverified(after)["header"]["kid"] != old_kid
            # Within the cooldown the new kid is not fetched; past it, once.
            assert code(lambda: verifier.verify(after)) == "unknown_kid"
            now += 31
            assert code(lambda: verifier.verify(after)) is None
            # The old key stays published: its tokens still verify.
            assert code(lambda: verifier.verify(before)) is None


def test_the_native_set_keys_drops_lists_and_cache_and_keeps_proofs() -> None:
    verifier = mandate.Verifier(LISTS["jwks"], check_status=True, cache_size=8)
    verifier.set_status_list(GOOD, now=NOW)
    assert verifier.verify(VALID, now=NOW) and verifier.cached == 1
    junks: list[Any] = [{"keys": "no"}, 5, "not json"]
    for junk in junks:
        assert refusal(lambda: verifier.set_keys(junk)).code == "malformed_jwks"
    assert verifier.cached == 1
    verifier.set_keys(LISTS["jwks"])
    assert verifier.cached == 0
    assert code(lambda: verifier.verify(VALID, now=NOW)) == "status_unknown"
    verifier.set_status_list(GOOD, now=NOW)
    assert code(lambda: verifier.verify(REVOKED, now=NOW)) == "token_revoked"
