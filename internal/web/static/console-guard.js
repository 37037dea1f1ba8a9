// The settings a guard needs to report an event's health, in its admission
// panel (console-admission.js): the report token, waitq-guard's variables,
// copying them, and replacing the token.
"use strict";

// makeGuard builds an event's guard settings: its report token and the
// variables waitq-guard needs to report the shop's health, with copy
// buttons and the token's replacement.
function makeGuard(p) {
  const root = el("details", undefined, "guard");
  root.append(el("summary", i18n.t("c.guard.summary")));
  root.append(el("p", i18n.t("c.guard.help"), "muted"));
  const tokenCode = el("code", "", "hash report-token");
  tokenCode.id = `token-${p.id}`;
  const tokenLabel = el("div", i18n.t("c.guard.token"));
  const env = el("pre", "", "guard-env");
  env.id = `guard-env-${p.id}`;
  const envLabel = el("div", i18n.t("c.guard.env"));
  const status = el("p", "", "guard-status");
  status.setAttribute("role", "status");
  const button = (text, cls, fn) => {
    const b = el("button", text, `secondary ${cls}`);
    b.type = "button";
    b.addEventListener("click", fn);
    return b;
  };
  const copyToken = button(i18n.t("c.guard.copyToken"), "copy-token", () => copy(tokenCode, status));
  const copyEnv = button(i18n.t("c.guard.copyEnv"), "copy-settings", () => copy(env, status));
  const rotate = button(i18n.t("c.guard.rotate"), "rotate-token", () => rotateToken(p.id, status));
  root.append(tokenLabel, tokenCode, copyToken, envLabel, env, spans("div", [copyEnv, " ", rotate], "buttons"), status);
  return { root, tokenCode, env, status };
}

function updateGuard(p, e) {
  const url = config.producerUrl || location.origin;
  const sig = `${e.reportToken}\n${url}`;
  if (sig === p.tokenSig) return;
  p.tokenSig = sig;
  p.guard.tokenCode.textContent = e.reportToken || "";
  p.guard.env.textContent = `WAITQ_EVENT_ID=${e.eventId}\nWAITQ_HEALTH_URL=${url}\nWAITQ_HEALTH_TOKEN=${e.reportToken || ""}`;
}

// copy puts the text of element src on the clipboard; where the browser
// does not allow it (a page on plain http) it selects the text for the
// person to copy.
async function copy(src, status) {
  const text = src.textContent;
  try {
    await navigator.clipboard.writeText(text);
    say(status, i18n.t("c.guard.copied"));
    return;
  } catch { /* no clipboard API here: select it */ }
  const range = document.createRange();
  range.selectNodeContents(src);
  const sel = window.getSelection();
  sel.removeAllRanges();
  sel.addRange(range);
  let done = false;
  try { done = document.execCommand("copy"); } catch { /* selected at least */ }
  say(status, i18n.t(done ? "c.guard.copied" : "c.guard.selected"));
}

// newReportToken returns 32 random bytes in base64url, as producer-api
// makes them.
function newReportToken() {
  const b = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...b)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

async function rotateToken(id, status) {
  if (!confirm(i18n.t("c.guard.ask", { event: id }))) return;
  const { ok, message } = await putEvent(id, { reportToken: newReportToken() });
  say(status, ok ? i18n.t("c.guard.rotated") : message, !ok);
  refresh();
}
