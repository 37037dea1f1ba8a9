package guard

import _ "embed"

// OpenAPI is the OpenAPI document of the guard's own routes (under
// AdminPrefix); every other path belongs to the protected site.
//
//go:embed openapi.yaml
var OpenAPI []byte
