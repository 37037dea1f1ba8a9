// waitq admin view: events with their live sizes, and changes of capacity,
// admission rate and state (open, paused, closed).
"use strict";

const $ = (id) => document.getElementById(id);
let config = { producerUrl: "" };
let token = "";
let timer = null;

function api(path, init = {}) {
  init.headers = Object.assign({ Authorization: `Bearer ${token}` }, init.headers || {});
  return fetch(`${config.producerUrl}${path}`, init);
}

async function refresh() {
  try {
    const r = await api("/v1/admin/events");
    const body = await r.json();
    if (r.status !== 200) {
      $("admin-error").textContent = body.error ? body.error.message : `Error ${r.status}`;
      return;
    }
    $("admin-error").textContent = "";
    const rows = body.events.map((e) => {
      const tr = document.createElement("tr");
      for (const v of [e.eventId, e.state, e.waiting, e.active, e.capacity, e.admittedTotal, e.admitPerMinute || "no limit"]) {
        const td = document.createElement("td");
        td.textContent = String(v);
        tr.appendChild(td);
      }
      return tr;
    });
    $("events").querySelector("tbody").replaceChildren(...rows);
    $("events").hidden = false;
    $("capacity-form").hidden = false;
  } catch (e) {
    $("admin-error").textContent = "producer-api cannot be reached.";
  }
}

async function saveCapacity(event) {
  event.preventDefault();
  const ev = $("cap-event").value.trim();
  const change = {};
  if ($("cap-value").value !== "") change.capacity = Number($("cap-value").value);
  if ($("cap-rate").value !== "") change.admitPerMinute = Number($("cap-rate").value);
  if ($("cap-state").value !== "") change.state = $("cap-state").value;
  const r = await api(`/v1/admin/events/${encodeURIComponent(ev)}`, {
    method: "PUT", headers: { "Content-Type": "application/json" },
    body: JSON.stringify(change),
  });
  const body = await r.json();
  $("cap-status").textContent = r.ok ? `${ev} is now ${body.state} with capacity ${body.capacity}, ${body.admitPerMinute || "no limit on"} admissions a minute.` : (body.error ? body.error.message : `Error ${r.status}`);
  refresh();
}

async function start() {
  try { config = Object.assign(config, await (await fetch("/config.json")).json()); } catch { /* defaults */ }
  $("auth").addEventListener("submit", (e) => {
    e.preventDefault();
    token = $("admin-token").value;
    refresh();
    clearInterval(timer);
    timer = setInterval(refresh, 2000);
  });
  $("capacity-form").addEventListener("submit", saveCapacity);
}

start();
