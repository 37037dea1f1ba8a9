// waitq admin view: events with their live sizes, phase, draw and fairness
// figures; changes of capacity, admission rate and state (open, paused,
// closed); and scheduling a ticket drop (opening, pre-queue, close).
"use strict";

const $ = (id) => document.getElementById(id);
let config = { producerUrl: "" };
let token = "";
let timer = null;

function api(path, init = {}) {
  init.headers = Object.assign({ Authorization: `Bearer ${token}` }, init.headers || {});
  return fetch(`${config.producerUrl}${path}`, init);
}

// el makes an element with text, and a class when given.
function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}

// when shows unix ms t in local time.
function when(t) {
  return new Date(t).toLocaleString();
}

function ms(v) {
  return v >= 1000 ? `${(v / 1000).toFixed(1)} s` : `${v} ms`;
}

// scheduleCell describes e's schedule: the opening, the pre-queue, the close.
function scheduleCell(e) {
  const td = el("td");
  if (!e.opensAt && !e.closesAt) {
    td.textContent = "none";
    return td;
  }
  const lines = [];
  if (e.opensAt) {
    lines.push(`opens ${when(e.opensAt)}`);
    lines.push(e.prequeueSeconds ? `pre-queue ${e.prequeueSeconds} s, from ${when(e.opensAt - 1000 * e.prequeueSeconds)}` : "no pre-queue");
  }
  lines.push(e.closesAt ? `closes ${when(e.closesAt)}` : "never closes");
  for (const l of lines) td.appendChild(el("div", l));
  return td;
}

// drawCell shows e's draw: the pre-queue's size, the commitment, and from
// the opening the seed and a button that downloads the export for
// waitq-verify.
function drawCell(e) {
  const td = el("td");
  if (!e.draw) {
    td.textContent = "none";
    return td;
  }
  td.appendChild(el("div", `${e.draw.prequeueSize} in the pre-queue`, "prequeue-size"));
  td.appendChild(el("div", "commitment:"));
  td.appendChild(el("code", e.draw.commitment, "hash commitment"));
  if (e.draw.seed) {
    td.appendChild(el("div", "seed:"));
    td.appendChild(el("code", e.draw.seed, "hash seed"));
    const b = el("button", "Export the draw", "secondary export");
    b.type = "button";
    b.addEventListener("click", () => exportDraw(e.eventId));
    td.appendChild(b);
  } else {
    td.appendChild(el("div", "seed: revealed at the opening", "muted"));
  }
  return td;
}

// fairnessCell shows inversions (joins overtaken through consumer lag) and
// the ingest delay's quantiles (upper bounds of power-of-two buckets).
function fairnessCell(e) {
  const td = el("td");
  const f = e.fairness || { inversions: 0, ingestDelayMs: { count: 0, p50: 0, p99: 0 } };
  td.appendChild(el("div", `${f.inversions} inversions`, f.inversions ? "inversions error" : "inversions"));
  const d = f.ingestDelayMs;
  td.appendChild(el("div", d.count ? `ingest delay p50 ≤ ${ms(d.p50)}, p99 ≤ ${ms(d.p99)} (${d.count} joins)` : "no joins ingested", "ingest-delay"));
  return td;
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
      for (const v of [e.eventId, e.state, e.waiting, e.active, e.capacity, e.admittedTotal, e.admitPerMinute || "no limit", e.phase]) {
        tr.appendChild(el("td", String(v)));
      }
      tr.append(scheduleCell(e), drawCell(e), fairnessCell(e));
      return tr;
    });
    $("events").querySelector("tbody").replaceChildren(...rows);
    $("events").hidden = false;
    $("capacity-form").hidden = false;
    $("schedule-form").hidden = false;
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

// localMs reads a datetime-local input as unix ms (the browser's time
// zone); NaN when empty or invalid.
function localMs(input) {
  return input.value === "" ? NaN : new Date(input.value).getTime();
}

async function saveSchedule(event) {
  event.preventDefault();
  const ev = $("sch-event").value.trim();
  const opensAt = localMs($("sch-opens"));
  const closesAt = $("sch-closes").value === "" ? 0 : localMs($("sch-closes"));
  if (Number.isNaN(opensAt) || Number.isNaN(closesAt)) {
    $("sch-status").textContent = "Enter the opening (and the close, if any) as a date and time.";
    return;
  }
  const change = { opensAt, prequeueSeconds: Number($("sch-prequeue").value), closesAt };
  if ($("sch-capacity").value !== "") change.capacity = Number($("sch-capacity").value);
  try {
    const r = await api(`/v1/admin/events/${encodeURIComponent(ev)}`, {
      method: "PUT", headers: { "Content-Type": "application/json" },
      body: JSON.stringify(change),
    });
    const body = await r.json();
    if (!r.ok) {
      $("sch-status").textContent = body.error ? body.error.message : `Error ${r.status}`;
      return;
    }
    const from = body.opensAt - 1000 * (body.prequeueSeconds || 0);
    const commitment = el("code", body.draw ? body.draw.commitment : "–", "hash");
    commitment.id = "sch-commitment";
    $("sch-status").replaceChildren(
      el("span", `${ev} opens ${when(body.opensAt)}; its pre-queue takes joins from ${when(from)}${body.closesAt ? `; it closes ${when(body.closesAt)}` : ""}. The draw's commitment, to publish now: `),
      commitment);
  } catch (e) {
    $("sch-status").textContent = "producer-api cannot be reached.";
    return;
  }
  refresh();
}

// exportDraw downloads the draw's export, the input of waitq-verify.
async function exportDraw(id) {
  const r = await api(`/v1/admin/events/${encodeURIComponent(id)}/draw`);
  const body = await r.json();
  if (!r.ok) {
    $("admin-error").textContent = body.error ? body.error.message : `Error ${r.status}`;
    return;
  }
  const a = el("a");
  a.href = URL.createObjectURL(new Blob([JSON.stringify(body, null, 2)], { type: "application/json" }));
  a.download = `${id}-draw.json`;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
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
  $("schedule-form").addEventListener("submit", saveSchedule);
}

start();
