// A drop's draw on the waiting room page (app.js holds the page's state):
// which kind of draw it is, and for a chain draw the visitor's receipt,
// checked in this browser with its own SHA-256 and HMAC (SubtleCrypto)
// from the public draw: the rule of docs/api.md, "The chain draw", written
// again here so that the page trusts nothing the service computed.
"use strict";

const chain = { shown: false, watch: null };

// drawKind shows which kind of draw d (the public event's draw) is and,
// for a chain draw, its receipt once made; until then it reads the event
// again every few seconds.
function drawKind(d) {
  const src = d.publicSource ? d.publicSource.name : "";
  $("draw-kind").textContent = i18n.t(d.kind === "chain" ? "draw.kindChain" : "draw.kindClassic", { source: src });
  if (d.kind !== "chain") return;
  if (!d.drawnAt) {
    if (d.entryRoot) $("draw-explain").textContent = i18n.t("draw.waitingValue", { source: src, count: d.entryCount });
    if (!chain.watch) chain.watch = setInterval(watchChain, 5000);
    return;
  }
  clearInterval(chain.watch);
  chain.watch = null;
  showReceipt();
}

async function watchChain() {
  if (Date.now() + skew < opensAt) return; // nothing to see before the opening
  const s = saved();
  const e = s && await readEvent(s.event);
  if (e && e.draw) drawKind(e.draw);
}

// producerGet reads a producer-api route's JSON, or null.
async function producerGet(path) {
  try {
    const r = await fetch(`${config.producerUrl}${path}`);
    return r.ok ? await r.json() : null;
  } catch { return null; }
}

function receiptPath(s) {
  return `/v1/events/${encodeURIComponent(s.event)}/draw/receipt?ticket=${encodeURIComponent(s.ticket)}`;
}

async function showReceipt() {
  const s = saved();
  if (chain.shown || !s) return;
  const r = await producerGet(receiptPath(s));
  if (!r) return;
  chain.shown = true;
  $("receipt-number").textContent = String(r.number);
  $("receipt-place").textContent = i18n.num(r.place);
  $("receipt").hidden = false;
}

// publicDraw reads what the check needs of event ev's made chain draw:
// the public event's draw (seed, commitment, value, root, count) and the
// draw numbers in compact form (GET …/draw/numbers: ascending, 7 bytes
// big-endian each, ~0.7 MB at 100,000 entries), or null.
async function publicDraw(ev) {
  const path = `/v1/events/${encodeURIComponent(ev)}`;
  try {
    const [e, r] = await Promise.all([readEvent(ev), fetch(`${config.producerUrl}${path}/draw/numbers`)]);
    if (!e || !e.draw || !r.ok) return null;
    const v = new DataView(await r.arrayBuffer());
    const numbers = new Array(Math.floor(v.byteLength / 7));
    let whole = v.byteLength % 7 === 0; // whole numbers, ascending
    for (let i = 0; i < numbers.length; i++) {
      numbers[i] = v.getUint8(7 * i) * 2 ** 48 + v.getUint16(7 * i + 1) * 2 ** 32 + v.getUint32(7 * i + 3);
      if (i > 0 && numbers[i] < numbers[i - 1]) whole = false;
    }
    return { ...e.draw, eventId: e.eventId, numbers, whole };
  } catch { return null; }
}

// checkReceipt fetches the receipt and the public draw and checks one
// against the other.
async function checkReceipt() {
  const s = saved();
  if (!s) return;
  $("receipt-result").textContent = i18n.t("receipt.checking");
  const [r, c] = await Promise.all([producerGet(receiptPath(s)), publicDraw(s.event)]);
  if (!r || !c) {
    $("receipt-result").textContent = i18n.t("receipt.unavailable");
    return;
  }
  const v = await verifyReceipt(c, r);
  $("receipt-result").dataset.ok = String(v.ok);
  $("receipt-result").textContent = v.ok
    ? i18n.t("receipt.ok", { number: String(v.number), place: v.place, count: c.entryCount })
    : i18n.t("receipt.failed", { reason: i18n.t(`receipt.why.${v.why}`) });
}

const hexOf = (b) => Array.from(new Uint8Array(b), (x) => x.toString(16).padStart(2, "0")).join("");
const bytesOf = (h) => new Uint8Array((h.match(/../g) || []).map((x) => parseInt(x, 16)));
const utf8 = (s) => new TextEncoder().encode(s);

function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let i = 0;
  for (const p of parts) { out.set(p, i); i += p.length; }
  return out;
}

async function sha256(...parts) {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", concat(...parts)));
}

async function hmac(key, msg) {
  const k = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", k, msg));
}

// verifyReceipt checks receipt r against the chain draw c (publicDraw):
// {ok, number, place}, or {ok: false, why} naming the first check that
// failed. The place is one more than the count of published numbers below
// the visitor's; equal numbers (about one pair in a million draws of
// 100,000) are ordered by entry bytes, which the compact form does not
// carry: then any place among them passes here, and waitq-verify on the
// whole draw tells them apart.
async function verifyReceipt(c, r) {
  if (r.eventId !== c.eventId) return { ok: false, why: "otherEvent" };
  const entry = await sha256(bytesOf(r.salt), utf8(r.userId));
  if (hexOf(entry) !== r.entry) return { ok: false, why: "entry" };
  let h = await sha256(new Uint8Array([0]), utf8(c.eventId), new Uint8Array([0]), entry);
  for (const step of r.path || []) {
    const sib = bytesOf(step.hash);
    h = step.side === "left" ? await sha256(new Uint8Array([1]), sib, h) : await sha256(new Uint8Array([1]), h, sib);
  }
  if (hexOf(h) !== c.entryRoot) return { ok: false, why: "path" };
  const seed = bytesOf(c.seed);
  if (hexOf(await sha256(seed)) !== c.commitment) return { ok: false, why: "commitment" };
  const eff = await hmac(seed, concat(utf8("waitq-draw-chain-v1"), new Uint8Array([0]), bytesOf(c.entryRoot), bytesOf(c.publicValue || "")));
  const mac = await hmac(eff, entry);
  let n = 0n;
  for (const b of mac.slice(0, 8)) n = (n << 8n) | BigInt(b);
  const number = Number(n >> 12n);
  const below = countBelow(c.numbers, number), upTo = countBelow(c.numbers, number + 1);
  if (!c.whole || c.numbers.length !== c.entryCount || upTo === below || r.number !== number) return { ok: false, why: "number" };
  if (!(r.place > below && r.place <= upTo)) return { ok: false, why: "place" };
  return { ok: true, number, place: r.place };
}

// countBelow counts the numbers of ascending list a below x.
function countBelow(a, x) {
  let lo = 0, hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (a[mid] < x) lo = mid + 1; else hi = mid;
  }
  return lo;
}
