// waitq waiting room: join over HTTP, then watch the line over WebSocket.
// When the WebSocket cannot open at all (a proxy that refuses the upgrade),
// the page falls back to server-sent events on the gateway's stream route,
// and when those cannot open either (or the browser has no EventSource),
// to polling the status route; the connection line says which is in use.
// Nobody types an id: the page joins by itself, as the visitor identity
// producer-api issues in a cookie (or as the account of the join token the
// shop's link carries, ?joinToken=), solving the event's proof-of-work
// challenge first in a Web Worker when the event asks for one. The ticket is
// kept in localStorage per event, so a refresh, a second tab or a browser
// reopened keeps the same place; reconnects back off exponentially. For a ticket drop it
// counts down to the opening in the pre-queue, shows the draw's commitment
// (and the seed after the opening) and the place the draw gave.
//
// The page speaks the language of ?lang=, else the browser's, else the
// event's page locale (i18n.js), shows the event's branding (brand.js),
// and tells screen readers of the place in a polite live region at most
// every announceEvery, at once when it is the person's turn.
"use strict";

const $ = (id) => document.getElementById(id);
let config = { producerUrl: "", defaultEvent: "demo" };
let socket = null;
let source = null; // the EventSource, in mode "sse"
let pollTimer = null;
// mode is how the page hears of its place: "ws", then "sse", then "poll",
// each tried when the one before cannot open.
let mode = "ws";
const worked = { ws: false, sse: false }; // opened once in this page: not blocked, only broken
let tokenRetried = false; // admitted while polling: the live ways were tried once more for the token
const pollEvery = 5000;
let retries = 0;
let expiresAt = 0;
let countdown = null;
let finished = false;
// A drop: the opening (server unix ms), the server's clock minus ours, the
// ticker of the countdown, and which draw reads were made (readDraw).
let opensAt = 0;
let skew = 0;
let opening = null;
const drawRead = { prequeue: false, opened: 0, seed: false, busy: false };
let returnTo = "";
let notOpenTimer = null;
// The event this page is for (?event=), and the shop's join token for it
// (?joinToken=), if any.
let eventId = "";
let joinToken = "";
let joining = false;
// The line as this page saw it move: when and where the first waiting
// status came, for the estimate's second opinion (etaText).
const seen = { at: 0, position: 0 };
// Announcements: a position at most every announceEvery, the turn at once.
const announceEvery = 30000;
const announcer = { at: 0, pending: "" };

// The place is kept per event in localStorage: every tab of this browser
// shares it, and it outlives the tab.
function storeKey() { return `waitq:${eventId}`; }

// visit returns this browser's visit of the event: one key for every try
// of a join until the place ends (finish), kept with the place.
function visit() {
  const key = `waitq-visit:${eventId}`;
  let v = localStorage.getItem(key);
  if (!v) {
    const b = new Uint8Array(16);
    crypto.getRandomValues(b);
    v = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
    localStorage.setItem(key, v);
  }
  return v;
}

function saved() {
  try {
    const s = JSON.parse(localStorage.getItem(storeKey()) || "null");
    return s && s.event === eventId ? s : null;
  } catch { return null; }
}

function save(v) {
  if (v) localStorage.setItem(storeKey(), JSON.stringify(v)); else localStorage.removeItem(storeKey());
}

function show(section) {
  for (const id of ["joining", "line", "admitted", "released"]) $(id).hidden = id !== section;
}

function setConn(state, key, vars) {
  $("conn").dataset.state = state;
  $("conn").dataset.transport = mode;
  $("conn").textContent = i18n.t(key, vars);
}

// announce tells screen readers text through the polite live region: at
// once when now, else at most every announceEvery (the latest text wins).
function announce(text, now) {
  if (now) announcer.at = 0;
  announcer.pending = text;
  flushAnnouncement();
}

function flushAnnouncement() {
  const text = announcer.pending;
  if (!text || Date.now() - announcer.at < announceEvery) return;
  announcer.pending = "";
  if ($("announce").textContent === text) return;
  announcer.at = Date.now();
  $("announce").textContent = text;
}

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

function watch() {
  const s = saved();
  if (!s) { join(); return; }
  show("line");
  hideNotOpen();
  if (mode === "ws") watchSocket(s);
  else if (mode === "sse") watchStream(s);
  else pollStatus();
}

// back is the query parameter of the shop's page that sent the person here
// (returnTo): the gateway sends them back to it on admission if it lies
// under the event's targetUrl.
function back(s) {
  return s.returnTo ? `&returnTo=${encodeURIComponent(s.returnTo)}` : "";
}

// eventPath is the gateway's path of route under the saved event, with the
// ticket.
function eventPath(s, route) {
  return `/v1/events/${encodeURIComponent(s.event)}/${route}?ticket=${encodeURIComponent(s.ticket)}${back(s)}`;
}

function watchSocket(s) {
  const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}${s.statusUrl}${back(s)}`;
  let opened = false;
  try {
    socket = new WebSocket(url);
  } catch {
    fallBack("sse", "conn.noWs");
    return;
  }
  setConn("connecting", retries ? "conn.reconnecting" : "conn.connecting");
  socket.onopen = () => { opened = worked.ws = true; retries = 0; setConn("open", "conn.open"); };
  socket.onmessage = (m) => onFrame(JSON.parse(m.data));
  socket.onclose = (e) => {
    socket = null;
    if (finished) return;
    if (e.code === 4401 || e.code === 4404 || e.code === 4400) return refused(e.code === 4404);
    // Never opened in this page: something between here and the gateway
    // refuses WebSockets; server-sent events are plain HTTP.
    if (!opened && !worked.ws) return fallBack("sse", "conn.wsFailed");
    reconnect();
  };
}

// watchStream reads the gateway's stream route. The browser reconnects a
// stream that breaks by itself (after the stream's retry:), sending the id
// of the admission it received so that it is not sent again.
function watchStream(s) {
  if (typeof EventSource !== "function") {
    fallBack("poll", "conn.noSse");
    return;
  }
  let opened = false;
  source = new EventSource(eventPath(s, "stream"));
  setConn("connecting", "conn.sseConnecting");
  source.onopen = () => { opened = worked.sse = true; retries = 0; setConn("open", "conn.sseOpen"); };
  for (const type of ["status", "admitted", "error"]) source.addEventListener(type, (m) => onFrame(JSON.parse(m.data)));
  source.onerror = () => {
    if (finished) return;
    if (opened && source.readyState === EventSource.CONNECTING) {
      setConn("reconnecting", "conn.lost");
      return;
    }
    source.close();
    source = null;
    if (!worked.sse) return fallBack("poll", "conn.sseFailed");
    checkPlace(s);
  };
}

// checkPlace asks the status route once why a stream that worked was
// refused (an EventSource cannot tell): a place the gateway does not know
// ends watching, anything else reconnects.
async function checkPlace(s) {
  try {
    const r = await fetch(eventPath(s, "status"), { cache: "no-store" });
    if (refusedBy(r)) return;
  } catch { /* the network: reconnect below */ }
  reconnect();
}

// pollStatus asks the status route for the place every pollEvery. A poll
// that cannot reach the gateway at all is a network failure, not a proxy:
// the page starts over from the WebSocket, backing off.
async function pollStatus() {
  pollTimer = null;
  const s = saved();
  if (!s || finished || mode !== "poll") return;
  let r;
  try {
    r = await fetch(eventPath(s, "status"), { cache: "no-store" });
  } catch {
    mode = "ws";
    reconnect();
    return;
  }
  if (finished || mode !== "poll") return;
  if (refusedBy(r)) return;
  let delay = pollEvery;
  if (r.ok) {
    retries = 0;
    setConn("polling", "conn.polling");
    onFrame(await r.json());
  } else {
    delay = Math.max(pollEvery, 1000 * Number(r.headers.get("Retry-After") || 0));
    setConn("reconnecting", "conn.busy");
  }
  if (!finished && mode === "poll") pollTimer = setTimeout(pollStatus, delay);
}

// fallBack moves to the next way of hearing of the place, saying so.
function fallBack(next, key) {
  mode = next;
  retries = 0;
  setConn("fallback", key);
  setTimeout(watch, 300); // long enough to read the step
}

function reconnect() {
  const delay = Math.min(30000, 500 * 2 ** retries++) * (0.5 + Math.random() / 2);
  setConn("reconnecting", "conn.lostIn", { time: i18n.duration(Math.ceil(delay / 1000)) });
  setTimeout(watch, delay);
}

// refused ends watching a place the gateway does not know: the event is
// gone, or the ticket no longer verifies (then the page joins again: the
// same identity keeps its place).
function refused(unknownEvent) {
  save(null);
  show("joining");
  if (unknownEvent) {
    $("join-error").textContent = i18n.t("notFound");
    return;
  }
  join();
}

// refusedBy ends watching when the gateway's answer r says it does not know
// the place (the HTTP statuses of close codes 4400, 4401, 4404).
function refusedBy(r) {
  if (r.status !== 400 && r.status !== 401 && r.status !== 404) return false;
  refused(r.status === 404);
  return true;
}

// stopWatching closes whatever the page listens on.
function stopWatching(reason) {
  if (socket) socket.close(1000, reason);
  if (source) source.close();
  clearTimeout(pollTimer);
  socket = source = pollTimer = null;
}

// admittedWhilePolling: a poll says the slot is held, but only a live
// connection carries the entry token. The live ways are tried once more
// (a fresh connection is sent the admission); if they fail again, the page
// says what is missing.
function admittedWhilePolling() {
  if (!tokenRetried) {
    tokenRetried = true;
    mode = "ws";
    clearTimeout(pollTimer);
    pollTimer = null;
    setConn("connecting", "conn.tokenFetch");
    watch();
    return;
  }
  setState("state.tokenBlocked");
}

// setState shows the state line's text of key, only when it changes.
function setState(key) {
  const text = i18n.t(key);
  if ($("state-text").textContent !== text) $("state-text").textContent = text;
}

function onFrame(f) {
  if (f.type === "status") {
    prequeue(f);
    setTime($("updated-at"), Date.now()); // received now, by this browser's clock
    if (f.drawnPlace) {
      $("drawn").hidden = false;
      $("drawn-place").textContent = i18n.num(f.drawnPlace);
      readDraw("opened");
    }
    if (f.state === "waiting") waiting(f);
    else if (f.state === "prequeue") $("gathered").textContent = i18n.t("gathered", { n: f.total });
    else if (f.state === "pending") setState("state.pending");
    else if (f.state === "admitted" && mode === "poll" && $("admitted").hidden) admittedWhilePolling();
    else if (f.state === "rebuilding") setState("state.rebuilding");
    else if (f.state === "expired" || f.state === "not_queued") {
      if (!$("admitted").hidden || f.state === "expired") return finish();
      setState("state.notQueued");
    }
    flushAnnouncement();
  } else if (f.type === "admitted") {
    admitted(f);
  } else if (f.type === "error") {
    $("join-error").textContent = f.message;
  }
}

// waiting shows a waiting status f: the position, the people ahead, the
// estimate, the progress from the place at joining (kept with the place)
// to the front, the tab's title, the template's placeholders, and the
// announcement.
function waiting(f) {
  const s = saved();
  if (s && (!s.first || f.position > s.first)) {
    s.first = f.position;
    save(s);
  }
  const first = (s && s.first) || f.position;
  if (!seen.at || f.position > seen.position) Object.assign(seen, { at: Date.now(), position: f.position });
  setState(f.position === 1 ? "state.next" : "state.inLine");
  const position = i18n.num(f.position), total = i18n.num(f.total);
  $("position").textContent = position;
  $("total").textContent = total;
  const ahead = f.position - 1;
  $("ahead").textContent = ahead > 0 ? i18n.t("ahead", { n: ahead }) : i18n.t("ahead.none");
  const eta = etaText(f);
  $("eta").textContent = eta;
  $("progress").value = first > 1 ? Math.round(100 * (first - f.position) / (first - 1)) : 100;
  document.title = i18n.t("title.position", { position, title: brand.tabTitle() });
  brand.update({ position, total, ahead: i18n.num(ahead), eta, updated: $("updated-at").textContent });
  if (f.position === 1) announce(i18n.t("a11y.next"), $("announce").textContent !== i18n.t("a11y.next"));
  else announce(i18n.t("a11y.position", { position, total }));
}

// etaText is the estimated wait of waiting status f, honest about what it
// does not know: the gateway's estimate (from the recent admission rate,
// never sooner than the holds allow; a range when it gives etaMaxSeconds)
// and, after half a minute of watching, this page's own (from how fast its
// place moved); a range between them (or from the one to half as much
// again), "about" when they agree. A line that has not moved for over a
// minute says so instead of promising.
function etaText(f) {
  const watched = (Date.now() - seen.at) / 1000;
  const moved = seen.position - f.position;
  let own = null;
  if (seen.at && watched >= 30) {
    if (moved <= 0) {
      if (watched >= 60) return i18n.t("eta.stalled", { time: i18n.duration(roundWait(watched)) });
    } else own = f.position * watched / moved;
  }
  const server = f.etaSeconds == null ? null : f.etaSeconds;
  // The gateway's range (etaMaxSeconds) when it gives one.
  const serverMax = f.etaMaxSeconds == null ? server : f.etaMaxSeconds;
  if (server == null && own == null) return i18n.t("eta.unknown");
  let lo = Math.min(server ?? own, own ?? server);
  let hi = Math.max(serverMax ?? own, own ?? serverMax);
  if (own == null && f.etaMaxSeconds == null) hi = lo * 1.5;
  lo = roundWait(lo);
  hi = roundWait(hi);
  if (hi <= lo) return i18n.t("eta.about", { time: i18n.duration(lo) });
  return i18n.t("eta.range", { lo: i18n.duration(lo), hi: i18n.duration(hi) });
}

// roundWait rounds a wait of s seconds as a person would say it: to 5 s
// under a minute, to the minute under an hour, then to 10 minutes.
function roundWait(s) {
  if (s < 60) return Math.max(5, Math.ceil(s / 5) * 5);
  if (s < 3600) return Math.ceil(s / 60) * 60;
  return Math.ceil(s / 600) * 600;
}

// admitted shows the admission frame f: the turn, told at once (focus,
// announcement, the tab's title, a notification when the tab is hidden and
// notifications are allowed), then on to the shop or the entry token.
function admitted(f) {
  stopOpening();
  show("admitted");
  const title = brand.tabTitle();
  document.title = i18n.t("title.turn", { title });
  $("admitted-title").focus();
  expiresAt = f.expiresAt;
  const left = i18n.duration(Math.max(0, Math.round((expiresAt - Date.now()) / 1000)));
  if (document.hidden && "Notification" in window && Notification.permission === "granted") {
    try { new Notification(i18n.t("notify.title"), { body: i18n.t("notify.body", { title, countdown: left }) }); } catch { /* not here */ }
  }
  if (f.redirectUrl) {
    announce(i18n.t("a11y.redirect"), true);
    return goToShop(f);
  }
  announce(i18n.t("a11y.admitted", { countdown: left }), true);
  $("token").value = f.entryToken;
  tick();
  clearInterval(countdown);
  countdown = setInterval(tick, 1000);
}

// prequeue shows or hides the pre-queue's countdown for status frame f: in
// the pre-queue a user has no position, only the time to the opening.
function prequeue(f) {
  const on = f.state === "prequeue";
  $("prequeue").hidden = !on;
  for (const id of ["place-line", "ahead", "eta-line", "progress-box"]) $(id).hidden = on;
  if (!on) {
    stopOpening();
    return;
  }
  opensAt = f.opensAt || f.ts + 1000 * (f.opensInSeconds || 0);
  skew = f.ts ? f.ts - Date.now() : 0;
  setTime($("opens-at"), opensAt);
  if (!opening) {
    opening = setInterval(tickOpening, 1000);
  }
  tickOpening();
  readDraw("prequeue");
}

function tickOpening() {
  const left = Math.ceil((opensAt - Date.now() - skew) / 1000);
  $("opens-in").textContent = left > 0 ? i18n.duration(left) : i18n.t("prequeue.moment");
  setState(left > 0 ? "state.prequeue" : "state.opening");
}

function stopOpening() {
  clearInterval(opening);
  opening = null;
}

// readDraw reads the event's draw from producer-api: once on entering the
// pre-queue (the commitment), and after the opening until it shows the seed
// (at most three reads, one per status frame: the services' clocks may
// differ by a moment).
async function readDraw(when) {
  if (drawRead.busy || (when === "prequeue" ? drawRead.prequeue : (drawRead.seed || drawRead.opened >= 3))) return;
  const s = saved();
  if (!s) return;
  if (when === "prequeue") drawRead.prequeue = true; else drawRead.opened++;
  drawRead.busy = true;
  try {
    const e = await readEvent(s.event);
    if (!e || !e.draw) return;
    $("commitment").textContent = e.draw.commitment;
    $("draw").hidden = false;
    if (e.draw.seed) {
      drawRead.seed = true;
      $("seed").textContent = e.draw.seed;
      $("seed-line").hidden = false;
      $("draw-explain").textContent = i18n.t("draw.drawn", { n: e.draw.prequeueSize });
    }
  } finally {
    drawRead.busy = false;
  }
}

function tick() {
  const left = Math.max(0, Math.round((expiresAt - Date.now()) / 1000));
  $("countdown").textContent = i18n.duration(left);
  if (left === 0) finish();
}

// goToShop sends an admitted person on to the shop with their entry token
// (the frame's redirectUrl: the event's targetUrl, or the page they came
// from); the shop keeps them in through its cookie from there.
function goToShop(f) {
  $("token-box").hidden = true;
  $("redirect").hidden = false;
  $("go-shop").href = f.redirectUrl;
  finished = true;
  save(null);
  stopWatching("admitted");
  location.assign(f.redirectUrl);
}

function finish() {
  finished = true;
  clearInterval(countdown);
  stopOpening();
  save(null);
  localStorage.removeItem(`waitq-visit:${eventId}`); // a next join is a new visit
  stopWatching("done");
  show("released");
  $("released").focus();
}

// send asks to leave the line or release the slot: over the WebSocket, or
// without one over HTTP (a leave through producer-api as the join, a
// release with the entry token).
function send(type) {
  if (socket && socket.readyState === 1) {
    socket.send(JSON.stringify({ type }));
    return;
  }
  const s = saved();
  if (!s) return;
  const ev = encodeURIComponent(s.event);
  if (type === "leave") {
    api(`/v1/events/${ev}/queue`, { method: "DELETE" }).catch(() => {});
  } else if ($("token").value) {
    fetch(`/v1/events/${ev}/release`, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ token: $("token").value }),
    }).catch(() => {});
  }
}

// texts writes the page's own texts in its language: the static ones
// (data-i18n) and those with elements in their slots.
function texts() {
  i18n.apply();
  document.title = brand.tabTitle();
  const slots = {
    "line-title": ["line.title", { event: $("line-event") }],
    "place-line": ["place", { position: $("position"), total: $("total") }],
    "eta-line": ["eta", { eta: $("eta") }],
    "drawn": ["drawn", { place: $("drawn-place") }],
    "prequeue-when": ["notOpen.when", { at: $("prequeue-opens-at").parentNode, in: $("prequeue-opens-in") }],
    "not-open-drop": ["notOpen.drop", { at: $("drop-opens-at").parentNode }],
    "opens-in-line": ["prequeue.opensIn", { in: $("opens-in") }],
    "opens-at-line": ["prequeue.at", { at: $("opens-at") }],
    "updated": ["updated", { time: $("updated-at") }],
    "expires-line": ["admitted.expires", { countdown: $("countdown") }],
    "redirect": ["admitted.redirect", { link: $("go-shop") }],
    "verify-hint": ["draw.hint", { cmd: $("verify-cmd"), verifier: $("verify-tool") }],
  };
  for (const [id, [key, nodes]] of Object.entries(slots)) fill($(id), i18n.t(key, {}), nodes);
  $("line-event").textContent = brand.title(eventId);
  $("state-text").textContent = i18n.t("state.waitingForPlace");
  $("draw-explain").textContent = i18n.t("draw.explain");
  $("eta").textContent = i18n.t("eta.unknown");
  $("released").textContent = i18n.t("released");
  const select = $("lang");
  select.replaceChildren(...i18n.languages.map((l) => {
    const o = document.createElement("option");
    o.value = l;
    o.lang = l;
    o.textContent = catalogs[l]["lang.name"];
    return o;
  }));
  select.value = i18n.lang;
}

// phaseNotice says when the sale is paused or closed (the line does not
// move, or takes nobody new); read at the start and every minute.
function phaseNotice(e) {
  const key = e && { paused: "phase.paused", closed: "phase.closed" }[e.phase];
  $("phase-notice").hidden = !key;
  if (key) $("phase-notice").textContent = i18n.t(key);
}

// notifications offers to notify the person of their turn while the tab
// is hidden, where the browser can.
function notifications() {
  if (!("Notification" in window) || Notification.permission === "denied") return;
  $("notify-box").hidden = false;
  const said = () => {
    const p = Notification.permission;
    $("notify").hidden = p !== "default";
    $("notify-status").textContent = p === "granted" ? i18n.t("notify.on") : p === "denied" ? i18n.t("notify.blocked") : "";
  };
  said();
  $("notify").addEventListener("click", async () => {
    try { await Notification.requestPermission(); } catch { /* an old browser */ }
    said();
  });
}

async function start() {
  try { config = Object.assign(config, await (await fetch("/config.json")).json()); } catch { /* defaults */ }
  const params = new URLSearchParams(location.search);
  eventId = params.get("event") || config.defaultEvent;
  returnTo = params.get("returnTo") || "";
  joinToken = params.get("joinToken") || "";
  if (joinToken) {
    // The token is kept with the place, not in the address bar.
    params.delete("joinToken");
    history.replaceState(null, "", `${location.pathname}?${params}`);
  }
  const e = await readEvent(eventId);
  const page = (e && e.page) || {};
  i18n.choose([params.get("lang"), ...(navigator.languages || [navigator.language]), page.locale]);
  brand.show(page, eventId);
  texts();
  phaseNotice(e);
  notifications();
  setInterval(async () => { if (!finished) phaseNotice(await readEvent(eventId)); }, 60000);
  setInterval(flushAnnouncement, 5000);
  $("lang-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const p = new URLSearchParams(location.search);
    p.set("lang", $("lang").value);
    location.assign(`${location.pathname}?${p}`);
  });
  $("join").addEventListener("click", join);
  // Another tab of this browser joined or ended: follow it.
  window.addEventListener("storage", (ev) => {
    if (ev.key === storeKey() && saved() && !$("joining").hidden && !joining) watch();
  });
  $("leave").addEventListener("click", () => { send("leave"); finish(); $("released").textContent = i18n.t("left"); });
  $("done").addEventListener("click", () => { send("release"); setTimeout(finish, 200); });
  const s = saved();
  if (s && s.joinToken && !joinToken) joinToken = s.joinToken;
  watch();
}

start();
