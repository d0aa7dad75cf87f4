"""A verifier that keeps itself current from one Mandate server: the npm package's ``RemoteVerifier``.

It verifies tokens offline with the native :class:`~mandate.Verifier` and
fetches only what that needs: the server's key set once, again for a token
whose ``kid`` it lacks (a key rotated in), and the status list (IETF Token
Status List) each token names, so a revoked token is refused without
calling the API for every request.

What it fetches, and from where:

- Status lists only from an allowed origin: by default the origin of the
  server's key set, never the origin a token happens to name (a token must
  not make its verifier fetch arbitrary URLs). A token naming another origin
  is refused (``status_origin_not_allowed``). A redirect is followed only to
  an allowed origin: the verifier never sends a request anywhere else.
- Only for a token that passed every other check: a forged or expired token
  triggers no fetch.
- With ``Accept: application/statuslist+jwt``, without the client's
  credentials, and with ``If-None-Match`` when a list of that URI is held.
- The key set again at most once per ``key_refresh_cooldown_seconds`` (30 by
  default), so tokens naming unknown kids cannot make it fetch on every
  request; a kid still unknown after the refresh is refused
  (``unknown_kid``).

How long a list is kept:

- A list is fetched again once its ``ttl`` has passed since it was fetched,
  the ``ttl`` held within [:data:`MIN_STATUS_TTL_SECONDS`,
  :data:`MAX_STATUS_TTL_SECONDS`]. HTTP caching headers are ignored: the
  signed ``ttl`` and ``exp`` decide.
- A ``304 Not Modified`` keeps the held list and restarts its ttl. It does
  not make the list younger: its age for ``max_staleness_seconds`` is
  counted from its signed ``iat``, which an unsigned 304 cannot vouch for.
- A list whose fetch fails is still used while the verifier accepts it (not
  expired, not older than ``max_staleness_seconds``); past that the token is
  refused (``status_stale``, ``status_list_expired``), and with no list at
  all ``status_unknown``: it fails closed. A URI is fetched at most once per
  :data:`MIN_STATUS_TTL_SECONDS`, whatever happens.

Every refusal raises :class:`~mandate.MandateError` with core's code and
stage; ``verify`` never returns a refusal. The sync :class:`RemoteVerifier`
(``httpx.Client``) and the async :class:`AsyncRemoteVerifier`
(``httpx.AsyncClient``) share every decision (a state machine that asks for
fetches); only the fetching differs. Each runs one verification at a time
while it fetches, so verifications at once share one fetch.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypedDict, TypeVar, cast
from urllib.parse import urljoin

import httpx

from mandate._native import Verifier, decode_token_unverified
from mandate._types import HeldStatusList, VerifiedToken
from mandate.errors import MandateError

__all__ = [
    "AsyncRemoteVerifier",
    "KEY_REFRESH_COOLDOWN_SECONDS",
    "MAX_STATUS_TTL_SECONDS",
    "MIN_STATUS_TTL_SECONDS",
    "RemoteVerifier",
    "RemoteVerifierOptions",
    "STATUS_LIST_MEDIA_TYPE",
]

#: The media type of a status list token in JWT form.
STATUS_LIST_MEDIA_TYPE = "application/statuslist+jwt"
#: A list is kept at least this long, and its URI fetched at most once per this long (seconds).
MIN_STATUS_TTL_SECONDS = 10
#: A list is fetched again at the latest this long after it was fetched, whatever its ``ttl`` (seconds).
MAX_STATUS_TTL_SECONDS = 3600
#: The key set is fetched again, for a kid it lacks, at most once per this long by default (seconds).
KEY_REFRESH_COOLDOWN_SECONDS = 30
#: The timeout of one fetch by default (seconds).
DEFAULT_FETCH_TIMEOUT = 10.0
#: Most redirects one fetch follows (each to an allowed origin).
MAX_REDIRECTS = 5

#: The refusals a fresher list may cure.
_STATUS_CODES_TO_REFRESH = frozenset({"status_unknown", "status_stale", "status_list_expired"})

T = TypeVar("T")


class RemoteVerifierOptions(TypedDict, total=False):
    """The options of a remote verifier but where it fetches from and how (``Mandate.remote_verifier``)."""

    #: Origins (``https://host[:port]``) status lists may be fetched from; default the key set's origin only.
    allowed_status_origins: Sequence[str]
    #: The least time between two fetches of the key set for unknown kids (seconds; default 30).
    key_refresh_cooldown_seconds: int
    #: Those of the native ``Verifier``.
    leeway_seconds: int
    issuer: str
    revoked: Sequence[str]
    cache_size: int
    #: The clock, in unix seconds; default the system's.
    clock: Callable[[], int]


@dataclass(frozen=True)
class _Get:
    """A fetch the state machine asks its shell for."""

    url: str
    headers: Mapping[str, str]


@dataclass(frozen=True)
class _Got:
    """What a fetch brought: an answer (``status`` > 0), or why there was none (``failure``)."""

    status: int = 0
    headers: Mapping[str, str] | None = None
    text: str = ""
    failure: str | None = None


#: A computation that may fetch: it yields the fetches it needs and is sent what each brought.
_Steps = Generator[_Get, _Got, T]


@dataclass
class _Held:
    """A held list: its text (for a new Verifier after a key refresh), its ETag, when it was fetched and its ttl."""

    jwt: str
    etag: str | None
    fetched_at: int
    ttl: int


@dataclass(frozen=True)
class _Attempt:
    """The last fetch of a URI: when, and why it failed (None: it did not)."""

    at: int
    reason: str | None


def origin_of(url: str) -> str | None:
    """``scheme://authority`` of an http(s) URL in lower case, as core's ``StatusUri.origin`` reads it; else None."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in ("http", "https"):
        return None
    end = min((at for at in (rest.find("/"), rest.find("?"), rest.find("#")) if at >= 0), default=len(rest))
    authority = rest[:end]
    return f"{scheme}://{authority}".lower() if authority else None


def _clamp(ttl: int) -> int:
    return min(max(ttl, MIN_STATUS_TTL_SECONDS), MAX_STATUS_TTL_SECONDS)


def _status_uri(token: str) -> str | None:
    """The status list URI a token names, read without any check (to find what to fetch, never to decide)."""
    try:
        claims = decode_token_unverified(token)["claims"]
    except MandateError:
        return None
    status = claims.get("status")
    status_list = cast(Mapping[str, object], status).get("status_list") if isinstance(status, dict) else None
    uri = cast(Mapping[str, object], status_list).get("uri") if isinstance(status_list, dict) else None
    return uri if isinstance(uri, str) else None


def _shown(url: str) -> str:
    """A URL as an error shows it: without user name, query or fragment."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        return "(an invalid URL)"
    return f"{parsed.scheme}://{parsed.host}{':' + str(parsed.port) if parsed.port else ''}{parsed.path}"


def _keys_error(url: str, got: _Got) -> MandateError | None:
    """Why a fetch of the key set brought no usable answer, or None."""
    if got.failure is not None:
        detail = f"GET {_shown(url)}: {got.failure}"
        return MandateError(
            f"Network error: {detail}", code="network_error", problem={"code": "network_error", "detail": detail}
        )
    if not 200 <= got.status < 300:
        title = f"The key set answered HTTP {got.status}"
        return MandateError(title, code="jwks_unavailable", status=got.status, problem={"code": "jwks_unavailable"})
    return None


def _parse_keys(got: _Got) -> Any:
    try:
        return json.loads(got.text)
    except ValueError:
        raise MandateError(
            "Invalid response: the key set is not JSON", code="invalid_response", status=got.status
        ) from None


class _Remote:
    """Every decision of a remote verifier, without I/O: its computations yield the fetches they need."""

    def __init__(
        self,
        jwks: Any,
        *,
        jwks_url: str,
        max_staleness_seconds: int,
        allowed_status_origins: Sequence[str] | None,
        key_refresh_cooldown_seconds: int | None,
        leeway_seconds: int | None,
        issuer: str | None,
        revoked: Sequence[str] | None,
        cache_size: int | None,
        clock: Callable[[], int] | None,
    ) -> None:
        if cast(object, max_staleness_seconds) is None:
            # Required: without a bound a list held forever would keep a revoked token valid.
            raise MandateError("max_staleness_seconds is required", code="invalid_options")
        if isinstance(allowed_status_origins, str) or not all(
            isinstance(cast(object, origin), str) for origin in allowed_status_origins or ()
        ):
            raise MandateError("allowed_status_origins is a list of origins", code="invalid_options")
        own = origin_of(jwks_url)
        if allowed_status_origins is None:
            allowed = [own] if own is not None else []
        else:
            allowed = [origin.rstrip("/").lower() for origin in allowed_status_origins]
        cooldown = (
            KEY_REFRESH_COOLDOWN_SECONDS if key_refresh_cooldown_seconds is None else key_refresh_cooldown_seconds
        )
        if cooldown < 0:
            raise MandateError("key_refresh_cooldown_seconds must be 0 or more", code="invalid_options")
        self.jwks_url = jwks_url
        self.allowed = tuple(dict.fromkeys(allowed))
        self.clock: Callable[[], int] = clock if clock is not None else (lambda: int(time.time()))
        self.key_cooldown = cooldown
        # The Verifier refuses what the fetcher would not fetch, lists included.
        self.verifier = Verifier(
            jwks,
            leeway_seconds=leeway_seconds,
            issuer=issuer,
            revoked=revoked,
            cache_size=cache_size,
            check_status=True,
            max_staleness_seconds=max_staleness_seconds,
            status_origins=list(self.allowed),
        )
        self.keys_fetched_at = self.clock()
        self.lists: dict[str, _Held] = {}
        self.attempts: dict[str, _Attempt] = {}

    def allowed_origin(self, url: str) -> bool:
        return origin_of(url) in self.allowed

    def now(self, now: int | None) -> int:
        return self.clock() if now is None else now

    def verify(self, token: str, now: int) -> _Steps[VerifiedToken]:
        def run() -> VerifiedToken:
            return self.verifier.verify(token, now=now)

        return self._judge(token, now, run, run)

    def verify_request(
        self, token: str, now: int, *, method: str, url: str, proof: str | None
    ) -> _Steps[VerifiedToken]:
        def probe() -> VerifiedToken:
            return self.verifier.verify(token, now=now)

        def run() -> VerifiedToken:
            return self.verifier.verify_request(token, method=method, url=url, proof=proof, now=now)

        return self._judge(token, now, probe, run)

    def _judge(
        self, token: str, now: int, probe: Callable[[], VerifiedToken], run: Callable[[], VerifiedToken]
    ) -> _Steps[VerifiedToken]:
        """``run``'s verdict, with the token's list fetched first when it is due, missing, stale or expired.

        ``run`` (for a request: its proof, which is good once) is judged once
        unless it failed before its proof was remembered (an unknown kid, the
        token's status); ``probe`` decides whether a held list due for
        refresh is fetched before it: only for a token passing every check
        but its binding.
        """
        if any(now >= held.fetched_at + _clamp(held.ttl) for held in self.lists.values()):
            # A list is due: the token's, maybe (it is read only then, to keep a verification cheap).
            uri = _status_uri(token)
            held = self.lists.get(uri) if uri is not None else None
            if uri is not None and held is not None and now >= held.fetched_at + _clamp(held.ttl):
                try:
                    probe()
                    passed = True
                except MandateError as error:
                    passed = error.code == "dpop_required"
                if passed:
                    yield from self._refresh(uri, now)
        try:
            return run()
        except MandateError as error:
            if error.code != "unknown_kid":
                failure = error
            elif (yield from self._refresh_keys(now)):
                try:
                    return run()
                except MandateError as again:
                    failure = again
            else:
                raise
        if failure.stage != "status" or failure.code not in _STATUS_CODES_TO_REFRESH:
            raise failure
        # Core judges a token's status only once its signature and claims
        # passed: the uri read from it is the one verified.
        uri = _status_uri(token)
        if uri is None:
            raise failure
        if not self.allowed_origin(uri):
            raise MandateError(
                f"the token's status list {uri} is not on an allowed origin ({', '.join(self.allowed)}); "
                "it is not fetched",
                code="status_origin_not_allowed",
                stage="status",
            )
        yield from self._refresh(uri, now)
        try:
            return run()
        except MandateError as error:
            last = self.attempts.get(uri)
            if error.stage == "status" and last is not None and last.reason is not None:
                raise MandateError(f"{error.message} ({last.reason})", code=error.code, stage=error.stage) from error
            raise

    def _refresh(self, uri: str, now: int) -> _Steps[None]:
        """Fetches one list, at most once per MIN_STATUS_TTL_SECONDS."""
        last = self.attempts.get(uri)
        if last is not None and now < last.at + MIN_STATUS_TTL_SECONDS:
            return
        reason = yield from self._fetch_list(uri, now)
        self.attempts[uri] = _Attempt(now, reason)

    def _get(self, url: str, headers: Mapping[str, str]) -> _Steps[tuple[_Got, str | None]]:
        """A GET following redirects only to allowed origins: the answer, or why there is none to use."""
        redirects = 0
        while True:
            got = yield _Get(url, headers)
            if got.failure is not None:
                return got, f"the status list could not be fetched: {got.failure}"
            location = (got.headers or {}).get("location")
            if got.status not in (301, 302, 303, 307, 308) or location is None:
                return got, None
            url = urljoin(url, location)
            if not self.allowed_origin(url):
                return got, f"the status list was redirected to {_shown(url)}, which is not an allowed origin"
            redirects += 1
            if redirects > MAX_REDIRECTS:
                return got, f"the status list was redirected more than {MAX_REDIRECTS} times"

    def _fetch_list(self, uri: str, now: int) -> _Steps[str | None]:
        """Fetches and holds one list; answers why it failed, or None."""
        held = self.lists.get(uri)
        headers = {"accept": STATUS_LIST_MEDIA_TYPE}
        if held is not None and held.etag:
            headers["if-none-match"] = held.etag
        got, failed = yield from self._get(uri, headers)
        if failed is not None:
            return failed
        if got.status == 304 and held is not None:
            held.fetched_at = now
            return None
        if not 200 <= got.status < 300:
            return f"the status list answered HTTP {got.status}"
        jwt = got.text.strip()
        try:
            result = yield from self._set_list(jwt, now)
        except MandateError as error:
            return f"the status list was refused: {error.code}: {error.message}"
        if result["uri"] != uri:
            # Held under its own subject, which is not the URI asked for.
            return f"the list fetched from {uri} is the list of {result['uri']}"
        if result["held"]:
            etag = (got.headers or {}).get("etag")
            self.lists[uri] = _Held(jwt, etag, now, result["ttl"])
        elif held is not None:
            # An older list than the one held: keep that one, and its ttl running.
            held.fetched_at = now
        return None

    def _set_list(self, jwt: str, now: int) -> _Steps[HeldStatusList]:
        """Gives the Verifier a list, after a key refresh when it is signed by a kid the keys lack."""
        try:
            return self.verifier.set_status_list(jwt, now=now)
        except MandateError as error:
            if error.code != "unknown_kid" or not (yield from self._refresh_keys(now)):
                raise
        return self.verifier.set_status_list(jwt, now=now)

    def _refresh_keys(self, now: int) -> _Steps[bool]:
        """Fetches the key set again, at most once per cooldown; answers whether a new one is in force."""
        if now < self.keys_fetched_at + self.key_cooldown:
            return False
        self.keys_fetched_at = now
        got = yield _Get(self.jwks_url, {"accept": "application/json"})
        try:
            if _keys_error(self.jwks_url, got) is not None:
                return False
            # The same Verifier keeps its memory of accepted proofs: a key
            # refresh (which a forged kid can cause) must not make a proof good again.
            self.verifier.set_keys(_parse_keys(got))
        except MandateError:
            return False
        # Its lists were dropped with the old keys: each is verified again with the new ones.
        for uri, held in list(self.lists.items()):
            try:
                self.verifier.set_status_list(held.jwt, now=now)
            except MandateError:
                del self.lists[uri]
        return True


def jwks_url_of(base_url: str | None, jwks_url: str | None) -> str:
    """The key set's URL: ``jwks_url``, or ``<base_url>/.well-known/jwks.json``."""
    if jwks_url is not None:
        return jwks_url
    if base_url is None:
        raise MandateError("a remote verifier needs base_url or jwks_url", code="invalid_options")
    return f"{base_url.rstrip('/')}/.well-known/jwks.json"


def _first_keys(url: str, got: _Got) -> Any:
    error = _keys_error(url, got)
    if error is not None:
        raise error
    return _parse_keys(got)


def _answer(response: httpx.Response) -> _Got:
    headers = {name.lower(): value for name, value in response.headers.items()}
    return _Got(status=response.status_code, headers=headers, text=response.text)


class RemoteVerifier:
    """A verifier of one Mandate server's tokens that keeps itself current, over an ``httpx.Client``.

    Make one with :meth:`create` (or ``Mandate.remote_verifier``), which
    fetches the key set first. ``verify`` and ``verify_request`` are those
    of the native :class:`~mandate.Verifier`, with the token's status list
    fetched or refreshed first when needed; it fits
    :class:`mandate.mcp.TokenChecker`.
    """

    def __init__(self, remote: _Remote, http: httpx.Client, *, own: bool, timeout: float | None) -> None:
        """Use :meth:`create`."""
        self._remote = remote
        self._http = http
        self._own = own
        self._timeout = timeout
        self._lock = threading.Lock()

    @classmethod
    def create(
        cls,
        *,
        max_staleness_seconds: int,
        base_url: str | None = None,
        jwks_url: str | None = None,
        allowed_status_origins: Sequence[str] | None = None,
        key_refresh_cooldown_seconds: int | None = None,
        leeway_seconds: int | None = None,
        issuer: str | None = None,
        revoked: Sequence[str] | None = None,
        cache_size: int | None = None,
        clock: Callable[[], int] | None = None,
        http: httpx.Client | None = None,
        timeout: float | None = DEFAULT_FETCH_TIMEOUT,
    ) -> RemoteVerifier:
        """Fetches the server's key set and returns a verifier for it.

        ``max_staleness_seconds`` (required): a token whose status list was
        signed longer ago is refused (``status_stale``) — how long a
        revocation may take to reach this verifier. ``allowed_status_origins``:
        the origins (``https://host[:port]``) lists may be fetched from;
        default the key set's origin only. ``clock``: unix seconds. Raises
        :class:`~mandate.MandateError` when the key set cannot be fetched or
        used (``network_error``, ``jwks_unavailable``, ``invalid_response``,
        core's code for an unusable key set or option).
        """
        url = jwks_url_of(base_url, jwks_url)
        client = http if http is not None else httpx.Client()
        try:
            jwks = _first_keys(url, _fetch(client, _Get(url, {"accept": "application/json"}), timeout))
            remote = _Remote(
                jwks,
                jwks_url=url,
                max_staleness_seconds=max_staleness_seconds,
                allowed_status_origins=allowed_status_origins,
                key_refresh_cooldown_seconds=key_refresh_cooldown_seconds,
                leeway_seconds=leeway_seconds,
                issuer=issuer,
                revoked=revoked,
                cache_size=cache_size,
                clock=clock,
            )
        except BaseException:
            if http is None:
                client.close()
            raise
        return cls(remote, client, own=http is None, timeout=timeout)

    @property
    def allowed_status_origins(self) -> list[str]:
        """The origins status lists are fetched from."""
        return list(self._remote.allowed)

    def verify(self, token: str, *, now: int | None = None) -> VerifiedToken:
        """Verifies ``token`` at ``now`` (unix seconds; default the clock) with its status checked.

        Raises ``MandateError`` when refused.
        """
        at = self._remote.now(now)
        return self._drive(lambda: self._remote.verify(token, at))

    def verify_request(
        self, token: str, *, method: str, url: str, proof: str | None = None, now: int | None = None
    ) -> VerifiedToken:
        """``verify``, then the binding rule: a bound token needs ``proof``, its holder's DPoP proof for this
        request."""
        at = self._remote.now(now)
        return self._drive(lambda: self._remote.verify_request(token, at, method=method, url=url, proof=proof))

    def close(self) -> None:
        """Closes the HTTP client this verifier made (one it was given stays open)."""
        if self._own:
            self._http.close()

    def __enter__(self) -> RemoteVerifier:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def _drive(self, start: Callable[[], _Steps[VerifiedToken]]) -> VerifiedToken:
        with self._lock:
            steps = start()
            try:
                get = next(steps)
                while True:
                    get = steps.send(_fetch(self._http, get, self._timeout))
            except StopIteration as done:
                result: VerifiedToken = done.value
                return result


def _fetch(http: httpx.Client, get: _Get, timeout: float | None) -> _Got:
    try:
        return _answer(http.get(get.url, headers=dict(get.headers), timeout=timeout, follow_redirects=False))
    except httpx.HTTPError as cause:
        return _Got(failure=repr(cause))


async def _fetch_async(http: httpx.AsyncClient, get: _Get, timeout: float | None) -> _Got:
    try:
        return _answer(await http.get(get.url, headers=dict(get.headers), timeout=timeout, follow_redirects=False))
    except httpx.HTTPError as cause:
        return _Got(failure=repr(cause))


class AsyncRemoteVerifier:
    """:class:`RemoteVerifier` over an ``httpx.AsyncClient``: ``verify`` and ``verify_request`` are awaited.

    Make one with ``await AsyncRemoteVerifier.create(...)`` (or
    ``await AsyncMandate.remote_verifier(...)``). ``MandateTokenVerifier``
    awaits its ``verify``.
    """

    def __init__(self, remote: _Remote, http: httpx.AsyncClient, *, own: bool, timeout: float | None) -> None:
        """Use :meth:`create`."""
        self._remote = remote
        self._http = http
        self._own = own
        self._timeout = timeout
        self._lock = asyncio.Lock()

    @classmethod
    async def create(
        cls,
        *,
        max_staleness_seconds: int,
        base_url: str | None = None,
        jwks_url: str | None = None,
        allowed_status_origins: Sequence[str] | None = None,
        key_refresh_cooldown_seconds: int | None = None,
        leeway_seconds: int | None = None,
        issuer: str | None = None,
        revoked: Sequence[str] | None = None,
        cache_size: int | None = None,
        clock: Callable[[], int] | None = None,
        http: httpx.AsyncClient | None = None,
        timeout: float | None = DEFAULT_FETCH_TIMEOUT,
    ) -> AsyncRemoteVerifier:
        """As :meth:`RemoteVerifier.create`, awaited."""
        url = jwks_url_of(base_url, jwks_url)
        client = http if http is not None else httpx.AsyncClient()
        try:
            got = await _fetch_async(client, _Get(url, {"accept": "application/json"}), timeout)
            remote = _Remote(
                _first_keys(url, got),
                jwks_url=url,
                max_staleness_seconds=max_staleness_seconds,
                allowed_status_origins=allowed_status_origins,
                key_refresh_cooldown_seconds=key_refresh_cooldown_seconds,
                leeway_seconds=leeway_seconds,
                issuer=issuer,
                revoked=revoked,
                cache_size=cache_size,
                clock=clock,
            )
        except BaseException:
            if http is None:
                await client.aclose()
            raise
        return cls(remote, client, own=http is None, timeout=timeout)

    @property
    def allowed_status_origins(self) -> list[str]:
        """The origins status lists are fetched from."""
        return list(self._remote.allowed)

    async def verify(self, token: str, *, now: int | None = None) -> VerifiedToken:
        """As :meth:`RemoteVerifier.verify`, awaited."""
        at = self._remote.now(now)
        return await self._drive(lambda: self._remote.verify(token, at))

    async def verify_request(
        self, token: str, *, method: str, url: str, proof: str | None = None, now: int | None = None
    ) -> VerifiedToken:
        """As :meth:`RemoteVerifier.verify_request`, awaited."""
        at = self._remote.now(now)
        return await self._drive(lambda: self._remote.verify_request(token, at, method=method, url=url, proof=proof))

    async def close(self) -> None:
        """Closes the HTTP client this verifier made (one it was given stays open)."""
        if self._own:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncRemoteVerifier:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.close()

    async def _drive(self, start: Callable[[], _Steps[VerifiedToken]]) -> VerifiedToken:
        async with self._lock:
            steps = start()
            try:
                get = next(steps)
                while True:
                    get = steps.send(await _fetch_async(self._http, get, self._timeout))
            except StopIteration as done:
                result: VerifiedToken = done.value
                return result
