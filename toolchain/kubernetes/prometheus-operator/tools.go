//go:build tools

// The commands this module pins: the operator and the config reloader it runs beside every
// Prometheus. Imported here so `go mod tidy` keeps their requirements.
package tools

import (
	_ "github.com/prometheus-operator/prometheus-operator/cmd/operator"
	_ "github.com/prometheus-operator/prometheus-operator/cmd/prometheus-config-reloader"
)
