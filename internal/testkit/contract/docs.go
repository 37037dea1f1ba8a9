package contract

import (
	"sync"
	"testing"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/guard"
	"github.com/waitq/waitq/internal/producer"
)

// Documents are the OpenAPI documents waitq's services publish, by name:
// every one of them is loaded, validated and linted by the tests.
var Documents = map[string][]byte{
	"producer-api": producer.OpenAPI,
	"ws-gateway":   gateway.OpenAPI,
	"waitq-guard":  guard.OpenAPI,
}

var (
	loadOnce sync.Once
	loaded   map[string]*Doc
	loadErr  map[string]error
)

// Must returns the loaded document of the service name (a key of
// Documents), failing tb when it does not load.
func Must(tb testing.TB, name string) *Doc {
	tb.Helper()
	loadOnce.Do(func() {
		loaded, loadErr = map[string]*Doc{}, map[string]error{}
		for n, data := range Documents {
			loaded[n], loadErr[n] = Load(n, data)
		}
		if d := loaded["waitq-guard"]; d != nil {
			d.Prefix = guard.AdminPrefix
		}
	})
	if err := loadErr[name]; err != nil {
		tb.Fatal(err)
	}
	if loaded[name] == nil {
		tb.Fatalf("contract: no document %q", name)
	}
	return loaded[name]
}

// Producer is producer-api's document.
func Producer(tb testing.TB) *Doc { tb.Helper(); return Must(tb, "producer-api") }

// Gateway is ws-gateway's document.
func Gateway(tb testing.TB) *Doc { tb.Helper(); return Must(tb, "ws-gateway") }

// Guard is the document of waitq-guard's own routes.
func Guard(tb testing.TB) *Doc { tb.Helper(); return Must(tb, "waitq-guard") }
