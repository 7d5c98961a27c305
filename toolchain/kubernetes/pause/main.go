// pause is the one process of a pod sandbox: it holds the pod's namespaces until the kubelet
// stops the pod. No registry is reachable here, so the node cannot pull Kubernetes' own pause
// image; bin/kube packs this binary into an image of its own instead. Like the upstream one it
// sleeps until SIGINT or SIGTERM and, as PID 1 of a pod that shares its PID namespace, reaps the
// orphans it inherits.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		os.Stdout.WriteString("mm2-iac pause\n")
		return
	}
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var status syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
