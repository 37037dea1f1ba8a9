package producer

import _ "embed"

// OpenAPI is producer-api's OpenAPI document, served at /openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte
