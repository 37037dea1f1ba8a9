#!/usr/bin/env python3
"""Check a waitq chain draw, and a visitor's receipt, with Python 3's standard library alone.

The same checks as `waitq-verify` (docs/api.md, "Ticket drops"), written apart from the Go code:

  * the revealed seed hashes to the commitment published when the drop was scheduled;
  * the published entries (ascending, unique) hash to the entry root published at the opening:
      leaf  = sha256(0x00 || eventId || 0x00 || entry)
      node  = sha256(0x01 || left || right), a level's last node without a sibling promoted as it is
      empty = sha256(0x02 || eventId)
  * the effective seed = HMAC-SHA256(key = seed, "waitq-draw-chain-v1" || 0x00 || root || publicValue)
    (publicValue empty when the draw says publicValueMissed: none was supplied by the deadline);
  * every number = the first 52 bits of HMAC-SHA256(key = effective seed, entry), big-endian;
  * the order = entries by ascending number, equal numbers by entry bytes;
  * with --receipt: entry = sha256(salt || userId), its Merkle path leads to the root, and its number
    and place (1 + the entries before it in that order) are the draw's.

Usage:
  verify-draw.py draw.json                       # GET /v1/events/{eventId}/draw, saved
  verify-draw.py draw.json --receipt receipt.json
  curl -s $API/v1/events/sale/draw | verify-draw.py -

Exit status: 0 verified, 1 it does not verify, 2 bad usage or input.
"""

import argparse
import hashlib
import hmac
import json
import sys

LABEL = b"waitq-draw-chain-v1"


class Mismatch(Exception):
    """The draw or the receipt does not verify."""


def sha256(*parts):
    h = hashlib.sha256()
    for p in parts:
        h.update(p)
    return h.digest()


def unhex(s, size=None, what="value"):
    try:
        b = bytes.fromhex(s)
    except (TypeError, ValueError):
        raise ValueError("%s is not hex: %.80r" % (what, s))
    if size is not None and len(b) != size:
        raise ValueError("%s is %d hex digits, not %d" % (what, 2 * size, 2 * len(b)))
    return b


def leaf(event_id, entry):
    return sha256(b"\x00", event_id.encode(), b"\x00", entry)


def merkle_root(event_id, entries):
    if not entries:
        return sha256(b"\x02", event_id.encode())
    level = [leaf(event_id, e) for e in entries]
    while len(level) > 1:
        nxt = []
        for i in range(0, len(level), 2):
            if i + 1 < len(level):
                nxt.append(sha256(b"\x01", level[i], level[i + 1]))
            else:
                nxt.append(level[i])
        level = nxt
    return level[0]


def number(effective, entry):
    mac = hmac.new(effective, entry, hashlib.sha256).digest()
    return int.from_bytes(mac[:8], "big") >> 12


def check_chain(c):
    """Check the whole chain; return (entries, numbers) as bytes and ints."""
    seed = unhex(c["seed"], 32, "the seed")
    if hashlib.sha256(seed).hexdigest() != c["commitment"].strip().lower():
        raise Mismatch("the seed does not match the commitment")
    entries = [unhex(e, 32, "an entry") for e in c["entries"]]
    if any(entries[i] >= entries[i + 1] for i in range(len(entries) - 1)):
        raise Mismatch("the published entries are not in ascending order, or one is listed twice")
    if len(entries) != c["entryCount"] or len(c["numbers"]) != len(entries):
        raise Mismatch("%d entries and %d numbers for an entry count of %d" % (len(entries), len(c["numbers"]), c["entryCount"]))
    root = merkle_root(c["eventId"], entries)
    if root.hex() != c["entryRoot"]:
        raise Mismatch("the published entries do not hash to the published entry root")
    value = unhex(c["publicValue"], None, "the public value")
    if not value and not c.get("publicValueMissed"):
        raise Mismatch("the public value is empty, and the draw does not say it was missed")
    effective = hmac.new(seed, LABEL + b"\x00" + root + value, hashlib.sha256).digest()
    numbers = [number(effective, e) for e in entries]
    if numbers != c["numbers"]:
        i = next(i for i, (a, b) in enumerate(zip(numbers, c["numbers"])) if a != b)
        raise Mismatch("the published number of entry %s is not its number under the effective seed" % entries[i].hex())
    order = [e.hex() for _, e in sorted(zip(numbers, entries))]
    for i, (got, want) in enumerate(zip(c["order"] + [""] * len(order), order + [""] * len(c["order"]))):
        if got != want:
            raise Mismatch("place %d is %r in the published order but %r in the draw" % (i + 1, got, want))
    return entries, numbers


def check_receipt(c, r, entries, numbers):
    if r["eventId"] != c["eventId"]:
        raise Mismatch("the receipt is of another event: %r, not %r" % (r["eventId"], c["eventId"]))
    salt = unhex(r["salt"], 32, "the salt")
    entry = sha256(salt, r["userId"].encode())
    if entry.hex() != r["entry"]:
        raise Mismatch("the receipt's entry is not sha256(salt || userId)")
    h = leaf(c["eventId"], entry)
    for step in r["path"]:
        sib = unhex(step["hash"], 32, "a path step")
        if step["side"] == "left":
            h = sha256(b"\x01", sib, h)
        elif step["side"] == "right":
            h = sha256(b"\x01", h, sib)
        else:
            raise ValueError("a path step's side is left or right, not %r" % step["side"])
    if h.hex() != c["entryRoot"]:
        raise Mismatch("the entry's Merkle path does not lead to the published entry root (a forged receipt, or one of another event)")
    try:
        n = numbers[entries.index(entry)]
    except ValueError:
        raise Mismatch("the receipt's entry is not among the published entries")
    place = 1 + sum(1 for m, e in zip(numbers, entries) if (m, e) < (n, entry))
    if r["number"] != n or r["place"] != place:
        raise Mismatch("the receipt's number or place is not the draw's (number %d, place %d)" % (n, place))
    return n, place


def main(argv):
    ap = argparse.ArgumentParser(description="Check a waitq chain draw and, optionally, a receipt.")
    ap.add_argument("draw", help="the chain draw as JSON (GET /v1/events/{eventId}/draw), '-' for stdin")
    ap.add_argument("--receipt", help="a visitor's receipt as JSON (GET /v1/events/{eventId}/draw/receipt)")
    ap.add_argument("-q", action="store_true", help="print only the verdict")
    a = ap.parse_args(argv)
    try:
        with (sys.stdin if a.draw == "-" else open(a.draw)) as f:
            c = json.load(f)
        r = None
        if a.receipt:
            with open(a.receipt) as f:
                r = json.load(f)
        entries, numbers = check_chain(c)
        if not a.q and r is None:
            for i, e in enumerate(c["order"]):
                print("%d\t%s" % (i + 1, e))
        print("ok: the chain draw of %s verifies: %d entries under root %s" % (c["eventId"], len(entries), c["entryRoot"]))
        if r is not None:
            n, place = check_receipt(c, r, entries, numbers)
            print("ok: the receipt of %s verifies: number %d, place %d of %d" % (r["userId"], n, place, len(entries)))
    except Mismatch as e:
        print("verify-draw: the draw does not verify: %s" % e, file=sys.stderr)
        return 1
    except (OSError, ValueError, KeyError, TypeError) as e:
        print("verify-draw: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
