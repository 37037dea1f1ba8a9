package redisstore

import (
	"fmt"
	"strings"

	"github.com/waitq/waitq/internal/queue"
)

// The scripts' named numbers, declared once here for Go and Lua alike:
// scripts.go puts a line `local NAME = value` for each of scriptCodes ahead
// of every script, so a script answers `return NO_EVENT`, never a bare
// number, and Go compares the reply with the same constant.
// TestScriptsUseNamedCodes fails when a script writes a negative number
// literal or an upper-case name that is neither declared here nor a local
// of its own.
//
// Return codes are a script's whole reply, each with one meaning and a
// value of its own. Field values are numbers inside a list reply.
const (
	// codeOK: done (health.lua kept the report, delete_event.lua deleted
	// the event and left its tombstone).
	codeOK int64 = 1
	// codeNoEvent: the event has no configuration; nothing changed
	// (ingest.lua, tick.lua, health.lua, delete_event.lua).
	codeNoEvent int64 = -1
	// codeStaleDraw: the caller's draw commitment is not the event's; it
	// reads the seed again (ingest.lua).
	codeStaleDraw int64 = -2
	// codeRebuilding: the event is being rebuilt; nothing changed
	// (ingest.lua, release.lua, mark_recorded.lua, hold.lua, unhold.lua,
	// confirm.lua).
	codeRebuilding int64 = -3
	// codeTooManyReporters: a new reporter finds the event with the most
	// reporters, none stale (health.lua).
	codeTooManyReporters int64 = -4
	// codeSlotsInUse: someone holds a slot; nothing deleted
	// (delete_event.lua).
	codeSlotsInUse int64 = -5
	// codeTombstoned: the event has no configuration but its tombstone
	// stands: deleted, its log still to delete; nothing changed
	// (delete_event.lua).
	codeTombstoned int64 = -6
	// codeNoSlot: the user holds no recorded slot ending after now
	// (hold.lua, confirm.lua).
	codeNoSlot int64 = -7
	// codeItemHeld: another user holds the item live (hold.lua).
	codeItemHeld int64 = -8
	// codeHoldLimit: the user holds or bought maxItemsPerUser items
	// (hold.lua).
	codeHoldLimit int64 = -9
	// codeItemSold: the item is sold (hold.lua; confirm.lua: to another).
	codeItemSold int64 = -10
	// codeNotHolder: the caller does not hold the item (unhold.lua,
	// confirm.lua).
	codeNotHolder int64 = -11
	// codeResumeUsed: the resume link's nonce is spent (move.lua).
	codeResumeUsed int64 = -12
	// codePlaceChanged: the resume link's user no longer holds its place
	// (move.lua).
	codePlaceChanged int64 = -13
	// codeAlreadyQueued: the user a place would move to waits, is called
	// or holds a slot (move.lua).
	codeAlreadyQueued int64 = -14
	// codeNoPlace: the user neither waits nor is called (address.lua).
	codeNoPlace int64 = -15
	// codeAddressLimit: queue.MaxUsersPerAddress others left the address
	// (address.lua).
	codeAddressLimit int64 = -16
	// codePublicValueSet: the chain draw was made already (draw_make.lua).
	codePublicValueSet int64 = -17
	// codeDrawChanged: the pre-queue is not the one the caller read, or
	// the entries froze under another root (draw_freeze.lua,
	// draw_make.lua): the caller reads again.
	codeDrawChanged int64 = -18

	// valueNone: no such value in a field of status.lua's reply: not
	// waiting, never admitted, no drawn place, a fixed rate (queue.Place).
	valueNone int64 = -1
	// valueLast is the index of a list's or a sorted set's last element.
	valueLast int64 = -1
	// attachedBase + g is the presence (seen score) of a user whose socket
	// gateway g holds: above every time, exact in a float64 for every g
	// below queue.GatewayIDLimit.
	attachedBase int64 = 1 << 50
)

// scriptCode is one named number as Lua sees it.
type scriptCode struct {
	name     string // the Lua name
	value    int64
	returned bool // a return code (a whole reply), else a field value
}

// scriptCodes are every name the scripts may use besides their own locals.
var scriptCodes = []scriptCode{
	{"OK", codeOK, true},
	{"NO_EVENT", codeNoEvent, true},
	{"STALE_DRAW", codeStaleDraw, true},
	{"REBUILDING", codeRebuilding, true},
	{"TOO_MANY_REPORTERS", codeTooManyReporters, true},
	{"SLOTS_IN_USE", codeSlotsInUse, true},
	{"TOMBSTONED", codeTombstoned, true},
	{"NO_SLOT", codeNoSlot, true},
	{"ITEM_HELD", codeItemHeld, true},
	{"HOLD_LIMIT", codeHoldLimit, true},
	{"ITEM_SOLD", codeItemSold, true},
	{"NOT_HOLDER", codeNotHolder, true},
	{"NO_PLACE", codeNoPlace, true},
	{"ADDRESS_LIMIT", codeAddressLimit, true},
	{"NONE", valueNone, false},
	{"LAST", valueLast, false},
	{"ATTACHED_BASE", attachedBase, false},
	{"TURN_NONE", queue.TurnNone, false},
	{"TURN_LAPSED", queue.TurnLapsed, false},
	{"TURN_MOVED", queue.TurnMoved, false},
	{"RESUME_USED", codeResumeUsed, true},
	{"PLACE_CHANGED", codePlaceChanged, true},
	{"ALREADY_QUEUED", codeAlreadyQueued, true},
	{"DRAW_FREEZE_LAG_MS", queue.DrawFreezeLagMs, false},
	{"PUBLIC_VALUE_SET", codePublicValueSet, true},
	{"DRAW_CHANGED", codeDrawChanged, true},
}

// codesPrelude is the Lua put ahead of every script: one local per
// scriptCodes entry.
var codesPrelude = func() string {
	var b strings.Builder
	b.WriteString("-- the named numbers of codes.go\n")
	for _, c := range scriptCodes {
		fmt.Fprintf(&b, "local %s = %d\n", c.name, c.value)
	}
	return b.String()
}()
