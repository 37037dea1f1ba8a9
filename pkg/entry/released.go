package entry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrReleased: the token verifies but its slot was given back before its
// stay ended; the gateway lists its jti (ReleasedSource).
var ErrReleased = errors.New("entry: the token's slot was released")

// DefaultReleasedInterval is how often a guard polls the gateway's list of
// released admissions: a released token is refused within about that long.
const DefaultReleasedInterval = 2 * time.Second

// ReleasedURL returns the address of eventID's released admissions on the
// gateway at gatewayURL (its base URL, such as https://queue.example.com).
func ReleasedURL(gatewayURL, eventID string) string {
	return strings.TrimRight(gatewayURL, "/") + "/v1/events/" + url.PathEscape(eventID) + "/released"
}

// ReleasedSource holds the jtis of an event's released admissions whose
// tokens have not expired, as the gateway lists them (GET
// /v1/events/{eventId}/released), and keeps them current (Run): a Guard
// given one refuses those tokens (ErrReleased), though they verify offline.
// A failed fetch keeps the last list. A ReleasedSource is safe for
// concurrent use; Released takes no lock.
type ReleasedSource struct {
	url    string
	client *http.Client
	cur    atomic.Pointer[map[string]struct{}]
	mu     sync.Mutex // one fetch at a time
}

// NewReleasedSource returns a source of the list at url (ReleasedURL),
// fetched with client (nil: a client with DefaultFetchTimeout). It fetches
// nothing until Refresh or Run.
func NewReleasedSource(url string, client *http.Client) *ReleasedSource {
	if client == nil {
		client = &http.Client{Timeout: DefaultFetchTimeout}
	}
	return &ReleasedSource{url: url, client: client}
}

// releasedList is the gateway's answer.
type releasedList struct {
	Released []struct {
		JTI string `json:"jti"`
	} `json:"released"`
}

// Refresh fetches the list now; it keeps the last one when that fails.
func (s *ReleasedSource) Refresh(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, DefaultFetchTimeout)
	defer cancel()
	b, err := fetch(ctx, s.client, s.url, "released admissions", 16<<20)
	if err != nil {
		return err
	}
	var l releasedList
	if err := json.Unmarshal(b, &l); err != nil {
		return fmt.Errorf("entry: fetch released admissions: %w", err)
	}
	m := make(map[string]struct{}, len(l.Released))
	for _, r := range l.Released {
		m[r.JTI] = struct{}{}
	}
	s.cur.Store(&m)
	return nil
}

// Run refreshes the list every interval (0: DefaultReleasedInterval) until
// ctx ends; failures keep the last list and are reported to onErr when it
// is not nil.
func (s *ReleasedSource) Run(ctx context.Context, every time.Duration, onErr func(error)) {
	if every <= 0 {
		every = DefaultReleasedInterval
	}
	poll(ctx, every, s.Loaded, s.Refresh, onErr)
}

// Loaded reports whether a list was ever fetched.
func (s *ReleasedSource) Loaded() bool { return s.cur.Load() != nil }

// Released reports whether the list holds jti (a token's ID).
func (s *ReleasedSource) Released(jti string) bool {
	m := s.cur.Load()
	if m == nil || jti == "" {
		return false
	}
	_, ok := (*m)[jti]
	return ok
}
