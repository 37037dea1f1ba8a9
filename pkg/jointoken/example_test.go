package jointoken_test

import (
	"fmt"
	"time"

	"github.com/waitq/waitq/pkg/jointoken"
)

// The shop mints a join token for a signed-in customer and links to the
// waiting room with it; waitq verifies it with the same key registered
// under the same kid.
func ExampleMint() {
	key, err := jointoken.HMACKey("shop-2026", []byte("a secret of at least 32 bytes, random"))
	if err != nil {
		panic(err)
	}
	now := time.Now()
	token, err := jointoken.Mint(key, jointoken.Claims{
		Subject:  "customer-4711",           // the account: one account, one place
		EventID:  "presale",                 // the event it admits to
		Expiry:   now.Add(10 * time.Minute), // short: the link is followed at once
		IssuedAt: now,
		ID:       "b9c1e0f2-one-time", // optional: refused once a join used it
	})
	if err != nil {
		panic(err)
	}
	// The shop sends the visitor to
	// https://queue.example.com/?event=presale&joinToken=<token>.

	claims, err := jointoken.Verify(token, []jointoken.Key{key}, "presale", now)
	fmt.Println(claims.Subject, claims.EventID, claims.ID, err)
	// Output: customer-4711 presale b9c1e0f2-one-time <nil>
}
