package queue

import "context"

// Seat holds: an admitted buyer holds an item (a seat) of the event while
// they decide, so that two buyers never book the same one. A hold lasts
// while its buyer holds their slot: it ends with the slot (released or
// expired) unless confirmed, and a confirmed item is sold for good.

// DefaultMaxItemsPerUser is how many items one user may hold or buy in an
// event whose maxItemsPerUser is 0 (unset).
const DefaultMaxItemsPerUser = 1

// MaxItemsPerUser bounds an event's maxItemsPerUser.
const MaxItemsPerUser = 100

// MaxItemIDLen bounds an item id.
const MaxItemIDLen = MaxUserIDLen

// ValidItemID reports whether id is a valid item id: the rules of user ids,
// 1–128 characters of [A-Za-z0-9._:@-].
func ValidItemID(id string) bool { return ValidUserID(id) }

// CheckItemID returns nil for a valid item id, else invalid_item.
func CheckItemID(id string) error {
	if !ValidItemID(id) {
		return Errorf(CodeInvalidItem, "item id must be 1-%d characters of [A-Za-z0-9._:@-]", MaxItemIDLen)
	}
	return nil
}

// Hold is an item held for a user until ExpiresAt (unix ms): the end of the
// buyer's slot when the hold was taken.
type Hold struct {
	EventID   string `json:"eventId"`
	Item      string `json:"item"`
	UserID    string `json:"userId"`
	ExpiresAt int64  `json:"expiresAt"`
}

// HoldResult is what a hold did.
type HoldResult struct {
	Hold
	// Created is false when the user held the item already (the same hold).
	Created bool
	// Replaced is true when the item's previous hold, another user's, had
	// ended with their slot and was still stored (its buyer not yet
	// expired): it ended unconfirmed, counted as expired here.
	Replaced bool
}

// ItemHold is the state of one item: free, held until ExpiresAt (unix ms)
// by UserID, or sold to UserID.
type ItemHold struct {
	EventID   string    `json:"eventId"`
	Item      string    `json:"item"`
	State     ItemState `json:"state"`
	ExpiresAt int64     `json:"expiresAt,omitempty"`
	UserID    string    `json:"userId,omitempty"`
}

// Sale is an item sold to a user: it is never held again.
type Sale struct {
	EventID string `json:"eventId"`
	Item    string `json:"item"`
	UserID  string `json:"userId"`
}

// ItemState is what a seat map shows of one item.
type ItemState string

// The states of an item.
const (
	ItemFree ItemState = "free"
	ItemHeld ItemState = "held"
	ItemSold ItemState = "sold"
)

// The refusals of a hold, release or confirm.
var (
	ErrItemHeld  = &Error{Code: CodeItemHeld, Message: "another buyer holds this item"}
	ErrHoldLimit = &Error{Code: CodeHoldLimit, Message: "you already hold as many items as this event allows"}
	ErrItemSold  = &Error{Code: CodeItemSold, Message: "this item is sold"}
	ErrNotHolder = &Error{Code: CodeNotHolder, Message: "you do not hold this item"}
	// ErrNoSlot answers a hold or confirm by a user who holds no slot
	// (released, expired, or never admitted).
	ErrNoSlot = &Error{Code: CodeInvalidTicket, Message: "the entry token's slot was released or its hold ended"}
)

// HoldStore keeps the event's holds and sales: what ws-gateway's hold
// routes need. Each call is one atomic step; through package recording,
// holds, releases and sales are recorded in the event's log before the call
// returns.
type HoldStore interface {
	// Hold holds item for userID, who must hold an unexpired slot
	// (ErrNoSlot). Refusals: ErrItemHeld, ErrHoldLimit, ErrItemSold;
	// ErrEventNotFound; ErrRebuilding.
	Hold(ctx context.Context, eventID, userID, item string, nowMs int64) (HoldResult, error)
	// Unhold gives item back if userID holds it, in one compare-and-delete,
	// and reports whether a hold was removed. ErrNotHolder when another
	// user holds it or it is sold; an item nobody holds is no error.
	Unhold(ctx context.Context, eventID, userID, item string, nowMs int64) (bool, error)
	// Confirm sells item to userID, who must hold it and their slot
	// (ErrNotHolder, ErrNoSlot); confirming again is no error (fresh is
	// false). ErrItemSold when it was sold to another.
	Confirm(ctx context.Context, eventID, userID, item string, nowMs int64) (s Sale, fresh bool, err error)
	// Unsell undoes item's sale: the item is free again and leaves its
	// buyer's items. ok is false when it was not sold (nothing changed);
	// ErrEventNotFound; ErrRebuilding.
	Unsell(ctx context.Context, eventID, item string, nowMs int64) (s Sale, ok bool, err error)
	// Items reads the state of the event's items that are held or sold at
	// nowMs; items absent are free.
	Items(ctx context.Context, eventID string, nowMs int64) (map[string]ItemState, error)
	// Item reads the state of one item at nowMs: who holds it and until
	// when, who bought it, or free; ErrEventNotFound.
	Item(ctx context.Context, eventID, item string, nowMs int64) (ItemHold, error)
}

// CheckShopToken reports whether t can be an event's shop token (the
// rules of report tokens), as an invalid_config error.
func CheckShopToken(t string) error {
	if len(t) < MinReportTokenLength || len(t) > MaxReportTokenLength || !reportTokenRE.MatchString(t) {
		return Errorf(CodeInvalidConfig, "shopToken must be %d to %d letters, digits, - or _", MinReportTokenLength, MaxReportTokenLength)
	}
	return nil
}
