// Command etcd runs the etcd server pinned by this module's graph (the one Kubernetes itself pins).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
