package entry_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/waitq/waitq/pkg/entry"
)

// A protected service checks the entry token a customer presents when
// ordering, offline, with the keys it fetched once from the gateway.
func Example() {
	// The gateway's side, here in-process: a keyring and its JWKS endpoint.
	gw, _ := entry.NewKeyring("2026-11", make([]byte, 32), nil)
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(gw.JWKS()) }))
	defer jwks.Close()
	token := gw.Sign(entry.Token{EventID: "sale1", UserID: "alice", Expires: time.Now().Add(time.Minute).UnixMilli()})

	// The protected service's side.
	keys, err := entry.FetchJWKS(context.Background(), http.DefaultClient, jwks.URL+"/.well-known/jwks.json")
	if err != nil {
		panic(err)
	}
	t, err := keys.Verify(token, "sale1", time.Now())
	fmt.Println(t.UserID, err)
	_, err = keys.Verify(token, "other-sale", time.Now())
	fmt.Println(err)
	// Output:
	// alice <nil>
	// entry: token is for another event
}
