//go:build tools

// The command this module pins: kube-router, whose network policy controller alone enforces
// NetworkPolicy on bin/kube's node. Imported here so `go mod tidy` keeps its requirements.
package tools

import _ "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router"
