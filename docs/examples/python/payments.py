"""The merchant payment service from Python, standard library only: RFC 8785 canonical JSON, request signing,
signed operations retried safely under one request id, and callback verification (Standard Webhooks).

Python 3.8 or later. The rules are those of docs/signed-operations.md and docs/callbacks.md; the repository's
tests (test/http/pythonExamples.test.ts) run this module against the real service.
"""

import base64
import hashlib
import hmac
import json
import math
import time
import urllib.error
import urllib.request
import uuid

SIGNED_PREFIX = "/public/v1"


# --- RFC 8785 (JCS) -------------------------------------------------------------------------------------------


def _es_number(value):
    """A number as ECMAScript writes it (RFC 8785 section 3.2.2.3): shortest round-trip digits, ES exponent form."""
    if isinstance(value, bool):
        raise TypeError("booleans are not numbers")
    if isinstance(value, int) and abs(value) < 2**53:
        return str(value)
    value = float(value)
    if math.isnan(value) or math.isinf(value):
        raise ValueError("NaN and Infinity have no JSON form")
    if value == 0:
        return "0"
    if value < 0:
        return "-" + _es_number(-value)
    mantissa, _, exponent = repr(value).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    point = len(whole) + (int(exponent) if exponent else 0)
    while digits.startswith("0"):
        digits, point = digits[1:], point - 1
    digits = digits.rstrip("0")
    k, n = len(digits), point
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + digits
    sign = "+" if n - 1 >= 0 else "-"
    head = digits if k == 1 else digits[0] + "." + digits[1:]
    return head + "e" + sign + str(abs(n - 1))


def _utf16_key(text):
    """Members are sorted by their UTF-16 code units, not by code points."""
    return text.encode("utf-16-be")


def canonical_json(value):
    """The RFC 8785 canonical form of a JSON value (dicts, lists, str, int, float, bool, None)."""
    if value is None or value is True or value is False:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return _es_number(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(canonical_json(item) for item in value) + "]"
    if isinstance(value, dict):
        members = sorted(value.items(), key=lambda member: _utf16_key(member[0]))
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + canonical_json(v) for k, v in members) + "}"
    raise TypeError("not a JSON value: %r" % (value,))


# --- Request signing ------------------------------------------------------------------------------------------


def sign(secret_key, path, timestamp, request_id, body):
    """The x-service-request-signature value: v1= and hex HMAC-SHA256 of the message, keyed by the secret's UTF-8 bytes."""
    message = "\n".join(["POST", path, timestamp, request_id, canonical_json(body)])
    # The secret key looks like hex but is used as text: never hex-decode it.
    digest = hmac.new(secret_key.encode("utf-8"), message.encode("utf-8"), hashlib.sha256).hexdigest()
    return "v1=" + digest


class ApiError(Exception):
    """An answer of the service that is a problem (RFC 9457): status, its stable code and detail."""

    def __init__(self, status, problem):
        self.status = status
        self.problem = problem
        self.code = problem.get("code")
        super().__init__("%s %s: %s" % (status, self.code, problem.get("detail")))


# Answers worth the same request again: the request may not have been handled (a lost connection or a 5xx), or
# was refused before it counted (429). A retry with the same request id never does the operation twice.
RETRY_STATUSES = {429, 500, 502, 503, 504}


class Client:
    """A merchant's client: API key, secret key (for signed operations) and the service's base URL."""

    def __init__(self, base_url, api_key, secret_key=None, timeout_s=30.0, max_attempts=4, backoff_s=0.5):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.secret_key = secret_key
        self.timeout_s = timeout_s
        self.max_attempts = max(1, min(max_attempts, 10))
        self.backoff_s = backoff_s

    def get(self, path):
        return self._send("GET", path, None, {})

    def post(self, path, body):
        return self._send("POST", path, json.dumps(body).encode("utf-8"), {"content-type": "application/json"})

    def signed_post(self, path, body, request_id=None):
        """A signed operation, retried under one request id: at most max_attempts, each freshly timestamped and signed.

        Keep the request id (it is in the answer as request.id, or in the error): sending it again later answers
        the original result instead of doing the operation twice.
        """
        if self.secret_key is None:
            raise ValueError("signed operations need the secret key")
        request_id = request_id or str(uuid.uuid4())
        data = json.dumps(body).encode("utf-8")
        last = None
        for attempt in range(self.max_attempts):
            timestamp = str(int(time.time()))
            headers = {
                "content-type": "application/json",
                "x-service-timestamp": timestamp,
                "x-service-request-id": request_id,
                "x-service-request-signature": sign(self.secret_key, path, timestamp, request_id, body),
            }
            try:
                return self._send("POST", path, data, headers, retry=False)
            except ApiError as error:
                if error.status not in RETRY_STATUSES:
                    raise
                last = error
            except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
                last = error
            if attempt + 1 < self.max_attempts:
                time.sleep(self.backoff_s * (2**attempt))
        raise RetriesExhausted(request_id, last)

    def _send(self, method, path, data, headers, retry=True):
        request = urllib.request.Request(self.base_url + path, data=data, method=method)
        request.add_header("x-api-key", self.api_key)
        for name, value in headers.items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                return json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as error:
            text = error.read().decode("utf-8", "replace")
            try:
                problem = json.loads(text)
            except ValueError:
                problem = {"code": None, "detail": text}
            raise ApiError(error.code, problem)


class RetriesExhausted(Exception):
    """No attempt got an answer: retry later with the same request id (it is here), never with a new one."""

    def __init__(self, request_id, last):
        self.request_id = request_id
        self.last = last
        super().__init__("no answer after retries (request id %s): %s" % (request_id, last))


# --- Callback verification (Standard Webhooks) ----------------------------------------------------------------

CALLBACK_TOLERANCE_S = 300


class CallbackVerificationError(Exception):
    pass


def verify_callback(body, headers, secret, now=None):
    """Checks a callback's webhook-* headers against its raw body (bytes) and the merchant's whsec_ secret; answers the event.

    `headers` is a mapping with lower-case names. During a secret rotation the signature header holds two
    signatures separated by a space: either one is enough.
    """
    try:
        event_id = headers["webhook-id"]
        timestamp = headers["webhook-timestamp"]
        signatures = headers["webhook-signature"]
    except KeyError as missing:
        raise CallbackVerificationError("missing header %s" % missing)
    if not timestamp.isdigit():
        raise CallbackVerificationError("bad webhook-timestamp")
    now = time.time() if now is None else now
    if abs(now - int(timestamp)) > CALLBACK_TOLERANCE_S:
        raise CallbackVerificationError("webhook-timestamp too far from now (a replay?)")
    key = base64.b64decode(secret[len("whsec_"):] if secret.startswith("whsec_") else secret)
    signed = event_id.encode("utf-8") + b"." + timestamp.encode("utf-8") + b"." + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode("ascii")
    for candidate in signatures.split(" "):
        version, _, signature = candidate.partition(",")
        if version == "v1" and hmac.compare_digest(signature, expected):
            return json.loads(body.decode("utf-8"))
    raise CallbackVerificationError("no valid signature")
