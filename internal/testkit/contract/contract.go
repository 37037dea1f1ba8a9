package contract

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// Doc is a loaded, valid OpenAPI document, made strict for tests: an object
// schema that lists properties takes no others unless it says so.
type Doc struct {
	Name string
	// Prefix, when set, limits the document to the paths under it: the
	// others belong to someone else (the site behind waitq-guard).
	Prefix string
	T      *openapi3.T
	router routers.Router
}

// Load parses data, validates it as an OpenAPI 3 document and lints it (see
// Lint); the error names the first problems found.
func Load(name string, data []byte) (*Doc, error) {
	loader := openapi3.NewLoader()
	t, err := loader.LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("%s: load: %w", name, err)
	}
	var errs []error
	if err := t.Validate(context.Background()); err != nil {
		errs = append(errs, fmt.Errorf("invalid: %w", err))
	}
	errs = append(errs, Lint(t, data)...)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s: %w", name, errors.Join(errs...))
	}
	strict(t)
	// Routes are matched on their path alone: tests serve on any address.
	t.Servers = nil
	r, err := gorillamux.NewRouter(t)
	if err != nil {
		return nil, fmt.Errorf("%s: router: %w", name, err)
	}
	return &Doc{Name: name, T: t, router: r}, nil
}

// strict makes every object schema with properties refuse the ones it does
// not list (unless additionalProperties is set), outside allOf, whose parts
// each see only some of the properties. The published document stays
// tolerant, so that clients generated from it accept fields added later;
// the tests hold the services to what it lists.
func strict(t *openapi3.T) {
	seen := map[*openapi3.Schema]bool{}
	var walk func(s *openapi3.SchemaRef, inAllOf bool)
	walk = func(ref *openapi3.SchemaRef, inAllOf bool) {
		if ref == nil || ref.Value == nil || seen[ref.Value] {
			return
		}
		s := ref.Value
		seen[s] = true
		if !inAllOf && len(s.Properties) > 0 && s.AdditionalProperties.Has == nil && s.AdditionalProperties.Schema == nil {
			no := false
			s.AdditionalProperties.Has = &no
		}
		for _, p := range s.Properties {
			walk(p, false)
		}
		walk(s.Items, false)
		for _, o := range s.OneOf {
			walk(o, false)
		}
		for _, o := range s.AnyOf {
			walk(o, false)
		}
		for _, o := range s.AllOf {
			walk(o, true)
		}
	}
	// allOf parts first, so that a schema used as a part is never made strict.
	var parts func(ref *openapi3.SchemaRef, visited map[*openapi3.Schema]bool)
	parts = func(ref *openapi3.SchemaRef, visited map[*openapi3.Schema]bool) {
		if ref == nil || ref.Value == nil || visited[ref.Value] {
			return
		}
		visited[ref.Value] = true
		for _, o := range ref.Value.AllOf {
			seen[o.Value] = true
		}
		for _, p := range ref.Value.Properties {
			parts(p, visited)
		}
		parts(ref.Value.Items, visited)
		for _, o := range slices.Concat(ref.Value.OneOf, ref.Value.AnyOf, ref.Value.AllOf) {
			parts(o, visited)
		}
	}
	visited := map[*openapi3.Schema]bool{}
	for _, s := range schemas(t) {
		parts(s, visited)
	}
	for _, s := range schemas(t) {
		walk(s, false)
	}
}

// schemas lists every schema a document names: its components and the
// bodies and parameters of its operations.
func schemas(t *openapi3.T) []*openapi3.SchemaRef {
	var out []*openapi3.SchemaRef
	if t.Components != nil {
		for _, name := range sortedKeys(t.Components.Schemas) {
			out = append(out, t.Components.Schemas[name])
		}
	}
	for _, path := range t.Paths.InMatchingOrder() {
		for _, op := range t.Paths.Value(path).Operations() {
			if op.RequestBody != nil && op.RequestBody.Value != nil {
				for _, mt := range op.RequestBody.Value.Content {
					out = append(out, mt.Schema)
				}
			}
			for _, r := range op.Responses.Map() {
				if r.Value == nil {
					continue
				}
				for _, mt := range r.Value.Content {
					out = append(out, mt.Schema)
				}
				for _, h := range r.Value.Headers {
					if h.Value != nil {
						out = append(out, h.Value.Schema)
					}
				}
			}
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Frame checks a live-status frame (the JSON of a WebSocket text frame or
// of an SSE event's data) against the document's Frame schema.
func (d *Doc) Frame(raw []byte) error {
	ref := d.T.Components.Schemas["Frame"]
	if ref == nil {
		return fmt.Errorf("%s: no Frame schema", d.Name)
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("frame %s: not JSON: %w", raw, err)
	}
	if err := ref.Value.VisitJSON(jsonValue(v)); err != nil {
		return fmt.Errorf("frame %s does not match the Frame schema of %s: %w", raw, d.Name, err)
	}
	return nil
}

// jsonValue turns json.Numbers into the float64s kin-openapi validates.
func jsonValue(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = jsonValue(e)
		}
	case []any:
		for i, e := range x {
			x[i] = jsonValue(e)
		}
	}
	return v
}

// route finds the operation of r, or nil.
func (d *Doc) route(r *http.Request) (*routers.Route, map[string]string) {
	route, params, err := d.router.FindRoute(r)
	if err != nil {
		return nil, nil
	}
	return route, params
}

// errorSchema is the document's one error body, or nil.
func (d *Doc) errorSchema() *openapi3.Schema {
	if d.T.Components == nil || d.T.Components.Schemas["Error"] == nil {
		return nil
	}
	return d.T.Components.Schemas["Error"].Value
}

// headerDeclared reports whether name is declared on resp.
func headerDeclared(resp *openapi3.Response, name string) bool {
	for k := range resp.Headers {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}
