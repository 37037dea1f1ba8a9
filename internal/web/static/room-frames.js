// What the waiting room shows of each status frame (app.js holds the page's
// state and starts it): the place and its estimate, a drop's pre-queue and
// draw, the admission and its countdown, the end of the place.
"use strict";

// setState shows the state line's text of key, only when it changes.
function setState(key) {
  const text = i18n.t(key);
  if ($("state-text").textContent !== text) $("state-text").textContent = text;
}

function onFrame(f) {
  if (f.type === "status") {
    mailForm(f.state);
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
    else if (f.state === "moved") return movedAway();
    else if (f.state === "no_show") return lapsed();
    else if (f.state === "called") {
      setState("state.called");
      callTurn("title.called", i18n.t("notify.called", { title: brand.tabTitle() }));
    }
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
// notifications are allowed), then on to the shop, or, for an event with
// no target, in words what to do next until when; the entry token is for
// the shop's developers, in a collapsed <details> (docs/api.md).
function admitted(f) {
  stopOpening();
  show("admitted");
  $("admitted-title").focus();
  expiresAt = f.expiresAt;
  const left = i18n.duration(Math.max(0, Math.round((expiresAt - Date.now()) / 1000)));
  callTurn("title.turn", i18n.t("notify.body", { title: brand.tabTitle(), countdown: left }));
  if (f.redirectUrl) {
    announce(i18n.t("a11y.redirect"), true);
    return goToShop(f);
  }
  announce(i18n.t("a11y.admitted", { countdown: left }), true);
  $("token").value = f.entryToken;
  setTime($("admitted-until"), expiresAt);
  showOwnOrder();
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
    drawKind(e.draw);
    if (e.draw.seed) {
      drawRead.seed = true;
      $("seed").textContent = e.draw.seed;
      $("seed-line").hidden = false;
      if (e.draw.kind !== "chain") $("draw-explain").textContent = i18n.t("draw.drawn", { n: e.draw.prequeueSize });
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

// lapsed ends a place whose turn came while the person was away and was
// not claimed within the claim window: said in words, with the way back
// (a join again takes a place at the back).
function lapsed() {
  finish();
  $("released").textContent = i18n.t("state.noShow") + " ";
  const again = document.createElement("a");
  again.href = `?event=${encodeURIComponent(eventId)}`;
  again.textContent = i18n.t("join.again");
  $("released").append(again);
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
