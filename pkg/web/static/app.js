// waitq waiting room: join over HTTP, then watch the line over WebSocket.
// The ticket is kept in sessionStorage, so a refresh or a lost connection
// keeps the place; reconnects back off exponentially.
"use strict";

const $ = (id) => document.getElementById(id);
let config = { producerUrl: "", defaultEvent: "demo" };
let socket = null;
let retries = 0;
let firstPosition = 0;
let expiresAt = 0;
let countdown = null;
let finished = false;

function saved() {
  try { return JSON.parse(sessionStorage.getItem("waitq") || "null"); } catch { return null; }
}

function save(v) {
  if (v) sessionStorage.setItem("waitq", JSON.stringify(v)); else sessionStorage.removeItem("waitq");
}

function show(section) {
  for (const id of ["join-form", "line", "admitted", "released"]) $(id).hidden = id !== section;
}

function setConn(state, text) {
  $("conn").dataset.state = state;
  $("conn").textContent = text;
}

async function join(event) {
  event.preventDefault();
  $("join-error").textContent = "";
  const user = $("user").value.trim();
  const ev = $("event").value.trim();
  try {
    const r = await fetch(`${config.producerUrl}/v1/events/${encodeURIComponent(ev)}/queue`, {
      method: "POST", headers: { "X-User-Id": user },
    });
    const body = await r.json();
    if (r.status !== 202) {
      $("join-error").textContent = body.error ? body.error.message : `Could not join (${r.status}).`;
      return;
    }
    save({ event: ev, user, ticket: body.ticket, statusUrl: body.statusUrl });
    watch();
  } catch (e) {
    $("join-error").textContent = "The waiting room cannot be reached. Please try again.";
  }
}

function watch() {
  const s = saved();
  if (!s) { show("join-form"); return; }
  show("line");
  $("line-event").textContent = s.event;
  const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}${s.statusUrl}`;
  socket = new WebSocket(url);
  setConn("connecting", retries ? "Reconnecting…" : "Connecting…");
  socket.onopen = () => { retries = 0; setConn("open", "Connected — updates every few seconds."); };
  socket.onmessage = (m) => onFrame(JSON.parse(m.data));
  socket.onclose = (e) => {
    socket = null;
    if (finished) return;
    if (e.code === 4401 || e.code === 4404 || e.code === 4400) {
      save(null);
      show("join-form");
      $("join-error").textContent = e.code === 4404 ? "This event does not exist." : "Your place could not be verified; please join again.";
      return;
    }
    const delay = Math.min(30000, 500 * 2 ** retries++) * (0.5 + Math.random() / 2);
    setConn("reconnecting", `Connection lost — reconnecting in ${Math.ceil(delay / 1000)} s. You keep your place.`);
    setTimeout(watch, delay);
  };
}

function onFrame(f) {
  if (f.type === "status") {
    if (f.state === "waiting") {
      if (!firstPosition || f.position > firstPosition) firstPosition = f.position;
      $("state-text").textContent = f.position === 1 ? "You are next!" : "You are in line.";
      $("position").textContent = String(f.position);
      $("total").textContent = String(f.total);
      $("eta").textContent = f.etaSeconds == null ? "unknown" : formatSeconds(f.etaSeconds);
      $("progress").value = firstPosition > 1 ? Math.round(100 * (firstPosition - f.position) / (firstPosition - 1)) : 100;
    } else if (f.state === "pending") {
      $("state-text").textContent = "Taking your place in line…";
    } else if (f.state === "expired" || f.state === "not_queued") {
      if (!$("admitted").hidden || f.state === "expired") return finish();
      $("state-text").textContent = "You are not in line any more.";
    }
  } else if (f.type === "admitted") {
    show("admitted");
    $("token").value = f.entryToken;
    expiresAt = f.expiresAt;
    tick();
    clearInterval(countdown);
    countdown = setInterval(tick, 1000);
  } else if (f.type === "error") {
    $("join-error").textContent = f.message;
  }
}

function tick() {
  const left = Math.max(0, Math.round((expiresAt - Date.now()) / 1000));
  $("countdown").textContent = formatSeconds(left);
  if (left === 0) finish();
}

function formatSeconds(s) {
  return s >= 60 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${s} s`;
}

function finish() {
  finished = true;
  clearInterval(countdown);
  save(null);
  if (socket) socket.close(1000, "done");
  show("released");
}

function send(type) {
  if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ type }));
}

async function start() {
  try { config = Object.assign(config, await (await fetch("/config.json")).json()); } catch { /* defaults */ }
  const params = new URLSearchParams(location.search);
  $("event").value = params.get("event") || config.defaultEvent;
  $("user").value = (saved() || {}).user || `guest-${Math.random().toString(36).slice(2, 8)}`;
  $("join-form").addEventListener("submit", join);
  $("leave").addEventListener("click", () => { send("leave"); finish(); $("released").textContent = "You left the line."; });
  $("done").addEventListener("click", () => { send("release"); setTimeout(finish, 200); });
  if (saved()) watch(); else show("join-form");
}

start();
