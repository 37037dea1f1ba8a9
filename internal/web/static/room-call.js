// Being called (docs/api.md, "Being called"): the form that leaves an
// email address to be mailed when the turn comes, and the turn's call in
// the open page with the browser's own means: the tab's title, a short
// tone (WebAudio, no file), and a system notification where the visitor
// allowed it (asked from the notify button's click only, app.js).
"use strict";

let audio = null; // the AudioContext, made at the first gesture (autoplay rules)
let calledOnce = false;

// unlockAudio makes (or resumes) the tone's AudioContext: browsers let a
// page play sound only after a gesture on it.
function unlockAudio() {
  try {
    audio = audio || new (window.AudioContext || window.webkitAudioContext)();
    if (audio.state === "suspended") audio.resume();
  } catch { audio = null; }
}

// beep plays two short tones, where the browser lets it.
function beep() {
  unlockAudio();
  if (!audio) return;
  const t = audio.currentTime;
  for (const [at, hz] of [[0, 880], [0.25, 1175]]) {
    const osc = audio.createOscillator(), gain = audio.createGain();
    osc.frequency.value = hz;
    gain.gain.setValueAtTime(0.0001, t + at);
    gain.gain.exponentialRampToValueAtTime(0.2, t + at + 0.02);
    gain.gain.exponentialRampToValueAtTime(0.0001, t + at + 0.2);
    osc.connect(gain).connect(audio.destination);
    osc.start(t + at);
    osc.stop(t + at + 0.22);
  }
}

// callTurn calls the person: their turn came while the page is open
// (state called, then admitted). The title says so (key); the tone and
// the notification (body; only with the permission granted, and for an
// admission only while the tab is hidden) come once.
function callTurn(key, body) {
  document.title = i18n.t(key, { title: brand.tabTitle() });
  if (calledOnce) return;
  calledOnce = true;
  beep();
  const shown = key === "title.called" || document.hidden;
  if (shown && "Notification" in window && Notification.permission === "granted") {
    try { new Notification(i18n.t("notify.title"), { body, tag: "waitq-turn" }); } catch { /* not here */ }
  }
}

// mailForm shows the form while the person waits (states waiting and
// prequeue), hides it otherwise.
function mailForm(state) {
  $("mail-form").hidden = !(state === "waiting" || state === "prequeue");
}

// leaveAddress sends the form's address (PUT …/notify), or withdraws it
// (DELETE), and says what came of it.
async function leaveAddress(withdraw) {
  const s = saved();
  if (!s) return;
  const email = $("mail").value.trim();
  const path = `/v1/events/${encodeURIComponent(s.event)}/notify`;
  const init = withdraw ? { method: "DELETE" } :
    { method: "PUT", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ email }) };
  try {
    const { r, body } = await api(path, init);
    if (!r.ok) {
      $("mail-status").textContent = i18n.t("mail.failed", { reason: (body.error && body.error.message) || r.status });
      return;
    }
  } catch {
    $("mail-status").textContent = i18n.t("join.unreachable");
    return;
  }
  $("mail-status").textContent = withdraw ? i18n.t("mail.off") : i18n.t("mail.on", { email });
  $("mail-off").hidden = withdraw;
}

// startCalls wires the mail form and the first gesture that unlocks the
// tone.
function startCalls() {
  for (const ev of ["pointerdown", "keydown"]) document.addEventListener(ev, unlockAudio, { once: true });
  $("mail-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    leaveAddress(false);
  });
  $("mail-off").addEventListener("click", () => leaveAddress(true));
}
