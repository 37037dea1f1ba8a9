package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waitq/waitq/internal/testkit/testdraw"
	"github.com/waitq/waitq/pkg/draw"
)

func export(t *testing.T, n int) draw.Export {
	t.Helper()
	seed, err := draw.NewSeed()
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for i := range n {
		users = append(users, fmt.Sprintf("u%03d", i))
	}
	return draw.Export{EventID: "drop", OpensAt: 1, Commitment: seed.Commitment(), Seed: seed.Hex(), Users: users, Order: testdraw.Order(t, seed.Hex(), users)}
}

func runWith(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := run(context.Background(), args, strings.NewReader(stdin), &out, func(string) string { return "" })
	return out.String(), err
}

func TestVerifyCommand(t *testing.T) {
	x := export(t, 50)
	good, _ := json.Marshal(x)

	out, err := runWith(t, string(good))
	if err != nil || !strings.Contains(out, "ok: the draw of drop verifies") || !strings.HasPrefix(out, "1\t"+x.Order[0]+"\n") {
		t.Fatalf("the real order: %v\n%s", err, out)
	}

	swapped := x
	swapped.Order = append([]string(nil), x.Order...)
	swapped.Order[10], swapped.Order[11] = swapped.Order[11], swapped.Order[10]
	bad, _ := json.Marshal(swapped)
	out, err = runWith(t, string(bad), "-q")
	if !errors.Is(err, errMismatch) || !strings.Contains(err.Error(), "place 11") || strings.Contains(out, "ok:") {
		t.Fatalf("one swapped pair: %v\n%s", err, out)
	}

	forged := x
	forged.Commitment = strings.Repeat("0", 64)
	b, _ := json.Marshal(forged)
	if _, err := runWith(t, string(b), "-q"); !errors.Is(err, errMismatch) || !errors.Is(err, draw.ErrCommitment) {
		t.Fatalf("a seed that does not match the commitment: %v", err)
	}

	// From a file, and one user's place.
	path := filepath.Join(t.TempDir(), "export.json")
	if err := os.WriteFile(path, good, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = runWith(t, "", "-user", x.Order[6], path)
	if err != nil || !strings.HasPrefix(out, x.Order[6]+": drawn place 7 of 50\n") {
		t.Fatalf("-user: %v\n%s", err, out)
	}

	// From the admin API, with the token.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer secret" {
			http.Error(w, `{"error":{"code":"unauthorized"}}`, http.StatusUnauthorized)
			return
		}
		_, _ = w.Write(good)
	}))
	defer srv.Close()
	if _, err := runWith(t, "", "-q", "-url", srv.URL, "-token", "secret"); err != nil {
		t.Fatalf("-url: %v", err)
	}
	if _, err := runWith(t, "", "-q", "-url", srv.URL); err == nil || errors.Is(err, errMismatch) {
		t.Fatalf("-url without the token: %v", err)
	}

	for _, in := range []string{"", "{", `{"seed":""}`, `{"seed":"zz","commitment":"00"}`} {
		if _, err := runWith(t, in, "-q"); err == nil || errors.Is(err, errMismatch) {
			t.Errorf("input %q: %v", in, err)
		}
	}
}
