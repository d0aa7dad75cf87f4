"""The HTTP half of the client: one request, its retries, and its failures.

Every answer that is not a success, and every request that got no answer,
raises a :class:`~mandate.errors.MandateError` — never a bare httpx error.
A call safe to send again (a read, or a write carrying an
``Idempotency-Key``, which the client makes itself for every write the
server honours one for) is sent again after a failure that trying again may
cure (no answer, a timeout, 429 other than ``quota_exceeded``, 502, 503,
504), after the pause the server asks for (``Retry-After``) or a growing
pause with jitter. The sync :class:`Transport` and the async
:class:`AsyncTransport` share every decision; only the waiting differs.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import random
import re
import secrets
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Literal, Protocol, TypedDict, cast
from urllib.parse import quote, urlencode

import httpx

from mandate.errors import MandateError

#: The default timeout of one attempt, seconds.
DEFAULT_TIMEOUT = 30.0
#: The default number of retries after the first attempt.
DEFAULT_MAX_RETRIES = 2
#: The longest pause before a retry, seconds: a longer ``Retry-After`` is not waited for.
DEFAULT_MAX_RETRY_DELAY = 30.0
#: The first pause before a retry without ``Retry-After``, seconds; it doubles with each retry.
FIRST_BACKOFF = 0.5
#: The longest pause before a retry without ``Retry-After``, seconds.
MAX_BACKOFF = 8.0
#: A stream silent this long is taken as dead (the server sends a comment every 15 s).
STREAM_IDLE = 45.0
#: The first pause before connecting the event stream again, seconds.
RECONNECT = 1.0
#: The longest pause between connections of the event stream, seconds.
MAX_RECONNECT = 30.0

#: How a call may be sent again: ``read`` (a GET), ``write`` (a write the
#: server honours an ``Idempotency-Key`` for: one is made when missing),
#: ``keyed`` (a write that carries its own key, ``request_id``: sent again as
#: it is), or ``once`` (never sent again).
Retry = Literal["read", "write", "keyed", "once"]


class ProofKey(Protocol):
    """An agent's key that signs DPoP proofs (RFC 9449) for a bound token.

    ``mandate.AgentKey`` of the native module fits; any object with the
    key's thumbprint ``jkt`` and a ``proof`` method does.
    """

    @property
    def jkt(self) -> str: ...

    def proof(self, *, method: str, url: str, access_token: str) -> str: ...


class HolderKey(Protocol):
    """A key that proves possession at the token endpoint (RFC 9449 §5): its proofs carry no ``ath``.

    ``mandate.AgentKey`` fits.
    """

    def proof(self, *, method: str, url: str) -> str: ...


@dataclass(frozen=True)
class Holder:
    """A token request's credential: the key its DPoP proof is made by, which binds what is issued."""

    key: HolderKey


class RelayKey(Protocol):
    """An MCP gate's relay key, which signs ``Mandate-Relay`` proofs (docs/oauth.md, "The gate relays the
    client's proof").

    ``mandate.AgentKey`` fits: its ``relay_proof`` is core's ``sign_relay``.
    """

    @property
    def jkt(self) -> str: ...

    def relay_proof(self, *, method: str, url: str, access_token: str, forwarded_proof: str | None = None) -> str: ...


@dataclass(frozen=True)
class Relay:
    """An MCP gate acting at Mandate for a client whose token is bound to the client's own key.

    Each call carries the gate's proof by ``key`` (``Mandate-Relay``) and,
    when given, ``forwarded_proof``, the client's DPoP proof exactly as the
    gate received it (``Mandate-Client-DPoP``): ``authorize`` takes it and
    uses it up; a completion or an approval read takes the relay proof alone.
    """

    key: RelayKey
    forwarded_proof: str | None = None


@dataclass(frozen=True)
class Agent:
    """An agent's token as the credential of a call, with its key when bound, or the gate relaying it."""

    token: str
    key: ProofKey | None = None
    relay: Relay | None = None


#: The client's API key as the credential of a call.
API_KEY: Literal["api_key"] = "api_key"

Credential = Agent | Holder | Literal["api_key"] | None


@dataclass(frozen=True)
class Call:
    """One call: what to send, whose credential, and how it may be retried."""

    method: str
    path: str
    credential: Credential = API_KEY
    body: object = None
    retry: Retry = "read"
    accept: str = "application/json"
    idempotency_key: str | None = None
    #: Sent as ``X-Request-ID``: the key an AuthZEN evaluation is replayed by (AuthZEN §10.1.3).
    request_id: str | None = None
    traceparent: str | None = None
    timeout: float | None = None
    max_retries: int | None = None
    extra_timeout: float = 0.0
    #: Told of each failure that is retried (``complete`` watches for a lost answer).
    on_retry: Callable[[MandateError], None] | None = None
    #: Send ``body`` (a mapping of strings) as ``application/x-www-form-urlencoded``, as OAuth's
    #: token endpoint takes it (RFC 6749 §3.2), not as JSON.
    form: bool = False


@dataclass(frozen=True)
class Answer:
    """A successful answer: status, headers (names in lower case) and text."""

    status: int
    headers: Mapping[str, str]
    text: str


@dataclass(frozen=True)
class SseEvent:
    """One message of a Server-Sent Events stream."""

    id: str
    data: str


@dataclass
class SseParser:
    """An incremental parser of a ``text/event-stream`` (WHATWG HTML §9.2)."""

    last_id: str | None
    retry: float | None = None
    _data: list[str] = field(default_factory=lambda: [])
    _has_data: bool = False

    def line(self, line: str) -> SseEvent | None:
        if line == "":
            if not self._has_data:
                return None
            event = SseEvent(self.last_id or "", "\n".join(self._data))
            self._data = []
            self._has_data = False
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
            self._has_data = True
        elif name == "id" and "\0" not in value:
            self.last_id = value
        elif name == "retry" and value.isdigit():
            self.retry = int(value) / 1000
        return None

    def reset(self) -> None:
        self._data = []
        self._has_data = False


def segment(value: str) -> str:
    """``value`` as one path segment."""
    return quote(value, safe="")


def query(**params: object) -> str:
    """A query string of ``params``; members that are None are left out."""
    pairs: list[tuple[str, str]] = []
    for name, value in params.items():
        if value is None:
            continue
        if isinstance(value, bool):
            pairs.append((name, "true" if value else "false"))
        elif isinstance(value, datetime):
            pairs.append((name, value.astimezone(UTC).isoformat().replace("+00:00", "Z")))
        else:
            pairs.append((name, str(value)))
    return f"?{urlencode(pairs)}" if pairs else ""


def as_object(value: object) -> dict[str, Any] | None:
    """``value`` when it is a JSON object."""
    return cast(dict[str, Any], value) if isinstance(value, dict) else None


def retry_after_seconds(value: str | None) -> float | None:
    """A ``Retry-After`` in seconds from now: delay-seconds or an HTTP date."""
    if value is None:
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        at = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return max(0.0, (at - datetime.now(UTC)).total_seconds())


def problem_error(status: int, text: str, reason: str, headers: Mapping[str, str]) -> MandateError:
    """The MandateError of an answer that is not a success (its RFC 9457 body)."""
    try:
        data: object = json.loads(text)
    except ValueError:
        data = None
    problem = as_object(data) or {}
    code = problem.get("code")
    title = problem.get("title")
    # OAuth's endpoints answer {error, error_description, code} (RFC 6749 §5.2).
    detail = problem.get("detail", problem.get("error_description"))
    field_name = problem.get("field")
    code = code if isinstance(code, str) else "http_error"
    title = title if isinstance(title, str) else (reason or f"HTTP {status}")
    message = f"{title}: {detail}" if isinstance(detail, str) and detail else title
    return MandateError(
        message,
        code=code,
        status=status,
        field=field_name if isinstance(field_name, str) else None,
        request_id=headers.get("x-request-id"),
        retry_after=retry_after_seconds(headers.get("retry-after")),
        problem=problem,
        headers=headers,
    )


def client_error(code: str, message: str) -> MandateError:
    """A refusal by the client itself, before anything was sent."""
    return MandateError(message, code=code, problem={"code": code, "detail": message})


def body_of(body: object) -> bytes | None:
    """A request body as compact JSON; what JSON cannot hold (NaN, a set, a datetime) is refused here."""
    if body is None:
        return None
    try:
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
    except (TypeError, ValueError) as cause:
        raise client_error("invalid_arguments", f"the request body is not JSON: {cause}") from cause


def form_of(body: object) -> bytes:
    """A request body as a form (``name=value&…``, percent-encoded); only a mapping of strings is one."""
    if not isinstance(body, Mapping):
        raise client_error("invalid_arguments", "a form is a mapping of parameter names to strings")
    pairs: list[tuple[object, object]] = list(cast(Mapping[object, object], body).items())
    form: list[tuple[str, str]] = []
    for name, value in pairs:
        if not isinstance(name, str) or not isinstance(value, str):
            raise client_error("invalid_arguments", "a form is a mapping of parameter names to strings")
        form.append((name, value))
    return urlencode(form).encode()


def base_url_of(base_url: str) -> str:
    """The server's address without a trailing slash; refused unless an http(s) URL."""
    try:
        parsed = httpx.URL(base_url)
    except httpx.InvalidURL as cause:
        raise client_error("invalid_options", f"base_url is not a URL: {cause}") from cause
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise client_error("invalid_options", "base_url must be an http or https URL with a host")
    return base_url.rstrip("/")


def _shown_url(url: str) -> str:
    """A URL as an error may show it: no query, and no credential in the path."""
    parsed = httpx.URL(url)
    path = "/".join(
        "{jti}" if part.lower().startswith("vat_") else "{aar_id}" if part.lower().startswith("aar_") else part
        for part in parsed.path.split("/")
    )
    return f"{parsed.scheme}://{parsed.netloc.decode('ascii')}{path}"


def _no_answer(method: str, url: str, cause: Exception) -> MandateError:
    if isinstance(cause, httpx.TimeoutException):
        code, title = "timeout", "Timed out"
    else:
        code, title = "network_error", "Network error"
    detail = f"{method} {_shown_url(url)}: {cause!r}"
    error = MandateError(f"{title}: {detail}", code=code, problem={"code": code, "title": title, "detail": detail})
    error.__cause__ = cause
    return error


def transient(error: MandateError) -> bool:
    """A failure that trying again may cure: no answer, a rate limit, the server unavailable."""
    if error.status is None:
        return error.code in ("network_error", "timeout")
    return (error.status == 429 and error.code != "quota_exceeded") or error.status >= 500


def retryable(error: MandateError) -> bool:
    """A failure after which a call safe to send again is sent again."""
    if error.status is None:
        return error.code in ("network_error", "timeout")
    return (error.status == 429 and error.code != "quota_exceeded") or error.status in (502, 503, 504)


def maybe_done(error: MandateError) -> bool:
    """Whether a failed attempt may have been carried out all the same (no answer, a gateway's failure)."""
    return error.status is None or error.status in (502, 504)


def token_claims(token: str) -> dict[str, Any] | None:
    """A compact JWT's claims, read WITHOUT any check (to route, never to authorize)."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    try:
        data: object = json.loads(base64.urlsafe_b64decode(payload))
    except (binascii.Error, ValueError):
        return None
    return as_object(data)


def _bound_jkt(token: str) -> str | None:
    claims = token_claims(token)
    cnf = as_object(claims.get("cnf")) if claims is not None else None
    jkt = cnf.get("jkt") if cnf is not None else None
    return jkt if isinstance(jkt, str) else None


def relayed_headers(method: str, url: str, token: str, relay: Relay) -> dict[str, str]:
    """The headers of one relayed attempt: the client's token, the gate's fresh proof and the client's proof."""
    forwarded = relay.forwarded_proof
    proof = relay.key.relay_proof(method=method, url=url, access_token=token, forwarded_proof=forwarded)
    headers = {"authorization": f"DPoP {token}", "mandate-relay": proof}
    if forwarded is not None:
        headers["mandate-client-dpop"] = forwarded
    return headers


class _Base:
    """What both transports share: the configuration and every decision."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None,
        timeout: float,
        max_retries: int,
        max_retry_delay: float,
    ) -> None:
        for name, value in (("timeout", timeout), ("max_retries", max_retries), ("max_retry_delay", max_retry_delay)):
            if value < 0:
                raise client_error("invalid_options", f"{name} must be 0 or more")
        self.base_url = base_url_of(base_url)
        self.api_key = api_key
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_retry_delay = max_retry_delay

    def url(self, path: str) -> str:
        return f"{self.base_url}{path}"

    def credential_headers(self, method: str, path: str, credential: Credential) -> dict[str, str]:
        """The ``Authorization`` (and ``DPoP``) headers of one attempt: a proof is good once."""
        if credential == API_KEY:
            return {} if self.api_key is None else {"authorization": f"Bearer {self.api_key}"}
        if credential is None:
            return {}
        path_only = path.split("?", 1)[0]
        if isinstance(credential, Holder):
            return {"dpop": credential.key.proof(method=method, url=self.url(path_only))}
        jkt = _bound_jkt(credential.token)
        if jkt is None:
            return {"authorization": f"Bearer {credential.token}"}
        if (credential.key is None or credential.key.jkt != jkt) and credential.relay is not None:
            return relayed_headers(method, self.url(path_only), credential.token, credential.relay)
        if credential.key is None or credential.key.jkt != jkt:
            raise client_error(
                "dpop_key_missing",
                "the token is bound to a key: pass that key as `key` so each call carries its proof",
            )
        proof = credential.key.proof(method=method, url=self.url(path_only), access_token=credential.token)
        return {"authorization": f"DPoP {credential.token}", "dpop": proof}

    def prepare(self, call: Call) -> tuple[int, float | None, str | None, bytes | None]:
        """Retries, timeout, idempotency key and body of ``call``."""
        retries = 0 if call.retry == "once" else (self.max_retries if call.max_retries is None else call.max_retries)
        if retries < 0:
            raise client_error("invalid_options", "max_retries must be 0 or more")
        timeout = self.timeout if call.timeout is None else call.timeout
        limit = None if timeout == 0 else timeout + call.extra_timeout
        key = call.idempotency_key
        if key is None and call.retry == "write" and retries > 0:
            key = f"mandate-sdk-{secrets.token_hex(16)}"
        return retries, limit, key, form_of(call.body) if call.form else body_of(call.body)

    def headers(self, call: Call, key: str | None, has_body: bool) -> dict[str, str]:
        headers = {"accept": call.accept, **self.credential_headers(call.method, call.path, call.credential)}
        if key is not None:
            headers["idempotency-key"] = key
        if call.request_id is not None:
            headers["x-request-id"] = call.request_id
        if call.traceparent is not None:
            headers["traceparent"] = call.traceparent
        if has_body:
            headers["content-type"] = "application/x-www-form-urlencoded" if call.form else "application/json"
        return headers

    def delay(self, attempt: int, failure: MandateError) -> float | None:
        """The pause before retry ``attempt`` (1 = first), or None when the server asks for too long."""
        pause = min(MAX_BACKOFF, FIRST_BACKOFF * 2.0 ** (attempt - 1)) * (1 - random.random() * 0.25)
        if failure.retry_after is not None:
            if failure.retry_after > self.max_retry_delay:
                return None
            return failure.retry_after
        return min(pause, self.max_retry_delay)

    @staticmethod
    def answer_of(response: httpx.Response) -> Answer:
        headers = {name.lower(): value for name, value in response.headers.items()}
        if 200 <= response.status_code < 300:
            return Answer(response.status_code, headers, response.text)
        raise problem_error(response.status_code, response.text, response.reason_phrase, headers)

    @staticmethod
    def json_of(answer: Answer) -> Any:
        try:
            return json.loads(answer.text)
        except ValueError:
            raise MandateError(
                "Invalid response: the server did not answer with JSON",
                code="invalid_response",
                status=answer.status,
                request_id=answer.headers.get("x-request-id"),
                headers=answer.headers,
            ) from None

    def events_headers(self, last_event_id: str | None) -> dict[str, str]:
        headers = {"accept": "text/event-stream", **self.credential_headers("GET", "/v1/events", API_KEY)}
        if last_event_id:
            headers["last-event-id"] = last_event_id
        return headers

    @staticmethod
    def check_stream(response: httpx.Response, body: str) -> None:
        headers = {name.lower(): value for name, value in response.headers.items()}
        if response.status_code != 200:
            raise problem_error(response.status_code, body, response.reason_phrase, headers)
        kind = headers.get("content-type", "")
        if not re.match(r"^text/event-stream\s*(;|$)", kind, re.IGNORECASE):
            raise MandateError(
                f"Invalid response: the server answered {kind or 'no content type'}, not text/event-stream",
                code="invalid_response",
                status=response.status_code,
                headers=headers,
            )


class Transport(_Base):
    """The synchronous transport over an ``httpx.Client``."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        max_retry_delay: float = DEFAULT_MAX_RETRY_DELAY,
        http: httpx.Client | None = None,
    ) -> None:
        super().__init__(
            base_url, api_key=api_key, timeout=timeout, max_retries=max_retries, max_retry_delay=max_retry_delay
        )
        self._own = http is None
        self.http = http if http is not None else httpx.Client()

    def close(self) -> None:
        if self._own:
            self.http.close()

    def request(self, call: Call) -> Answer:
        """Sends ``call``, again after a failure that trying again may cure when it is safe to."""
        retries, limit, key, body = self.prepare(call)
        url = self.url(call.path)
        attempt = 1
        while True:
            headers = self.headers(call, key, body is not None)
            try:
                try:
                    response = self.http.request(call.method, url, headers=headers, content=body, timeout=limit)
                except httpx.HTTPError as cause:
                    raise _no_answer(call.method, url, cause) from cause
                return self.answer_of(response)
            except MandateError as failure:
                if attempt > retries or not retryable(failure):
                    raise
                pause = self.delay(attempt, failure)
                if pause is None:
                    raise
                if call.on_retry is not None:
                    call.on_retry(failure)
                time.sleep(pause)
                attempt += 1

    def call(self, call: Call) -> Any:
        """``call``'s JSON answer."""
        return self.json_of(self.request(call))

    def sse(self, parser: SseParser, opened: Callable[[], None]) -> Iterator[SseEvent]:
        """One connection of the event stream: its events until it ends (or falls silent)."""
        url = self.url("/v1/events")
        timeout = httpx.Timeout(STREAM_IDLE, connect=self.timeout or None)
        try:
            with self.http.stream("GET", url, headers=self.events_headers(parser.last_id), timeout=timeout) as response:
                body = "" if response.status_code == 200 else response.read().decode(errors="replace")
                self.check_stream(response, body)
                parser.reset()
                opened()
                for line in response.iter_lines():
                    event = parser.line(line)
                    if event is not None:
                        yield event
        except httpx.HTTPError as cause:
            raise _no_answer("GET", url, cause) from cause


class AsyncTransport(_Base):
    """The asynchronous transport over an ``httpx.AsyncClient``."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        max_retry_delay: float = DEFAULT_MAX_RETRY_DELAY,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(
            base_url, api_key=api_key, timeout=timeout, max_retries=max_retries, max_retry_delay=max_retry_delay
        )
        self._own = http is None
        self.http = http if http is not None else httpx.AsyncClient()

    async def close(self) -> None:
        if self._own:
            await self.http.aclose()

    async def request(self, call: Call) -> Answer:
        """Sends ``call``, again after a failure that trying again may cure when it is safe to."""
        retries, limit, key, body = self.prepare(call)
        url = self.url(call.path)
        attempt = 1
        while True:
            headers = self.headers(call, key, body is not None)
            try:
                try:
                    response = await self.http.request(call.method, url, headers=headers, content=body, timeout=limit)
                except httpx.HTTPError as cause:
                    raise _no_answer(call.method, url, cause) from cause
                return self.answer_of(response)
            except MandateError as failure:
                if attempt > retries or not retryable(failure):
                    raise
                pause = self.delay(attempt, failure)
                if pause is None:
                    raise
                if call.on_retry is not None:
                    call.on_retry(failure)
                await asyncio.sleep(pause)
                attempt += 1

    async def call(self, call: Call) -> Any:
        """``call``'s JSON answer."""
        return self.json_of(await self.request(call))

    async def sse(self, parser: SseParser, opened: Callable[[], None]) -> AsyncIterator[SseEvent]:
        """One connection of the event stream: its events until it ends (or falls silent)."""
        url = self.url("/v1/events")
        timeout = httpx.Timeout(STREAM_IDLE, connect=self.timeout or None)
        try:
            async with self.http.stream(
                "GET", url, headers=self.events_headers(parser.last_id), timeout=timeout
            ) as response:
                body = "" if response.status_code == 200 else (await response.aread()).decode(errors="replace")
                self.check_stream(response, body)
                parser.reset()
                opened()
                async for line in response.aiter_lines():
                    event = parser.line(line)
                    if event is not None:
                        yield event
        except httpx.HTTPError as cause:
            raise _no_answer("GET", url, cause) from cause


class RequestOptions(TypedDict, total=False):
    """Options every call takes."""

    #: This call's timeout per attempt, seconds, instead of the client's (0 for none).
    timeout: float
    #: This call's retries, instead of the client's ``max_retries``.
    max_retries: int


class WriteOptions(RequestOptions, total=False):
    """Options of a call the server honours an ``Idempotency-Key`` for."""

    #: Sent as ``Idempotency-Key``: a retry with the same key and body gets the first answer.
    idempotency_key: str


class EvaluationOptions(RequestOptions, total=False):
    """Options of an AuthZEN evaluation."""

    #: Sent as ``X-Request-ID`` (1–255 visible ASCII characters): a request
    #: with the same id and body is answered with the first decisions and
    #: records nothing new. Made when left out, so that the client's own
    #: retries are never a second act.
    request_id: str


def split(query: Mapping[str, object]) -> tuple[dict[str, object], RequestOptions]:
    """A list call's keywords: the query's parameters, and the call's options."""
    options: RequestOptions = {}
    params: dict[str, object] = {}
    for name, value in query.items():
        if name == "timeout":
            options["timeout"] = cast(float, value)
        elif name == "max_retries":
            options["max_retries"] = cast(int, value)
        else:
            params[name] = value
    return params, options
