package contract

import (
	"fmt"
	"mime"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"gopkg.in/yaml.v3"
)

// errorRef is the one error body every error answer refers to.
const errorRef = "#/components/schemas/Error"

// Lint finds the mistakes a valid document can still hold:
//   - text lost to YAML: a description, summary or example written plain
//     inside a flow mapping ({type: string, description: a, b} keeps "a"
//     and makes " b" a key), or any key with a space in it;
//   - an operation without an operationId;
//   - an error answer (4xx, 5xx) in JSON whose schema is not the one Error
//     schema (a response marked x-status-body: a health report, not an
//     error, is exempt); a 429 or 503 without Retry-After.
func Lint(t *openapi3.T, data []byte) []error {
	var errs []error
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return []error{err}
	}
	errs = append(errs, lintYAML(&root)...)
	for _, path := range t.Paths.InMatchingOrder() {
		for method, op := range t.Paths.Value(path).Operations() {
			at := method + " " + path
			if op.OperationID == "" {
				errs = append(errs, fmt.Errorf("%s has no operationId", at))
			}
			for code, r := range op.Responses.Map() {
				errs = append(errs, lintResponse(at+" "+code, code, r)...)
			}
		}
	}
	return errs
}

func lintResponse(at, code string, ref *openapi3.ResponseRef) []error {
	n, err := strconv.Atoi(code)
	if err != nil || n < 400 || ref.Value == nil {
		return nil
	}
	r := ref.Value
	var errs []error
	if _, ok := r.Extensions["x-status-body"]; ok {
		return nil
	}
	{
		for ct, mt := range r.Content {
			if base, _, _ := mime.ParseMediaType(ct); base != "application/json" {
				continue
			}
			if mt.Schema == nil || mt.Schema.Ref != errorRef {
				errs = append(errs, fmt.Errorf("%s: an error body other than %s", at, errorRef))
			}
		}
	}
	if (n == 429 || n == 503) && !headerDeclared(r, "Retry-After") {
		errs = append(errs, fmt.Errorf("%s: no Retry-After header declared", at))
	}
	return errs
}

// lintYAML finds text YAML cut: plain scalars of prose keys in flow
// mappings, and keys with spaces.
func lintYAML(n *yaml.Node) []error {
	var errs []error
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if strings.ContainsAny(k.Value, " ()") {
				errs = append(errs, fmt.Errorf("line %d: key %q: text cut by YAML? quote the value before it", k.Line, k.Value))
			}
			switch k.Value {
			case "description", "summary", "example":
				if n.Style&yaml.FlowStyle != 0 && v.Kind == yaml.ScalarNode && v.Style == 0 && v.Tag == "!!str" {
					errs = append(errs, fmt.Errorf("line %d: %s %q written plain in a flow mapping: quote it, a comma would cut it", v.Line, k.Value, v.Value))
				}
			}
		}
	}
	for _, c := range n.Content {
		errs = append(errs, lintYAML(c)...)
	}
	return errs
}
