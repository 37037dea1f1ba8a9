package test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitq/waitq/internal/queue"
	"github.com/waitq/waitq/internal/rebuild"
	"github.com/waitq/waitq/internal/redisstore"
	"github.com/waitq/waitq/internal/testkit/testenv"
	"github.com/waitq/waitq/internal/testkit/testsys"
	"github.com/waitq/waitq/pkg/entry"
)

// TestHoldRaceAcrossTwoGateways: 1,000 admitted buyers race for 100 seats
// through two ws-gateway processes sharing nothing but Redis: exactly 100
// holds are answered 201, to 100 users, one per seat; nobody holds more
// than maxItemsPerUser (1); a DELETE by a non-holder through the other
// gateway is refused and the holder keeps the seat. Every holder first
// tries to buy alone (confirm without the shop token: refused, nothing
// sold); then the shop confirms some, undoes one of those sales, and some
// holders release their slot: once the slots end the unconfirmed seats
// are free and the confirmed ones sold, also after Redis is emptied and
// the event rebuilt from its log.
func TestHoldRaceAcrossTwoGateways(t *testing.T) {
	const buyers, seats = 1000, 100
	sys := testsys.Start(t, testsys.Options{})
	ev := testenv.EventID(t)
	e := sys.CreateEvent(ev, buyers, 4)
	e.ShopToken = "holds-race-shop-token-0123456789"
	// The buyers join and are admitted by the fast track as their joins
	// are written, each admission recorded in the log, as is the
	// configuration.
	admitting := sys.Recorded(redisstore.Options{FastTrack: buyers}, sys.Pub)
	if _, err := admitting.PutEvent(t.Context(), e); err != nil {
		t.Fatal(err)
	}
	sys.StartConsumerInto(sys.ConsumerConfig(), admitting)
	base := time.Now().UnixMilli()
	var jw sync.WaitGroup
	for i := range buyers {
		jw.Go(func() { sys.Join(ev, fmt.Sprintf("b%04d", i), base+int64(i)) })
	}
	jw.Wait()
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		st, err := sys.Store.EventStatus(t.Context(), ev, time.Now().UnixMilli())
		return err == nil && st.Holders == buyers, fmt.Sprintf("%d admitted (%v)", st.Holders, err)
	})

	common := []string{"WAITQ_KAFKA_BROKERS=" + strings.Join(sys.Kafka.ListenAddrs(), ","), "WAITQ_REDIS_URL=" + sys.Redis.URL(), "WAITQ_TICKET_SECRET=" + ticketSecret,
		"WAITQ_HOLD_RATE=0"} // every buyer calls from this one address
	gws := []*proc{startProc(t, "ws-gateway", common...), startProc(t, "ws-gateway", common...)}
	keys, err := entry.DerivedKeyring(ticketSecret, nil)
	if err != nil {
		t.Fatal(err)
	}
	token := make([]string, buyers)
	for i := range buyers {
		hold, err := sys.Store.Client().ZScore(t.Context(), redisstore.HoldersKey(ev), fmt.Sprintf("b%04d", i)).Result()
		if err != nil {
			t.Fatal(err)
		}
		token[i] = keys.Sign(entry.Token{EventID: ev, UserID: fmt.Sprintf("b%04d", i), Expires: int64(hold), IssuedAt: time.Now().UnixMilli()})
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	call := func(gw *proc, method, path, body, bearer string) (int, []byte) {
		req, _ := http.NewRequest(method, gw.URL()+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Errorf("%s %s: %v", method, path, err)
			return 0, nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	holds := "/v1/events/" + ev + "/holds"
	hold := func(i, seat int) (int, []byte) {
		return call(gws[(i+seat)%2], "POST", holds, fmt.Sprintf(`{"token":%q,"item":"S%03d"}`, token[i], seat), "")
	}

	// The race: ten buyers per seat, through either gateway, 64 at a time;
	// a buyer refused tries two other seats; a winner then tries a free
	// item and must be refused for the limit.
	var mu sync.Mutex
	won := map[int]int{} // seat -> buyer answered 201
	holdsOf := map[int]int{}
	codes := map[string]int{}
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for i := range buyers {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			for _, seat := range []int{i % seats, (i*7 + 3) % seats, (i*13 + 5) % seats} {
				code, body := hold(i, seat)
				mu.Lock()
				codes[fmt.Sprint(code)]++
				if code == http.StatusCreated {
					if prev, ok := won[seat]; ok {
						t.Errorf("S%03d answered 201 to b%04d and b%04d", seat, prev, i)
					}
					won[seat] = i
					holdsOf[i]++
				}
				mu.Unlock()
				switch {
				case code == http.StatusCreated:
					// A second item, free, is refused for the limit.
					code, body := call(gws[(i+1)%2], "POST", holds, fmt.Sprintf(`{"token":%q,"item":"X%04d"}`, token[i], i), "")
					if code != http.StatusConflict || !strings.Contains(string(body), string(queue.CodeHoldLimit)) {
						t.Errorf("b%04d holding a second item: %d %s", i, code, body)
					}
					mu.Lock()
					codes["hold_limit"]++
					mu.Unlock()
					return
				case code == http.StatusConflict && strings.Contains(string(body), string(queue.CodeItemHeld)):
				default:
					t.Errorf("b%04d hold S%03d: %d %s", i, seat, code, body)
					return
				}
			}
		})
	}
	wg.Wait()
	t.Logf("answers: %v", codes)
	if len(won) != seats {
		t.Fatalf("%d seats held, want %d", len(won), seats)
	}
	for b, n := range holdsOf {
		if n > 1 {
			t.Errorf("b%04d holds %d seats", b, n)
		}
	}
	if codes["201"] != seats || codes["hold_limit"] != seats {
		t.Fatalf("201 answered %d times (want %d), hold_limit %d times", codes["201"], seats, codes["hold_limit"])
	}

	// A DELETE by a non-holder, through the other gateway, is refused.
	other := 0
	for holdsOf[other] > 0 {
		other++
	}
	if code, body := call(gws[1], "DELETE", holds+"/S000", "", token[other]); code != http.StatusForbidden || !strings.Contains(string(body), string(queue.CodeNotHolder)) {
		t.Fatalf("DELETE by a non-holder: %d %s", code, body)
	}
	seatMap := func(gw *proc) map[string]queue.ItemState {
		code, body := call(gw, "GET", holds, "", "")
		var m struct{ Items map[string]queue.ItemState }
		if err := json.Unmarshal(body, &m); code != 200 || err != nil {
			t.Fatalf("seat map: %d %s", code, body)
		}
		return m.Items
	}
	if m := seatMap(gws[0]); len(m) != seats || m["S000"] != queue.ItemHeld {
		t.Fatalf("seat map after the refused DELETE: %d seats, S000 %s", len(m), m["S000"])
	}

	// Every holder tries to buy alone, with their entry token as the only
	// credential: refused, nothing sold.
	for seat := range seats {
		b := won[seat]
		for _, bearer := range []string{"", token[b]} {
			if code, body := call(gws[seat%2], "POST", fmt.Sprintf("%s/S%03d/confirm", holds, seat), `{"token":"`+token[b]+`"}`, bearer); code != http.StatusUnauthorized {
				t.Fatalf("S%03d confirmed by its buyer alone: %d %s", seat, code, body)
			}
		}
	}
	if m := seatMap(gws[1]); len(m) != seats || m["S000"] != queue.ItemHeld {
		t.Fatalf("seat map after the buyers' own confirms: %v", m)
	}

	// Seats 0-29 are bought through the shop (S029's sale then undone by
	// it: free), 30-49 given up with the buyer's slot; the rest stay held
	// until the slots end.
	want := map[string]queue.ItemState{}
	for seat := range seats {
		b := won[seat]
		switch {
		case seat < 30:
			if code, body := call(gws[seat%2], "POST", fmt.Sprintf("%s/S%03d/confirm", holds, seat), `{"token":"`+token[b]+`"}`, e.ShopToken); code != 200 {
				t.Fatalf("confirm S%03d: %d %s", seat, code, body)
			}
			want[fmt.Sprintf("S%03d", seat)] = queue.ItemSold
			if seat == 29 {
				if code, body := call(gws[1-seat%2], "DELETE", fmt.Sprintf("%s/S%03d/sale", holds, seat), "", e.ShopToken); code != 200 {
					t.Fatalf("unsell S%03d: %d %s", seat, code, body)
				}
				delete(want, fmt.Sprintf("S%03d", seat))
			}
		case seat < 50:
			if code, body := call(gws[seat%2], "POST", "/v1/events/"+ev+"/release", `{"token":"`+token[b]+`"}`, ""); code != 200 {
				t.Fatalf("release b%04d: %d %s", b, code, body)
			}
		default:
			want[fmt.Sprintf("S%03d", seat)] = queue.ItemHeld
		}
	}
	if got := seatMap(gws[1]); !maps.Equal(got, want) {
		t.Fatalf("seat map: %v, want %v", got, want)
	}
	sold := map[string]queue.ItemState{}
	for item, s := range want {
		if s == queue.ItemSold {
			sold[item] = s
		}
	}
	afterSlots := time.Now().Add(61 * time.Second).UnixMilli()
	check := func(when string) {
		t.Helper()
		got, err := sys.Store.Items(context.Background(), ev, time.Now().UnixMilli())
		if err != nil || !maps.Equal(got, want) {
			t.Fatalf("%s: items %v %v, want %v", when, got, err, want)
		}
		if got, err := sys.Store.Items(context.Background(), ev, afterSlots); err != nil || !maps.Equal(got, sold) {
			t.Fatalf("%s, once the slots end: items %v %v, want the sold ones %v", when, got, err, sold)
		}
	}
	check("before the rebuild")

	if err := sys.Store.Client().FlushAll(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	rb := &rebuild.Rebuilder{Log: sys.Pub.Admin(), Store: sys.Store, Logger: testenv.Logger(t)}
	if _, err := rb.Rebuild(t.Context(), ev); err != nil {
		t.Fatal(err)
	}
	check("after a rebuild from the log")
	// And the gateways enforce the rebuilt holds.
	if code, body := hold(other, 60); code != http.StatusConflict {
		t.Fatalf("hold of a rebuilt hold by another buyer: %d %s", code, body)
	}
}
