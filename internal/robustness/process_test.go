package robustness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/testredis"
)

// Gateway replicas as processes: the built cmd/gateway, started with its settings in the
// environment on a loopback port, so a fault can SIGKILL it (no deferred cleanup, no drain,
// requests in flight cut) and start it again on the same port.

// buildGateway builds ./cmd/gateway once into dir and returns the executable's path.
func buildGateway(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "gateway")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/gateway")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/gateway: %v\n%s", err, out)
	}
	return bin
}

// gatewayProc is one cmd/gateway process and what it takes to start it again.
type gatewayProc struct {
	t    *testing.T
	bin  string
	env  []string
	addr string
	log  string // its standard output and error
	mu   sync.Mutex
	cmd  *exec.Cmd
	// paused: frozen by SIGSTOP (the probes leave it out; the clients do not).
	paused atomic.Bool
}

// signal sends sig to the process (SIGSTOP freezes it, SIGCONT thaws it).
func (p *gatewayProc) signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && p.cmd.Process != nil {
		p.paused.Store(sig == syscall.SIGSTOP)
		_ = p.cmd.Process.Signal(sig)
	}
}

// startProcesses starts a cmd/gateway process (bin) for each spec, on a free loopback port,
// with its operator listener off, and waits until each is ready; they are killed at cleanup.
func startProcesses(t *testing.T, bin string, specs ...gatewaySpec) []*gateway {
	t.Helper()
	out := make([]*gateway, len(specs))
	for i, spec := range specs {
		var p *gatewayProc
		// A port found free may be taken before the gateway binds it (the gateway then exits
		// with "address already in use"): it starts again on another.
		for attempt := 1; ; attempt++ {
			addr := freeAddr(t)
			env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GATEWAY_ADDR=" + addr,
				"GATEWAY_ADMIN_ADDR=off", "GATEWAY_LOG_LEVEL=warn"}
			for k, v := range spec.env {
				env = append(env, k+"="+v)
			}
			p = &gatewayProc{t: t, bin: bin, env: env, addr: addr, log: filepath.Join(t.TempDir(), "gateway-"+strconv.Itoa(i)+".log")}
			err := p.start()
			if err == nil {
				break
			}
			if !errors.Is(err, errAddrTaken) || attempt == 3 {
				t.Fatal(err)
			}
		}
		g := &gateway{url: "http://" + p.addr, client: newClient(), proc: p}
		t.Cleanup(p.stop)
		t.Cleanup(g.client.CloseIdleConnections)
		out[i] = g
	}
	return out
}

// start runs the process and waits until /readyz answers 200 (Redis reached, scripts
// loaded).
func (p *gatewayProc) start() error {
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.Command(p.bin)
	cmd.Env, cmd.Stdout, cmd.Stderr = p.env, f, f
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start gateway: %w", err)
	}
	p.mu.Lock()
	p.cmd = cmd
	p.mu.Unlock()
	c := &http.Client{Timeout: time.Second}
	_, portStr, _ := net.SplitHostPort(p.addr)
	port, _ := strconv.Atoi(portStr)
	exited := false
	err = poll(30*time.Second, "gateway process "+p.addr+" ready", func() bool {
		if testredis.Exited(cmd) {
			exited = true
			return true
		}
		r, err := c.Get("http://" + p.addr + "/readyz")
		if err != nil {
			return false
		}
		r.Body.Close()
		// (another gateway on the port would answer too: the process must be the listener)
		own, _ := testredis.ListensOn(cmd.Process.Pid, port)
		return r.StatusCode == http.StatusOK && own
	})
	raw, _ := os.ReadFile(p.log)
	switch {
	case exited && strings.Contains(string(raw), "address already in use"):
		return fmt.Errorf("gateway process %s: %w", p.addr, errAddrTaken)
	case exited:
		err = fmt.Errorf("gateway process %s exited", p.addr)
	}
	if err != nil {
		return fmt.Errorf("%w; its log: %s", err, tail(string(raw), 2000))
	}
	return nil
}

// freeAddr is a loopback address with a port the kernel just handed out (a variable: a test
// hands out a taken one).
var freeAddr = func(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// errAddrTaken: another process listens on the address a gateway was started on.
var errAddrTaken = errors.New("the address is taken by another process")

// kill sends SIGKILL and waits for the process to be gone.
func (p *gatewayProc) kill() {
	p.mu.Lock()
	cmd := p.cmd
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_, _ = cmd.Process.Wait()
}

func (p *gatewayProc) stop() { p.kill() }

// sigkill kills the replica's process with SIGKILL (requests in flight get no answer); the
// clients send it nothing until restart.
func (g *gateway) sigkill() {
	g.proc.kill()
	g.dead.Store(true)
	g.client.CloseIdleConnections()
}

// restart starts the killed process again on its port and, once it is ready, gives it back
// to the clients.
func (g *gateway) restart(ctx context.Context) error {
	if err := g.proc.start(); err != nil {
		return err
	}
	g.dead.Store(false)
	return ctx.Err()
}

func tail(s string, n int) string {
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return strings.TrimSpace(s)
}
