"""Locust load test of waitq.

Each simulated user is a visitor as the waiting-room page is: it gets a
visitor identity from producer-api (the Locust --host; a cookie, a new one
for each round, so each round is a new person), asks for the event's
challenge and, when the event asks for one, solves it (scripts/pow.py, so
that a load test pays what a browser pays), then joins the line over HTTP,
follows the statusUrl over WebSocket (ws-gateway), reads
status frames until it is admitted, thinks, and gives the slot back with
its entry token. Custom events record time-to-first-status and
time-to-admission; "release" is the protected service's call.

Runs with Debian's python3-locust (2.12) and python3-websocket:

  WAITQ_EVENT=sale1 WAITQ_GATEWAY_URL=http://127.0.0.1:8081 \
    python3 -m locust -f scripts/locustfile.py --host http://127.0.0.1:8080 QueueUser

Settings (environment): WAITQ_EVENT (default "loadtest"), WAITQ_GATEWAY_URL
(http://127.0.0.1:8081), WAITQ_ADMISSION_TIMEOUT seconds (120),
WAITQ_THINK_SECONDS (2). TrustedHeaderUser stands behind an authenticating
proxy instead: it names itself with X-User-Id on the join and on the
WebSocket (no ticket, no identity cookie, no challenge); producer-api and the
gateway must both run with WAITQ_TRUST_USER_HEADER=true and
WAITQ_TRUSTED_PROXIES naming Locust's address (127.0.0.1,::1 on one machine:
X-User-Id is believed from those peers alone). The visitor cookie
is sent back over plain HTTP only when producer-api runs with
WAITQ_COOKIE_INSECURE=true (the devstack does).
"""

import json
import os
import time
import uuid

import websocket
from locust import HttpUser, between, task

import pow  # scripts/pow.py: Locust puts the locustfile's folder on sys.path

EVENT = os.environ.get("WAITQ_EVENT", "loadtest")
GATEWAY = os.environ.get("WAITQ_GATEWAY_URL", "http://127.0.0.1:8081").rstrip("/")
ADMISSION_TIMEOUT = float(os.environ.get("WAITQ_ADMISSION_TIMEOUT", "120"))
THINK_SECONDS = float(os.environ.get("WAITQ_THINK_SECONDS", "2"))


def ws_base(http_url):
    """The ws:// (or wss://) form of an http(s):// base URL."""
    if http_url.startswith("https://"):
        return "wss://" + http_url[len("https://"):]
    return "ws://" + http_url[len("http://"):]


class QueueUser(HttpUser):
    """A person in line: join, watch over WebSocket with the ticket, get in, release."""

    wait_time = between(1, 3)
    trust_header = False

    def record(self, name, started, exc=None, kind="WS"):
        """Report a custom event (WebSocket, or the solver's) to Locust's statistics."""
        self.environment.events.request.fire(
            request_type=kind, name=name, response_time=(time.time() - started) * 1000,
            response_length=0, exception=exc, context={})

    def enter(self):
        """Get through the door as the page does; returns the join's headers
        and body (None when a step failed, recorded as a failure)."""
        self.client.cookies.clear()  # a new person each round
        with self.client.post("/v1/visitor", name="visitor", catch_response=True) as r:
            if r.status_code not in (200, 201):
                r.failure(f"visitor answered {r.status_code}: {r.text[:200]}")
                return None
        with self.client.post(f"/v1/events/{EVENT}/challenge", name="challenge", catch_response=True) as r:
            if r.status_code != 200:
                r.failure(f"challenge answered {r.status_code}: {r.text[:200]}")
                return None
            ch = r.json()
        if not ch.get("required"):
            return {}, None
        started = time.time()
        solution = pow.solve(ch["challenge"])
        self.record("solve", started, kind="POW")
        return {}, {"challenge": ch["challenge"], "solution": solution}

    @task
    def queue_once(self):
        user = "locust-" + uuid.uuid4().hex[:16]
        if self.trust_header:
            headers, body = {"X-User-Id": user}, None
        else:
            entered = self.enter()
            if entered is None:
                return
            headers, body = entered
        headers["Idempotency-Key"] = uuid.uuid4().hex  # the round's visit
        with self.client.post(f"/v1/events/{EVENT}/queue", headers=headers, json=body,
                              name="join", catch_response=True) as r:
            if r.status_code != 202:
                r.failure(f"join answered {r.status_code}: {r.text[:200]}")
                return
            joined = r.json()
            user = joined["userId"]
        started = time.time()
        if self.trust_header:
            url, headers = f"{ws_base(GATEWAY)}/queue-status/{EVENT}", [f"X-User-Id: {user}"]
        else:
            url, headers = ws_base(GATEWAY) + joined["statusUrl"], []
        try:
            ws = websocket.create_connection(url, header=headers, timeout=10)
        except Exception as e:  # noqa: BLE001 - any failure to connect is a failed event
            self.record("connect", started, e)
            return
        try:
            admitted = self.watch(ws, started)
            if admitted is None:
                return
            time.sleep(THINK_SECONDS)
            self.client.post(f"{GATEWAY}/v1/events/{EVENT}/release",
                             json={"token": admitted["entryToken"]}, name="release")
        finally:
            ws.close()

    def watch(self, ws, started):
        """Read frames until admitted; returns the admitted frame, or None."""
        first = True
        deadline = started + ADMISSION_TIMEOUT
        while time.time() < deadline:
            ws.settimeout(max(0.1, deadline - time.time()))
            try:
                frame = json.loads(ws.recv())
            except websocket.WebSocketTimeoutException:
                break
            except Exception as e:  # noqa: BLE001 - a closed or broken socket fails the wait
                self.record("time-to-admission", started, e)
                return None
            if frame.get("type") == "status" and first:
                first = False
                self.record("time-to-first-status", started)
            elif frame.get("type") == "admitted":
                self.record("time-to-admission", started)
                return frame
        self.record("time-to-admission", started, TimeoutError(f"not admitted within {ADMISSION_TIMEOUT}s"))
        return None


class TrustedHeaderUser(QueueUser):
    """A client behind an authenticating proxy: X-User-Id on the WebSocket too."""

    trust_header = True
