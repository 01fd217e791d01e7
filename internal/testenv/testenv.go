package testenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

// AdminToken is the bearer token of the admin user (group system:masters).
const AdminToken = "dynwatch-admin-token"

// User is an extra token user; give it RBAC in the test that uses it.
type User struct {
	Name   string
	Token  string
	Groups []string
}

// Options configure Start.
type Options struct {
	// BinDir holds etcd and kube-apiserver. Default: $DYNWATCH_TESTENV_BIN, or
	// .testenv/bin at the repository root.
	BinDir string
	// Users are extra token users.
	Users []User
	// Dir is the working directory (data, certificates, logs). Default: a new
	// temporary directory, removed by Stop.
	Dir string
	// APIServerArgs are extra kube-apiserver flags (e.g. --watch-cache=false).
	APIServerArgs []string
	// FeatureGates are kube-apiserver feature gates to turn on, e.g.
	// ShardedListAndWatch (server-side sharded list and watch).
	FeatureGates []string
	// AuditLog records every request (level Metadata: its requestURI with the
	// query) in Env.AuditLog, one JSON event a line: a way for a test to see
	// what a client asked for.
	AuditLog bool

	// ports picks n free ports (default freePorts); a test of the retry on a
	// port taken meanwhile sets it.
	ports func(n int) ([]int, error)
	// OwnProcessGroup runs etcd and kube-apiserver in a process group of
	// their own, so that a terminal's Ctrl-C reaches only the caller, which
	// stops them after what still needs them (the demo: dynwatch's clean
	// stop). Default false.
	OwnProcessGroup bool
}

// Env is a running control plane.
type Env struct {
	// Config is a rest config for the admin user.
	Config *rest.Config
	// Kubeconfig is a kubeconfig file for the admin user.
	Kubeconfig string
	// URL is the API server's address.
	URL string
	// EtcdURL is etcd's client address.
	EtcdURL string
	// Dir is the working directory; logs are etcd.log and kube-apiserver.log.
	Dir string
	// AuditLog is the API server's audit log when Options.AuditLog is set.
	AuditLog string

	caData   []byte
	procs    []*process
	ownsDir  bool
	ownGroup bool

	// apiBin and apiArgs start the API server again (StartAPIServer).
	apiBin  string
	apiArgs []string
}

// process is a spawned binary; done is closed once it has exited.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// BinDir returns where the binaries are looked for by default.
func BinDir() string {
	if d := os.Getenv("DYNWATCH_TESTENV_BIN"); d != "" {
		return d
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", ".testenv", "bin")
}

// Start starts etcd and kube-apiserver and waits until the API server is ready.
// On error nothing is left running. The ports are picked free and then bound
// by the binaries: when another process took one in between, Start tries again
// on new ports (in a new directory, unless Options.Dir is set).
func Start(opts Options) (*Env, error) {
	if opts.ports == nil {
		opts.ports = freePorts
	}
	for attempt := 1; ; attempt++ {
		env, err := start(opts)
		if !errors.Is(err, errPortTaken) || opts.Dir != "" || attempt == 3 {
			return env, err
		}
	}
}

// errPortTaken is start's error when a binary could not bind its port.
var errPortTaken = errors.New("testenv: a port was taken before the binary bound it")

func start(opts Options) (env *Env, err error) {
	if opts.BinDir == "" {
		opts.BinDir = BinDir()
	}
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(opts.BinDir, b)); err != nil {
			return nil, fmt.Errorf("testenv: %s not found in %s: run `make testenv` first", b, opts.BinDir)
		}
	}
	e := &Env{Dir: opts.Dir, ownGroup: opts.OwnProcessGroup}
	if e.Dir == "" {
		if e.Dir, err = os.MkdirTemp("", "dynwatch-testenv-"); err != nil {
			return nil, err
		}
		e.ownsDir = true
	}
	defer func() {
		if err != nil {
			if e.logsSay("address already in use") {
				err = fmt.Errorf("%w: %w", errPortTaken, err)
			}
			e.Stop()
		}
	}()
	ports, err := opts.ports(3)
	if err != nil {
		return nil, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	if err := e.spawn(filepath.Join(opts.BinDir, "etcd"), "etcd.log",
		"--data-dir="+filepath.Join(e.Dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL,
		"--unsafe-no-fsync", "--log-level=error",
	); err != nil {
		return nil, err
	}

	if err := writeServiceAccountKey(e.Dir); err != nil {
		return nil, err
	}
	var tokens strings.Builder
	fmt.Fprintf(&tokens, "%s,admin,admin,\"system:masters\"\n", AdminToken)
	for i, u := range opts.Users {
		fmt.Fprintf(&tokens, "%s,%s,uid-%d,\"%s\"\n", u.Token, u.Name, i, strings.Join(u.Groups, ","))
	}
	if err := os.WriteFile(filepath.Join(e.Dir, "tokens.csv"), []byte(tokens.String()), 0o600); err != nil {
		return nil, err
	}
	certDir := filepath.Join(e.Dir, "certs")
	e.URL = "https://127.0.0.1:" + strconv.Itoa(ports[2])
	e.EtcdURL = etcdURL
	apiArgs := apiServerArgs(etcdURL, ports[2], certDir, e.Dir, opts)
	if apiArgs, err = e.extraArgs(opts, apiArgs); err != nil {
		return nil, err
	}
	if err := e.spawnAPIServer(filepath.Join(opts.BinDir, "kube-apiserver"), apiArgs); err != nil {
		return nil, err
	}
	if err := e.waitReady(60 * time.Second); err != nil {
		return nil, err
	}
	e.Config = e.UserConfig(AdminToken)
	e.Kubeconfig = filepath.Join(e.Dir, "kubeconfig")
	if err := e.WriteKubeconfig(e.Kubeconfig, AdminToken); err != nil {
		return nil, err
	}
	return e, nil
}

// apiServerArgs are kube-apiserver's flags, before Options' feature gates
// and audit log.
func apiServerArgs(etcdURL string, port int, certDir, dir string, opts Options) []string {
	return append([]string{
		"--etcd-servers=" + etcdURL,
		"--secure-port=" + strconv.Itoa(port), "--bind-address=127.0.0.1",
		"--cert-dir=" + certDir,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + filepath.Join(dir, "sa.pub"),
		"--service-account-signing-key-file=" + filepath.Join(dir, "sa.key"),
		"--service-cluster-ip-range=10.0.0.0/24",
		"--authorization-mode=RBAC",
		"--token-auth-file=" + filepath.Join(dir, "tokens.csv"),
		"--disable-admission-plugins=ServiceAccount",
		"--allow-privileged=true",
	}, opts.APIServerArgs...)
}

// Stop stops the API server, then etcd, and removes the working directory it made.
// It is safe to call more than once.
func (e *Env) Stop() {
	for i := len(e.procs) - 1; i >= 0; i-- {
		p := e.procs[i]
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	e.procs = nil
	if e.ownsDir {
		_ = os.RemoveAll(e.Dir)
		e.ownsDir = false
	}
}

func (e *Env) spawn(bin, logName string, args ...string) error {
	logf, err := os.Create(filepath.Join(e.Dir, logName))
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// If the test binary dies (a panic, a test timeout), so does the control plane.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: e.ownGroup}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("testenv: start %s: %w", bin, err)
	}
	logf.Close()
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	e.procs = append(e.procs, p)
	return nil
}

// logsSay reports whether a binary's log holds s.
func (e *Env) logsSay(s string) bool {
	for _, name := range []string{"etcd.log", "kube-apiserver.log"} {
		if b, err := os.ReadFile(filepath.Join(e.Dir, name)); err == nil && bytes.Contains(b, []byte(s)) {
			return true
		}
	}
	return false
}

func (e *Env) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var client *http.Client
	for time.Now().Before(deadline) {
		for _, p := range e.procs {
			select {
			case <-p.done:
				return fmt.Errorf("testenv: %s exited early; see the logs in %s", p.cmd.Path, e.Dir)
			default:
			}
		}
		if client == nil {
			// The API server writes its self-signed serving certificate first.
			// Only a server with that certificate is ours: another process
			// that took the port first is not taken for it.
			if b, err := os.ReadFile(filepath.Join(e.Dir, "certs", "apiserver.crt")); err == nil {
				pool := x509.NewCertPool()
				if pool.AppendCertsFromPEM(b) {
					e.caData = b
					client = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
				}
			}
		}
		if client != nil {
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, e.URL+"/readyz", nil)
			req.Header.Set("Authorization", "Bearer "+AdminToken)
			if resp, err := client.Do(req); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return nil
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("testenv: kube-apiserver not ready after %s; see %s", timeout, filepath.Join(e.Dir, "kube-apiserver.log"))
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func writeServiceAccountKey(dir string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	priv := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	pub := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	return errors.Join(
		os.WriteFile(filepath.Join(dir, "sa.key"), priv, 0o600),
		os.WriteFile(filepath.Join(dir, "sa.pub"), pub, 0o600),
	)
}
