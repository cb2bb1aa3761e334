package testredis

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// EnvRedis8Server names the Redis 8 server executable scripts/redis-env.sh provides.
const EnvRedis8Server = "HASHGATE_REDIS8_SERVER"

// Server is a private Redis 8 process for fault tests: it can be stopped, restarted on the same
// port (with its append-only file), paused and resumed.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	Port int
	cmd  *exec.Cmd
	args []string
}

// StartServer starts a private Redis 8 with append-only persistence on a free loopback port,
// or skips the test when HASHGATE_REDIS8_SERVER is unset. It is stopped at cleanup.
func StartServer(t testing.TB, extra ...string) *Server {
	t.Helper()
	bin := os.Getenv(EnvRedis8Server)
	if bin == "" {
		t.Skipf("%s is unset (run `make test`)", EnvRedis8Server)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s := &Server{t: t, bin: bin, dir: t.TempDir(), Port: port}
	s.args = append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", s.dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", "", "--daemonize", "no", "--logfile", ""}, extra...)
	s.Start()
	t.Cleanup(func() { s.Stop() })
	return s
}

// URL is the server's redis:// URL.
func (s *Server) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d", s.Port) }

// Start (re)starts the process on the same port and data folder and waits until it accepts
// connections.
func (s *Server) Start() {
	s.t.Helper()
	s.cmd = exec.Command(s.bin, s.args...)
	s.cmd.Stdout, s.cmd.Stderr = nil, nil
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start redis: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.Port), 200*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Fatalf("redis on %d did not start", s.Port)
}

// Stop kills the process (SIGKILL: an abrupt crash) and waits for it to exit.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT)
	_ = s.cmd.Process.Kill()
	_, _ = s.cmd.Process.Wait()
	s.cmd = nil
}

// Pause freezes the process (SIGSTOP): connections stay open but nothing answers.
func (s *Server) Pause() { _ = s.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume thaws a paused process.
func (s *Server) Resume() { _ = s.cmd.Process.Signal(syscall.SIGCONT) }

// Addr is the server's host:port.
func (s *Server) Addr() string { return fmt.Sprintf("127.0.0.1:%d", s.Port) }
