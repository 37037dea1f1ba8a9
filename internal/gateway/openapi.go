package gateway

import _ "embed"

// OpenAPI is ws-gateway's OpenAPI document, served at /openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte
