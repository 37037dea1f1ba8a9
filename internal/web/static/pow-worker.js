// waitq proof-of-work solver: a dedicated Web Worker, no libraries.
//
// Post it {challenge: "c1.<payload>.<mac>"} (optionally batch: nonces hashed
// at once, 512 by default). It reads the difficulty from the challenge (byte
// 1 of the base64url payload; the scheme is in Go package
// internal/challenge, doc.go), then tries nonces 0, 1, 2, ... until
// SHA-256(challenge + ":" + nonce) starts with that many zero bits, hashing
// a batch of nonces at once with SubtleCrypto (its digests run in parallel
// off the worker's thread, which is where the throughput comes from). It
// answers:
//   {type: "progress", tried, expected}  about every 100 ms (expected is
//                                        2^difficulty, the mean work)
//   {type: "solved", solution, tried, ms} once: solution is the nonce in
//                                        decimal, the same one Go's
//                                        challenge.Solve finds
//   {type: "error", message}             for a malformed challenge or a
//                                        browser without SubtleCrypto
//                                        (an insecure http origin)
"use strict";

const progressMs = 100;

// parse returns the difficulty of a challenge, checking its shape as Go's
// challenge.Parse does, less the canonical-encoding rule (only the server
// can check the MAC, and it refuses what is not canonical).
function parse(challenge) {
  if (typeof challenge !== "string") throw new Error("challenge must be a string");
  const parts = challenge.split(".");
  if (parts.length !== 3 || parts[0] !== "c1" || parts[2].length !== 22 || !/^[A-Za-z0-9_-]+$/.test(parts[1] + parts[2])) {
    throw new Error("malformed challenge");
  }
  const b64 = parts[1].replace(/-/g, "+").replace(/_/g, "/");
  let bin;
  try {
    bin = atob(b64 + "===".slice((b64.length + 3) % 4));
  } catch {
    throw new Error("malformed challenge payload");
  }
  // Record: key id, difficulty, expiresAt (8), salt (16), E, event id, S, subject.
  const e = bin.length > 26 ? bin.charCodeAt(26) : 0;
  const s = bin.length > 27 + e ? bin.charCodeAt(27 + e) : 0;
  const difficulty = bin.length > 1 ? bin.charCodeAt(1) : 0;
  if (e === 0 || s === 0 || bin.length !== 28 + e + s || difficulty === 0) {
    throw new Error("malformed challenge record");
  }
  return difficulty;
}

// zeroBits reports whether the digest starts with at least bits zero bits.
function zeroBits(digest, bits) {
  const d = new Uint8Array(digest);
  let i = 0;
  for (; bits >= 8; bits -= 8, i++) {
    if (d[i] !== 0) return false;
  }
  return bits === 0 || d[i] >> (8 - bits) === 0;
}

// input is the bytes of prefix followed by the decimal digits of n.
function input(prefix, n) {
  const digits = String(n);
  const b = new Uint8Array(prefix.length + digits.length);
  b.set(prefix);
  for (let i = 0; i < digits.length; i++) b[prefix.length + i] = digits.charCodeAt(i);
  return b;
}

async function solve(challenge, batch) {
  const difficulty = parse(challenge);
  if (!self.crypto || !self.crypto.subtle) throw new Error("SubtleCrypto is not available (the page must be served over https)");
  const prefix = new TextEncoder().encode(challenge + ":");
  const expected = 2 ** difficulty;
  const start = performance.now();
  let last = start;
  for (let n = 0; ; n += batch) {
    const digests = [];
    for (let k = 0; k < batch; k++) digests.push(crypto.subtle.digest("SHA-256", input(prefix, n + k)));
    const done = await Promise.all(digests);
    for (let k = 0; k < batch; k++) {
      if (zeroBits(done[k], difficulty)) {
        postMessage({ type: "solved", solution: String(n + k), tried: n + k + 1, ms: Math.round(performance.now() - start) });
        return;
      }
    }
    const now = performance.now();
    if (now - last >= progressMs) {
      last = now;
      postMessage({ type: "progress", tried: n + batch, expected });
    }
  }
}

onmessage = ({ data }) => {
  const { challenge, batch } = data || {};
  const size = Number.isInteger(batch) && batch > 0 && batch <= 65536 ? batch : 512;
  solve(challenge, size).catch((err) => postMessage({ type: "error", message: String((err && err.message) || err) }));
};
