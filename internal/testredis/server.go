package testredis

import (
	"context"
	"errors"
	"fmt"
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
	s := &Server{t: t, bin: bin, dir: t.TempDir()}
	t.Cleanup(func() { s.Stop() })
	for attempt := 1; ; attempt++ {
		s.Port = freePorts(t, 1)[0]
		s.args = append([]string{"--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1", "--dir", s.dir,
			"--appendonly", "yes", "--appendfsync", "always", "--save", "", "--daemonize", "no", "--logfile", ""}, extra...)
		err := s.start()
		if err == nil {
			return s
		}
		if !errors.Is(err, errPortTaken) || attempt == 3 {
			t.Fatalf("redis: %v", err)
		}
		s.Stop()
	}
}

// URL is the server's redis:// URL.
func (s *Server) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d", s.Port) }

// Start (re)starts the process on the same port and data folder and waits until it accepts
// connections.
func (s *Server) Start() {
	s.t.Helper()
	if err := s.start(); err != nil {
		s.t.Fatalf("redis: %v", err)
	}
}

// start starts the process and waits until it is the server answering on its port.
func (s *Server) start() error {
	s.cmd = exec.Command(s.bin, s.args...)
	if err := s.cmd.Start(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return WaitOwn(ctx, s.Port, s.cmd)
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
