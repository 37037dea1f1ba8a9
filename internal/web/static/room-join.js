// The waiting room's join (app.js holds the page's state and starts it):
// producer-api's calls, the join with its proof of work solved in a Web
// Worker, and the notice of an event not open yet.
"use strict";

// api calls producer-api with the visitor's cookie (and the shop's join
// token); it returns the response and its JSON body.
async function api(path, init = {}) {
  const headers = Object.assign({}, init.headers || {});
  if (joinToken) headers["X-Waitq-Join-Token"] = joinToken;
  const r = await fetch(`${config.producerUrl}${path}`, Object.assign({}, init, { headers, credentials: "include" }));
  let body = {};
  try { body = await r.json(); } catch { /* an empty or non-JSON answer */ }
  return { r, body };
}

// readEvent reads the public event ev (its phase, schedule, page, draw),
// or null.
async function readEvent(ev) {
  try {
    const r = await fetch(`${config.producerUrl}/v1/events/${encodeURIComponent(ev)}`);
    return r.ok ? await r.json() : null;
  } catch { return null; }
}

// join takes this browser's place in the event's line: an identity first
// (the cookie producer-api issues, unless the shop's join token names the
// account), then the event's challenge, solved, then the join. A join the
// event refuses for now (a drop not yet taking joins) waits and tries again
// by itself.
async function join() {
  if (joining) return;
  joining = true;
  $("join-error").textContent = "";
  $("join").hidden = true;
  show("joining");
  const ev = encodeURIComponent(eventId);
  try {
    if (!joinToken) {
      const id = await api("/v1/visitor", { method: "POST" });
      if (!id.r.ok) return failed(id.body);
    }
    // A challenge that became too easy while it was solved (the event's
    // difficulty rose with its join rate: challenge_too_easy) is replaced by
    // a fresh one, a few times at most.
    let r, body;
    for (let tries = 0; ; tries++) {
      const ch = await api(`/v1/events/${ev}/challenge`, { method: "POST" });
      if (!ch.r.ok) return failed(ch.body);
      // The visit's key goes with every try: a retry that lands after an
      // earlier try of the visit was admitted queues nobody again.
      const init = { method: "POST", headers: { "Idempotency-Key": visit() } };
      if (ch.body.required) {
        const solution = await solve(ch.body);
        init.headers["Content-Type"] = "application/json";
        init.body = JSON.stringify({ challenge: ch.body.challenge, solution });
      }
      ({ r, body } = await api(`/v1/events/${ev}/queue`, init));
      if (tries >= 3 || !(body.error && body.error.code === "challenge_too_easy")) break;
    }
    if (r.status === 409 && body.error && body.error.code === "event_not_open") {
      await notOpen(eventId, body.error, r.headers.get("Retry-After"));
      return;
    }
    if (r.status !== 202) return failed(body, r.status);
    hideNotOpen();
    save({ event: eventId, user: body.userId, ticket: body.ticket, statusUrl: body.statusUrl, returnTo, joinToken });
    watch();
  } catch (e) {
    failed({ error: { message: i18n.t("join.unreachable") } });
  } finally {
    joining = false;
    $("pow").hidden = true;
  }
}

// failed shows why a join did not go through, with a button to try again.
// The API's messages are in English; the page's own are in its language.
function failed(body, status) {
  $("join-error").textContent = body && body.error ? body.error.message : i18n.t("join.failed", { status: status || i18n.t("join.noAnswer") });
  $("join").hidden = false;
}

// solve finds the challenge's solution in a Web Worker (pow-worker.js), the
// page staying responsive, with its progress shown and told to screen
// readers in a few steps.
function solve(ch) {
  return new Promise((resolve, reject) => {
    const w = new Worker("/static/pow-worker.js");
    let told = 0;
    $("pow").hidden = false;
    $("pow-progress").value = 0;
    $("pow-status").textContent = i18n.t("pow.text");
    w.onmessage = ({ data }) => {
      if (data.type === "progress") {
        // The work is a lottery: tried/expected tries makes 1 - e^-x done.
        const pct = Math.min(99, Math.round(100 * (1 - Math.exp(-data.tried / data.expected))));
        $("pow-progress").value = pct;
        if (pct >= told + 25) {
          told = pct - (pct % 25);
          $("pow-status").textContent = i18n.t("pow.step", { pct: i18n.pct(told) });
        }
      } else if (data.type === "solved") {
        $("pow-progress").value = 100;
        $("pow-status").textContent = i18n.t("pow.done");
        w.terminate();
        resolve(data.solution);
      } else {
        w.terminate();
        reject(new Error(data.message || "the challenge could not be solved"));
      }
    };
    w.onerror = (e) => { w.terminate(); reject(e); };
    w.postMessage({ challenge: ch.challenge });
  });
}

// notOpen explains a join refused because the drop's pre-queue has not
// started: when it starts and when the drop opens, with a countdown. The
// form stays as it is, to join again then. The pre-queue's start comes from
// the public event (exact), else from Retry-After (which a cross-origin page
// may not be allowed to read).
async function notOpen(ev, err, retryAfter) {
  let start = 0;
  let dropAt = err.opensAt || 0;
  let clock = 0; // the server's clock minus ours
  const e = await readEvent(ev);
  if (e) {
    if (e.opensAt) dropAt = e.opensAt;
    if (e.opensAt) start = e.opensAt - 1000 * (e.prequeueSeconds || 0);
    if (e.serverTime) clock = e.serverTime - Date.now();
  }
  if (!start && retryAfter && Number(retryAfter) >= 0) start = Date.now() + clock + 1000 * Number(retryAfter);
  $("not-open-text").textContent = i18n.t("notOpen.text");
  setTime($("drop-opens-at"), dropAt);
  setTime($("prequeue-opens-at"), start);
  $("prequeue-when").hidden = !start;
  $("not-open").hidden = false;
  clearInterval(notOpenTimer);
  const tickNotOpen = () => {
    const left = Math.ceil((start - Date.now() - clock) / 1000);
    if (left > 0) {
      $("prequeue-opens-in").textContent = i18n.duration(left);
      return;
    }
    clearInterval(notOpenTimer);
    $("not-open-text").textContent = i18n.t("notOpen.open");
    $("prequeue-when").hidden = true;
    join();
  };
  if (start) {
    tickNotOpen();
    notOpenTimer = setInterval(tickNotOpen, 1000);
  }
}

function hideNotOpen() {
  clearInterval(notOpenTimer);
  $("not-open").hidden = true;
}

// setTime shows unix ms t in the page's language on a <time> element, "–"
// for 0.
function setTime(el, t) {
  if (!t) {
    el.textContent = "–";
    el.removeAttribute("datetime");
    return;
  }
  el.dateTime = new Date(t).toISOString();
  el.textContent = i18n.time(t);
}
