package app

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"gopkg.in/yaml.v3"

	"github.com/waitq/waitq/internal/gateway"
	"github.com/waitq/waitq/internal/producer"
)

// TestOpenAPIListsEveryRoute fails when a route is registered in echo but
// missing from the service's OpenAPI document, or documented but not served.
func TestOpenAPIListsEveryRoute(t *testing.T) {
	for _, tc := range []struct {
		name string
		e    *echo.Echo
		doc  []byte
	}{
		{"producer-api", mustProducer(t).Echo(), producer.OpenAPI},
		{"ws-gateway", mustGateway(t).Echo(), gateway.OpenAPI},
	} {
		t.Run(tc.name, func(t *testing.T) {
			documented := documentedRoutes(t, tc.doc)
			var served []string
			for _, r := range tc.e.Routes() {
				if slices.Contains([]string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch}, r.Method) {
					served = append(served, r.Method+" "+strings.Replace(r.Path, "/*", "/:path", 1))
				}
			}
			slices.Sort(served)
			served = slices.Compact(served)
			for _, r := range served {
				if !slices.Contains(documented, r) {
					t.Errorf("%s serves %s, which its OpenAPI document lacks", tc.name, r)
				}
			}
			for _, r := range documented {
				if !slices.Contains(served, r) {
					t.Errorf("the OpenAPI document of %s lists %s, which it does not serve", tc.name, r)
				}
			}
			if len(served) < 5 {
				t.Fatalf("only %d routes found: %v", len(served), served)
			}
		})
	}
}

var pathParam = regexp.MustCompile(`\{([^}]+)\}`)

// documentedRoutes lists "METHOD /path/:param" for every operation of doc.
func documentedRoutes(t *testing.T, doc []byte) []string {
	t.Helper()
	var d struct {
		OpenAPI string                    `yaml:"openapi"`
		Paths   map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(doc, &d); err != nil {
		t.Fatalf("OpenAPI document: %v", err)
	}
	if !strings.HasPrefix(d.OpenAPI, "3.") {
		t.Fatalf("openapi version %q", d.OpenAPI)
	}
	var out []string
	for path, ops := range d.Paths {
		for method := range ops {
			if method == "parameters" {
				continue
			}
			out = append(out, strings.ToUpper(method)+" "+pathParam.ReplaceAllString(path, ":$1"))
		}
	}
	slices.Sort(out)
	return out
}

// mustGateway returns a gateway of the default settings, for its routes.
func mustGateway(t *testing.T) *gateway.Server {
	t.Helper()
	srv, err := gateway.New(gateway.Config{}, gateway.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// mustProducer returns a producer API of the default settings, for its
// routes.
func mustProducer(t *testing.T) *producer.Server {
	t.Helper()
	srv, err := producer.New(producer.Config{}, producer.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}
