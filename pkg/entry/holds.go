package entry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Holds is a client of ws-gateway's seat holds for one event: what a shop
// puts in front of its database so that two buyers never book the same
// item. Each call carries the buyer's entry token; the gateway holds,
// releases and sells in one atomic step each, across every gateway, and a
// hold ends with the buyer's slot unless confirmed. A sale (Confirm) and
// its undo (Unsell) also carry the shop's own credential, ShopToken. A
// Holds is safe for concurrent use.
type Holds struct {
	// GatewayURL is ws-gateway's base URL, such as https://queue.example.com.
	GatewayURL string
	// EventID is the event the items belong to.
	EventID string
	// ShopToken is the event's shop token (the admin API's shopToken): the
	// shop's credential for Confirm and Unsell, kept on the shop's servers,
	// never sent to a buyer.
	ShopToken string
	// Client makes the requests (nil: http.DefaultClient).
	Client *http.Client
}

// Hold is an item held for a buyer until ExpiresAt (unix ms), the end of
// their slot.
type Hold struct {
	EventID   string `json:"eventId"`
	Item      string `json:"item"`
	UserID    string `json:"userId"`
	ExpiresAt int64  `json:"expiresAt"`
}

// Sale is an item sold to a buyer.
type Sale struct {
	EventID string `json:"eventId"`
	Item    string `json:"item"`
	UserID  string `json:"userId"`
}

// ItemStatus is one item's state: State "held" until ExpiresAt (unix ms),
// "free" (never held, given back, or its holder's slot ended) or "sold".
// UserID, the holder or buyer, is set only when the call bore that user's
// own entry token.
type ItemStatus struct {
	EventID   string `json:"eventId"`
	Item      string `json:"item"`
	State     string `json:"state"`
	ExpiresAt int64  `json:"expiresAt,omitempty"`
	UserID    string `json:"userId,omitempty"`
}

// HoldError is the gateway's refusal of a hold call: its HTTP status and
// error code. errors.Is matches it against ErrItemHeld and the others by
// code.
type HoldError struct {
	Status  int
	Code    string
	Message string
}

// Error implements the error interface.
func (e *HoldError) Error() string {
	return fmt.Sprintf("entry: hold refused: %d %s: %s", e.Status, e.Code, e.Message)
}

// Is reports whether target is a *HoldError of the same code.
func (e *HoldError) Is(target error) bool {
	t, ok := target.(*HoldError)
	return ok && t.Code == e.Code
}

// The refusals of the hold calls (compare with errors.Is).
var (
	// ErrItemHeld: another buyer holds the item.
	ErrItemHeld = &HoldError{Status: http.StatusConflict, Code: "item_held"}
	// ErrHoldLimit: the buyer holds or bought as many items as the event
	// allows (maxItemsPerUser).
	ErrHoldLimit = &HoldError{Status: http.StatusConflict, Code: "hold_limit"}
	// ErrItemSold: the item is sold.
	ErrItemSold = &HoldError{Status: http.StatusConflict, Code: "item_sold"}
	// ErrNotHolder: the buyer does not hold the item.
	ErrNotHolder = &HoldError{Status: http.StatusForbidden, Code: "not_holder"}
	// ErrTokenRefused: the token does not verify for the event, or its
	// slot was released or ended.
	ErrTokenRefused = &HoldError{Status: http.StatusUnauthorized, Code: "invalid_ticket"}
	// ErrBadItem: the item id is not 1–128 characters of [A-Za-z0-9._:@-].
	ErrBadItem = &HoldError{Status: http.StatusBadRequest, Code: "invalid_item"}
	// ErrShopRefused: a sale or its undo without the event's shop token
	// (Holds.ShopToken missing or wrong).
	ErrShopRefused = &HoldError{Status: http.StatusUnauthorized, Code: "unauthorized"}
)

// Hold holds item for the token's buyer. created is false when they held
// it already (the same hold).
func (h *Holds) Hold(ctx context.Context, token, item string) (hold Hold, created bool, err error) {
	body, _ := json.Marshal(struct {
		Token string `json:"token"`
		Item  string `json:"item"`
	}{token, item}) // strings cannot fail to marshal
	status, err := h.do(ctx, http.MethodPost, "", body, "", &hold, http.StatusCreated, http.StatusOK)
	if err != nil {
		return Hold{}, false, fmt.Errorf("entry: hold %s in %s: %w", item, h.EventID, err)
	}
	return hold, status == http.StatusCreated, nil
}

// Release gives item back if the token's buyer holds it (an item nobody
// holds is no error); ErrNotHolder when another buyer holds it or it is
// sold.
func (h *Holds) Release(ctx context.Context, token, item string) error {
	if _, err := h.do(ctx, http.MethodDelete, "/"+url.PathEscape(item), nil, token, nil, http.StatusNoContent); err != nil {
		return fmt.Errorf("entry: release %s in %s: %w", item, h.EventID, err)
	}
	return nil
}

// Confirm sells item to the token's buyer, who holds it, with the shop's
// credential (ShopToken); confirming again is no error.
func (h *Holds) Confirm(ctx context.Context, token, item string) (Sale, error) {
	body, _ := json.Marshal(struct {
		Token string `json:"token"`
	}{token})
	var s Sale
	if _, err := h.do(ctx, http.MethodPost, "/"+url.PathEscape(item)+"/confirm", body, h.ShopToken, &s, http.StatusOK); err != nil {
		return Sale{}, fmt.Errorf("entry: confirm %s in %s: %w", item, h.EventID, err)
	}
	return s, nil
}

// Unsell undoes item's sale with the shop's credential (ShopToken), a
// payment that failed after the confirm, say: the item is free again.
// undone is false when it was not sold.
func (h *Holds) Unsell(ctx context.Context, item string) (s Sale, undone bool, err error) {
	status, err := h.do(ctx, http.MethodDelete, "/"+url.PathEscape(item)+"/sale", nil, h.ShopToken, &s, http.StatusOK, http.StatusNoContent)
	if err != nil {
		return Sale{}, false, fmt.Errorf("entry: unsell %s in %s: %w", item, h.EventID, err)
	}
	return s, status == http.StatusOK, nil
}

// Items returns the event's items held ("held") or sold ("sold"); the
// others are free.
func (h *Holds) Items(ctx context.Context) (map[string]string, error) {
	var r struct {
		Items map[string]string `json:"items"`
	}
	if _, err := h.do(ctx, http.MethodGet, "", nil, "", &r, http.StatusOK); err != nil {
		return nil, fmt.Errorf("entry: items of %s: %w", h.EventID, err)
	}
	return r.Items, nil
}

// Get returns item's state. token, an entry token or "" for none, is sent
// as a bearer: the gateway tells the holder's or buyer's user id only to
// that user's own token. ErrBadItem for an item id the gateway refuses.
func (h *Holds) Get(ctx context.Context, token, item string) (ItemStatus, error) {
	var st ItemStatus
	if _, err := h.do(ctx, http.MethodGet, "/"+url.PathEscape(item), nil, token, &st, http.StatusOK); err != nil {
		return ItemStatus{}, fmt.Errorf("entry: item %s of %s: %w", item, h.EventID, err)
	}
	return st, nil
}

// do sends one request to the holds route plus path and decodes an answer
// of one of the ok statuses into out (nil: none); any other answer is a
// *HoldError.
func (h *Holds) do(ctx context.Context, method, path string, body []byte, bearer string, out any, ok ...int) (int, error) {
	u := strings.TrimRight(h.GatewayURL, "/") + "/v1/events/" + url.PathEscape(h.EventID) + "/holds" + path
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, r)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	c := h.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, err
	}
	for _, s := range ok {
		if resp.StatusCode != s {
			continue
		}
		if out != nil && s != http.StatusNoContent {
			if err := json.Unmarshal(raw, out); err != nil {
				return s, fmt.Errorf("answer %q: %w", raw, err)
			}
		}
		return s, nil
	}
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	_ = json.Unmarshal(raw, &e)
	if e.Error.Code == "" {
		e.Error.Code, e.Error.Message = "unexpected", string(bytes.TrimSpace(raw))
	}
	return resp.StatusCode, &HoldError{Status: resp.StatusCode, Code: e.Error.Code, Message: e.Error.Message}
}
