// kubelet-streams serves the two kubelet endpoints that the API server proxies `kubectl exec` and
// `kubectl logs` to (/exec/... and /containerLogs/...), for the kwok Nodes of one test cluster.
//
// SIMULATION (the node's container runtime). A real kubelet asks its CRI runtime to run the command in
// the container's namespaces, with the image's root filesystem. Here no container exists (kwok only
// writes the Pod's status), and the seeds' commands name files of the vendor images
// (/scripts/run-nccl.sh, /usr/local/gib/scripts/run_nccl_tests.sh, ib_write_bw), so each command
// goes through a hook: the argv given after `--` on this program's command line, followed by the
// namespace, Pod, container and the command. The hook (tests/sandbox/kube/podexec.py) decides what
// runs on this host in the container's stead. The streaming protocol itself (SPDY and WebSocket,
// v1 to v5, the exit-code Status on the error stream) is the kubelet's own code,
// k8s.io/kubelet/pkg/cri/streaming/remotecommand, as the kubelet's server calls it.
//
// Logs: /containerLogs/NAMESPACE/POD/CONTAINER answers the file LOGDIR/NAMESPACE_POD_CONTAINER.log
// (empty when there is none), as the kubelet answers with what the runtime logged.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	remotecommandconsts "k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/client-go/tools/remotecommand"
	streaming "k8s.io/kubelet/pkg/cri/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

type hookExecutor struct {
	hook []string
}

// ExecInContainer runs the hook with the Pod's coordinates and the command, wired to the session's streams.
func (h hookExecutor) ExecInContainer(ctx context.Context, name string, _ types.UID, container string, cmd []string,
	in io.Reader, out, errOut io.WriteCloser, tty bool, _ <-chan remotecommand.TerminalSize, _ time.Duration) error {
	namespace, pod, _ := strings.Cut(name, "/")
	argv := append(append([]string{}, h.hook...), namespace, pod, container)
	argv = append(argv, cmd...)
	run := exec.CommandContext(ctx, argv[0], argv[1:]...)
	run.Stdin, run.Stdout, run.Stderr = in, out, errOut
	if tty {
		// With a TTY the kubelet has one stream: stderr travels on the terminal.
		run.Stderr = out
		run.Env = append(os.Environ(), "TERM=xterm")
	}
	err := run.Run()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return utilexec.CodeExitError{Err: err, Code: exitErr.ExitCode()}
	}
	return err
}

func main() {
	address := flag.String("address", "127.0.0.1:0", "host:port to serve on")
	certFile := flag.String("tls-cert-file", "", "serving certificate (PEM)")
	keyFile := flag.String("tls-private-key-file", "", "serving key (PEM)")
	logDir := flag.String("log-dir", "", "directory of NAMESPACE_POD_CONTAINER.log files")
	flag.Parse()
	hook := flag.Args()
	if len(hook) == 0 || *certFile == "" || *keyFile == "" {
		log.Fatal("usage: kubelet-streams --address H:P --tls-cert-file F --tls-private-key-file F [--log-dir D] -- HOOK...")
	}
	executor := hookExecutor{hook: hook}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	// The kubelet's routes: /exec/{podNamespace}/{podID}/{containerName} and .../{uid}/{containerName}.
	exec := func(w http.ResponseWriter, req *http.Request) {
		options, err := streaming.NewOptions(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		streaming.ServeExec(w, req, executor, req.PathValue("namespace")+"/"+req.PathValue("pod"),
			types.UID(req.PathValue("uid")), req.PathValue("container"), req.URL.Query()["command"], options,
			4*time.Hour, 30*time.Second, remotecommandconsts.SupportedStreamingProtocols)
	}
	mux.HandleFunc("/exec/{namespace}/{pod}/{container}", exec)
	mux.HandleFunc("/exec/{namespace}/{pod}/{uid}/{container}", exec)
	mux.HandleFunc("/containerLogs/{namespace}/{pod}/{container}", func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		if *logDir == "" {
			return
		}
		name := fmt.Sprintf("%s_%s_%s.log", req.PathValue("namespace"), req.PathValue("pod"), req.PathValue("container"))
		file, err := os.Open(filepath.Join(*logDir, filepath.Base(name)))
		if err != nil {
			return
		}
		defer file.Close()
		_, _ = io.Copy(w, file)
	})
	server := &http.Server{Addr: *address, Handler: mux, ReadHeaderTimeout: 30 * time.Second}
	log.Printf("kubelet-streams serving on %s", *address)
	log.Fatal(server.ListenAndServeTLS(*certFile, *keyFile))
}
