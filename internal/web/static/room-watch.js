// The waiting room's ways of hearing of its place (app.js holds the page's
// state and starts it): the WebSocket, then server-sent events, then
// polling the status route, with reconnects and refusals.
"use strict";

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
