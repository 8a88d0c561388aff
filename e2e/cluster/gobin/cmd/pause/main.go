// Command pause is the pod sandbox's init process for e2e-node's kubelet, built here because this machine
// reaches no image registry: it holds the pod's namespaces open, reaps the zombies that end up with it as
// PID 1, and exits 0 on SIGINT or SIGTERM (the contract containerd's CRI expects of the sandbox image).
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// version is set by build.sh (-X main.version) so the binary cache can tell a stale build.
var version = "unknown"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Printf("pause (py-scheduler e2e-node) %s\n", version)
		return
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "pause: warning: not PID 1, zombies of this process tree will not be reaped here")
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			fmt.Fprintf(os.Stderr, "pause: shutting down on %v\n", sig)
			os.Exit(0)
		}
		reap()
	}
}

// reap collects every exited child without blocking; one SIGCHLD can stand for several exits.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
