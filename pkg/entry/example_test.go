package entry_test

import (
	"context"
	"fmt"
	"io"
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

// A Go site puts Guard in front of its handlers: visitors arrive from the
// waiting room with ?waitq_token=…, which moves into a cookie; everyone
// without a valid token is sent to the waiting room.
func ExampleGuard() {
	gw, _ := entry.NewKeyring("2026-11", make([]byte, 32), nil)
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(gw.JWKS()) }))
	defer jwks.Close()

	guard, err := entry.NewGuard(entry.GuardConfig{
		EventID:        "sale1",
		WaitingRoomURL: "https://queue.example.com/",
		Keys:           entry.NewKeySource(entry.KeySourceConfig{URL: jwks.URL + "/.well-known/jwks.json"}),
	})
	if err != nil {
		panic(err)
	}
	shop := guard.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, _, _ := entry.TokenFromContext(r.Context())
		fmt.Fprintf(w, "welcome %s", t.UserID)
	}))

	visit := func(target string, cookies ...*http.Cookie) *http.Response {
		req := httptest.NewRequest(http.MethodGet, target, nil)
		for _, c := range cookies {
			req.AddCookie(c)
		}
		rec := httptest.NewRecorder()
		shop.ServeHTTP(rec, req)
		return rec.Result()
	}
	resp := visit("https://shop.example.com/product/7")
	fmt.Println(resp.StatusCode, resp.Header.Get("Location"))

	token := gw.Sign(entry.Token{EventID: "sale1", UserID: "alice", Expires: time.Now().Add(time.Minute).UnixMilli()})
	resp = visit("https://shop.example.com/product/7?waitq_token=" + token)
	fmt.Println(resp.StatusCode, resp.Header.Get("Location"))

	resp = visit("https://shop.example.com/product/7", resp.Cookies()...)
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body))
	// Output:
	// 302 https://queue.example.com/?event=sale1&returnTo=https%3A%2F%2Fshop.example.com%2Fproduct%2F7
	// 302 /product/7
	// 200 welcome alice
}
