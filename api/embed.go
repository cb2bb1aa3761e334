// Package api embeds the OpenAPI contract (openapi.yaml) so the gateway can serve it verbatim.
package api

import _ "embed"

// Spec is api/openapi.yaml as written.
//
//go:embed openapi.yaml
var Spec []byte
