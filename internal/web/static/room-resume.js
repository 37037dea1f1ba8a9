// The waiting room's resume links (app.js starts the page): "Continue on
// another device" asks producer-api for a signed link to this place and
// shows it with a copy button and its QR code; a page opened with such a
// link (?resume=) moves the place to this browser before anything else,
// then watches it as a joined one; a page whose place moved away says so
// (docs/api.md, "Resume links"). Its strings are its own, added to
// i18n.js's catalogs.
"use strict";

i18n.extend({
  en: {
    "resume.offer": "Continue on another device",
    "resume.help": "Open this link or scan the code on your other device: your place moves there, and this page lets it go. The link works once.",
    "resume.label": "Link to your place",
    "resume.copy": "Copy link",
    "resume.copied": "Link copied.",
    "resume.until": "The link works until {time}.",
    "resume.qr": "QR code of the link to your place",
    "resume.failed": "No link could be made ({status}).",
    "resume.moving": "Moving your place to this device…",
    "resume.moved": "Your place moved to another device. Continue there; this page no longer holds a place.",
  },
  ko: {
    "resume.offer": "다른 기기에서 계속하기",
    "resume.help": "다른 기기에서 이 링크를 열거나 코드를 스캔하세요. 순서가 그 기기로 옮겨지고, 이 페이지에서는 사라집니다. 링크는 한 번만 쓸 수 있습니다.",
    "resume.label": "내 순서 링크",
    "resume.copy": "링크 복사",
    "resume.copied": "링크를 복사했습니다.",
    "resume.until": "링크는 {time}까지 쓸 수 있습니다.",
    "resume.qr": "내 순서 링크의 QR 코드",
    "resume.failed": "링크를 만들지 못했습니다 ({status}).",
    "resume.moving": "순서를 이 기기로 옮기는 중…",
    "resume.moved": "순서가 다른 기기로 옮겨졌습니다. 그 기기에서 계속하세요. 이 페이지에는 더 이상 순서가 없습니다.",
  },
  ja: {
    "resume.offer": "別の端末で続ける",
    "resume.help": "別の端末でこのリンクを開くか、コードを読み取ってください。順番がその端末に移り、このページからは外れます。リンクは一度だけ使えます。",
    "resume.label": "あなたの順番へのリンク",
    "resume.copy": "リンクをコピー",
    "resume.copied": "リンクをコピーしました。",
    "resume.until": "リンクは{time}まで使えます。",
    "resume.qr": "あなたの順番へのリンクのQRコード",
    "resume.failed": "リンクを作成できませんでした（{status}）。",
    "resume.moving": "順番をこの端末に移しています…",
    "resume.moved": "順番は別の端末に移りました。そちらで続けてください。このページにはもう順番はありません。",
  },
});

// offerResume fetches a link to this place and shows it, with its QR code
// (an SVG producer-api made, parsed as an image document: no markup of
// the page's is written from it).
async function offerResume() {
  $("resume-error").textContent = "";
  let res;
  try {
    res = await api(`/v1/events/${encodeURIComponent(eventId)}/resume-link`, { method: "POST" });
  } catch {
    res = { r: { ok: false, status: 0 }, body: {} };
  }
  const { r, body } = res;
  if (!r.ok) {
    $("resume-error").textContent = body.error ? body.error.message : i18n.t("resume.failed", { status: r.status || i18n.t("join.noAnswer") });
    return;
  }
  $("resume-url").value = new URL(body.url, location.href).href;
  const doc = new DOMParser().parseFromString(body.qrSvg || "", "image/svg+xml");
  const svg = doc.documentElement;
  $("resume-qr").replaceChildren();
  if (svg && svg.nodeName === "svg") {
    svg.setAttribute("aria-label", i18n.t("resume.qr"));
    $("resume-qr").append(document.importNode(svg, true));
  }
  $("resume-until").textContent = i18n.t("resume.until", { time: i18n.time(body.expiresAt) });
  $("resume-box").hidden = false;
}

async function copyResume() {
  $("resume-url").select();
  try { await navigator.clipboard.writeText($("resume-url").value); } catch { document.execCommand("copy"); }
  $("resume-error").textContent = i18n.t("resume.copied");
}

// resumeHere uses the link this page was opened with: as this browser's
// own identity (a visitor cookie made first, as a join's), the place moves
// here and is kept as a join's. It reports whether it did; else the error
// is shown with the join button.
async function resumeHere(token) {
  show("joining");
  $("join").hidden = true;
  $("join-error").textContent = i18n.t("resume.moving");
  try {
    if (!joinToken) {
      const id = await api("/v1/visitor", { method: "POST" });
      if (!id.r.ok) { failed(id.body, id.r.status); return false; }
    }
    const { r, body } = await api(`/v1/events/${encodeURIComponent(eventId)}/resume`, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ token }),
    });
    if (!r.ok) { failed(body, r.status); return false; }
    $("join-error").textContent = "";
    save({ event: eventId, user: body.userId, ticket: body.ticket, statusUrl: body.statusUrl, returnTo, joinToken });
    return true;
  } catch {
    failed({ error: { message: i18n.t("join.unreachable") } });
    return false;
  }
}

// movedAway ends this page's watch: its place moved to another device.
function movedAway() {
  finish();
  $("released").textContent = i18n.t("resume.moved");
}

function startResume() {
  $("resume-offer").addEventListener("click", offerResume);
  $("resume-copy").addEventListener("click", copyResume);
}
