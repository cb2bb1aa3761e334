package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/rueidis"
)

// freePort asks the kernel for an unused loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// proc is a child process with its output in a log file.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// startProc starts bin; the child dies with us (Pdeathsig) and sits in its own process
// group, so a Ctrl-C reaches only the benchmark, which then stops it in order.
func startProc(name, dir, bin string, args, env []string) (*proc, error) {
	logPath := filepath.Join(dir, sanitize(name)+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr, cmd.Env = f, f, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, then SIGKILL after grace.
func (p *proc) stop(grace time.Duration) {
	if p == nil || p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// logTail is the end of the process's log, for error messages.
func (p *proc) logTail(n int) string {
	b, _ := os.ReadFile(p.log)
	return tail(b, n)
}

// waitHTTP polls url until it answers want, the process exits, or timeout passes.
func waitHTTP(ctx context.Context, p *proc, url string, want int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	hc := &http.Client{Timeout: time.Second}
	last := "no answer"
	for time.Now().Before(deadline) {
		if p.exited() {
			return fmt.Errorf("%s exited (%v):\n%s", p.name, p.err, p.logTail(20))
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := hc.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == want {
				return nil
			}
			last = resp.Status
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s: %s did not answer %d within %s (last: %s):\n%s", p.name, url, want, timeout, last, p.logTail(20))
}

// redisServer is the benchmark's private Redis 8 on loopback, configured like the
// docker-compose service (append-only file, fsync every second, no RDB snapshots).
type redisServer struct {
	*proc
	Port   int
	Client rueidis.Client
}

func (r *redisServer) URL() string  { return fmt.Sprintf("redis://127.0.0.1:%d", r.Port) }
func (r *redisServer) Addr() string { return fmt.Sprintf("127.0.0.1:%d", r.Port) }

// startRedis starts a private Redis named name (its data folder under dir) with the
// benchmark's persistence settings plus extra arguments.
func startRedis(ctx context.Context, bin, dir, name string, extra ...string) (*redisServer, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, name)
	if err := os.MkdirAll(data, 0o700); err != nil {
		return nil, err
	}
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--protected-mode", "yes",
		"--dir", data, "--appendonly", "yes", "--appendfsync", "everysec", "--save", "",
		"--daemonize", "no", "--logfile", ""}
	p, err := startProc(name, dir, bin, append(args, extra...), os.Environ())
	if err != nil {
		return nil, err
	}
	r := &redisServer{proc: p, Port: port}
	deadline := time.Now().Add(15 * time.Second)
	for {
		if p.exited() {
			return nil, fmt.Errorf("redis exited (%v):\n%s", p.err, p.logTail(20))
		}
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{r.Addr()}, DisableCache: true})
		if err == nil {
			if err = c.Do(ctx, c.B().Ping().Build()).Error(); err == nil {
				r.Client = c
				return r, nil
			}
			c.Close()
		}
		if time.Now().After(deadline) {
			p.stop(5 * time.Second)
			return nil, fmt.Errorf("redis on port %d did not answer PING: %v\n%s", port, err, p.logTail(20))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (r *redisServer) stop() {
	if r == nil {
		return
	}
	if r.Client != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_ = r.Client.Do(ctx, r.Client.B().Shutdown().Nosave().Build()).Error()
		cancel()
		r.Client.Close()
	}
	r.proc.stop(5 * time.Second)
}

// findRedisServer: the flag, $HASHGATE_REDIS8_SERVER, then the cache scripts/redis-env.sh fills.
func findRedisServer(flagVal, root string) (string, error) {
	for _, c := range []string{flagVal, os.Getenv("HASHGATE_REDIS8_SERVER"), filepath.Join(root, ".cache/redis/bin/redis8-server")} {
		if c == "" {
			continue
		}
		if st, err := os.Stat(c); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return c, nil
		}
		if c == flagVal {
			return "", fmt.Errorf("-redis-server %s is not an executable", c)
		}
	}
	return "", errors.New("no Redis 8 server: run scripts/bench.sh (it provisions one), or pass -redis-server, or set HASHGATE_REDIS8_SERVER")
}

// moduleRoot is the folder holding go.mod, found upwards from the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/hashgate/hashgate") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run the benchmark inside the hashgate module (no go.mod found upwards)")
		}
		dir = parent
	}
}

// buildGateway builds cmd/gateway exactly as the Dockerfile does.
func buildGateway(ctx context.Context, root, out string) error {
	goBin := os.Getenv("GO")
	if goBin == "" {
		goBin = "go"
	}
	cmd := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-ldflags", "-s -w -X main.version=bench", "-o", out, "./cmd/gateway")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/gateway: %w\n%s", err, tail(b, 30))
	}
	return nil
}

// keygen runs `gateway keygen` and returns its KEY=value lines as environment entries.
func keygen(ctx context.Context, bin string) ([]string, error) {
	b, err := exec.CommandContext(ctx, bin, "keygen").Output()
	if err != nil {
		return nil, fmt.Errorf("gateway keygen: %w", err)
	}
	var env []string
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		if k, _, ok := strings.Cut(sc.Text(), "="); ok && strings.HasPrefix(k, "GATEWAY_") {
			env = append(env, sc.Text())
		}
	}
	if len(env) != 2 {
		return nil, fmt.Errorf("gateway keygen printed %d variables, want GATEWAY_SIGNING_KEYS and GATEWAY_HMAC_KEY", len(env))
	}
	return env, nil
}

// mintToken runs `gateway token mint` with the gateways' environment env: a root token of
// tenant holding scopes (space-separated), for an hour.
func mintToken(ctx context.Context, bin string, env []string, tenant, scopes string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, "token", "mint", "--tenant", tenant, "--scope", scopes, "--subject", "bench")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, tail(ee.Stderr, 5))
		}
		return "", fmt.Errorf("gateway token mint --tenant %s: %w", tenant, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// baseEnv is a clean environment for children: no GATEWAY_*, REDIS_URL or OTEL_* of the caller.
func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GATEWAY_") || strings.HasPrefix(k, "OTEL_") || k == "REDIS_URL" {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// gateway is one running gateway process.
type gateway struct {
	*proc
	Base  string // http://127.0.0.1:port
	Ops   string // the operator listener (/metrics): http://127.0.0.1:port
	Admin string // the bootstrap admin token
}

func startGateway(ctx context.Context, name, bin, dir string, env []string) (*gateway, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	opsPort, err := freePort()
	if err != nil {
		return nil, err
	}
	tokenFile := filepath.Join(dir, sanitize(name)+".token")
	env = append(append([]string{}, env...),
		"GATEWAY_ADDR=127.0.0.1:"+strconv.Itoa(port),
		"GATEWAY_ADMIN_ADDR=127.0.0.1:"+strconv.Itoa(opsPort),
		"GATEWAY_BOOTSTRAP_TOKEN_FILE="+tokenFile)
	p, err := startProc(name, dir, bin, nil, env)
	if err != nil {
		return nil, err
	}
	g := &gateway{proc: p, Base: "http://127.0.0.1:" + strconv.Itoa(port), Ops: "http://127.0.0.1:" + strconv.Itoa(opsPort)}
	if err := waitHTTP(ctx, p, g.Base+"/readyz", http.StatusOK, 30*time.Second); err != nil {
		p.stop(5 * time.Second)
		return nil, err
	}
	b, err := os.ReadFile(tokenFile)
	if err != nil {
		p.stop(5 * time.Second)
		return nil, fmt.Errorf("%s: bootstrap token: %w", name, err)
	}
	g.Admin = strings.TrimSpace(string(b))
	return g, nil
}

// startBaseline re-executes this program as one of the baseline servers.
func startBaseline(ctx context.Context, name, dir string, args ...string) (*proc, string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	p, err := startProc(name, dir, self, append(args, "-addr", addr), baseEnv())
	if err != nil {
		return nil, "", err
	}
	base := "http://" + addr
	if err := waitHTTP(ctx, p, base+"/healthz", http.StatusOK, 15*time.Second); err != nil {
		p.stop(5 * time.Second)
		return nil, "", err
	}
	return p, base, nil
}

// scrapeClientCalls reads the client-side Redis call counters from url (/metrics).
func scrapeClientCalls(ctx context.Context, url string) (clientCalls, bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return clientCalls{}, false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return clientCalls{}, false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return clientCalls{}, false
	}
	return parseClientCalls(string(b))
}
