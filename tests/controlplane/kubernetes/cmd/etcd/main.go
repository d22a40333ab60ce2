// etcd as k8s.io/kubernetes v1.34.12 requires it (go.etcd.io/etcd/server/v3 v3.6.4): the upstream
// etcd binary's own entry point, etcdmain.Main, which is all of go.etcd.io/etcd/v3's main.go.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
