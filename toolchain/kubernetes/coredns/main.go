// CoreDNS with only the plugins the local node's Corefile uses (toolchain/kubernetes/node_files.py):
// the cluster's names from the API server, and nothing that forwards a query off this machine.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/bind"
)

// The plugins' order in a server block, as CoreDNS's own list orders them.
var directives = []string{"bind", "ready", "health", "errors", "cache", "loadbalance", "kubernetes"}

func init() {
	dnsserver.Directives = directives
}

func main() {
	coremain.Run()
}
