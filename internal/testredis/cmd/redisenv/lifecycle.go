package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashgate/hashgate/internal/testredis"
)

// Starting and stopping the daemons.

func (e *env) up() error {
	t0 := time.Now()
	unlock, err := e.lock()
	if err != nil {
		return err
	}
	defer unlock()
	if err := os.MkdirAll(e.run, 0o755); err != nil {
		return err
	}
	// Fail before touching anything if a port is served by a Redis that is not ours.
	for _, in := range e.instances() {
		if cf, ok := configFile(in.port); ok && !(strings.HasPrefix(cf, e.run+"/") && strings.HasSuffix(cf, "/redis.conf")) {
			return fmt.Errorf("port %d is already served by a Redis not managed here; stop it or choose other ports (HASHGATE_REDIS8_PORT, HASHGATE_REDIS7_PORT, HASHGATE_REDIS_CLUSTER_PORTS)", in.port)
		}
	}
	all := e.instances()
	if err := e.upSingle(all[0]); err != nil {
		return err
	}
	if err := e.upCluster(all[1 : len(all)-1]); err != nil {
		return err
	}
	if err := e.upSingle(all[len(all)-1]); err != nil {
		return err
	}
	if err := e.checkVersions(); err != nil {
		return err
	}
	lines := e.exportLines()
	tmp := filepath.Join(e.cache, "env.sh.tmp")
	if err := os.WriteFile(tmp, []byte(lines), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(e.cache, "env.sh")); err != nil {
		return err
	}
	logf("ready in %ds; exports written to %s", int(time.Since(t0).Seconds()), filepath.Join(e.cache, "env.sh"))
	fmt.Print(lines)
	return nil
}

func (e *env) upSingle(in instance) error {
	st, err := e.state(in)
	if err != nil {
		return err
	}
	if st == "reuse" {
		if err := flush(in.port); err != nil {
			return err
		}
		logf("%s: reusing running instance on %s:%d (flushed)", in.name, host, in.port)
		return nil
	}
	if st == "stale" {
		logf("%s: restarting", in.name)
		if err := e.stop(e.dir(in)); err != nil {
			return err
		}
	}
	if err := e.start(in); err != nil {
		return err
	}
	logf("%s: started on %s:%d", in.name, host, in.port)
	return nil
}

func (e *env) upCluster(nodes []instance) error {
	ports := make([]int, len(nodes))
	reuse := true
	for i, in := range nodes {
		ports[i] = in.port
		st, err := e.state(in)
		if err != nil {
			return err
		}
		reuse = reuse && st == "reuse"
	}
	if reuse {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ok, why := testredis.ClusterHealthy(ctx, ports)
		cancel()
		if ok {
			for _, p := range ports {
				if err := flush(p); err != nil {
					return err
				}
			}
			logf("cluster: reusing running cluster on ports %v (flushed)", ports)
			return nil
		}
		logf("cluster: not reused (%s); recreating", why)
	}
	for _, in := range nodes {
		if err := e.stop(e.dir(in)); err != nil {
			return err
		}
	}
	for _, in := range nodes {
		if err := e.start(in); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.startTimeout+30*time.Second)
	defer cancel()
	if err := testredis.FormCluster(ctx, ports); err != nil {
		return fmt.Errorf("cluster on ports %v: %w", ports, err)
	}
	logf("cluster: created on ports %v (cluster_state:ok on all nodes)", ports)
	return nil
}

// start writes a fresh data folder and configuration, starts the daemon and waits until it
// answers as the instance just started.
func (e *env) start(in instance) error {
	dir := e.dir(in)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	conf := filepath.Join(dir, "redis.conf")
	if err := os.WriteFile(conf, []byte(e.conf(in)), 0o644); err != nil {
		return err
	}
	// The daemon inherits only stdio (Go opens everything else close-on-exec, the lock too).
	out, err := exec.Command(e.server(in), conf).CombinedOutput()
	if err != nil {
		return fmt.Errorf("could not start %s on port %d: %v\n%s%s", in.name, in.port, err, out, logTail(dir))
	}
	deadline := time.Now().Add(e.startTimeout)
	for {
		if cf, ok := configFile(in.port); ok {
			if cf != conf {
				return fmt.Errorf("port %d answers, but not with the %s instance just started (port taken?)", in.port, in.name)
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer PING on port %d within %s (log: %s/redis.log)%s", in.name, in.port, e.startTimeout, dir, logTail(dir))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func logTail(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "redis.log"))
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return "\n    " + strings.Join(lines[max(0, len(lines)-20):], "\n    ")
}

// stop shuts the instance in dir down (SHUTDOWN NOSAVE when it is really ours), falling back
// to its pid, and waits until its port is free.
func (e *env) stop(dir string) error {
	b, _ := os.ReadFile(filepath.Join(dir, "redis.conf"))
	port := 0
	if m := regexp.MustCompile(`(?m)^port (\d+)$`).FindSubmatch(b); m != nil {
		port, _ = strconv.Atoi(string(m[1]))
	}
	pid := readPid(dir)
	if port > 0 {
		if cf, ok := configFile(port); ok && cf == filepath.Join(dir, "redis.conf") {
			if pid <= 0 {
				pid, _ = strconv.Atoi(infoField(port, "server", "process_id"))
			}
			_, _ = do(port, "SHUTDOWN", "NOSAVE") // the connection drops: no reply expected
		}
	}
	if pid > 0 && pidAlive(pid) && !waitGone(pid, 10*time.Second) {
		// Still there: make sure the pid is a Redis of ours (its cwd is its dir) before killing.
		if cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid)); cwd == dir {
			logf("pid %d did not shut down; sending TERM", pid)
			_ = syscall.Kill(pid, syscall.SIGTERM)
			if !waitGone(pid, 10*time.Second) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				if !waitGone(pid, 5*time.Second) {
					return fmt.Errorf("could not stop pid %d (%s)", pid, dir)
				}
			}
		}
	}
	if port > 0 {
		deadline := time.Now().Add(10 * time.Second)
		for ping(port) {
			if time.Now().After(deadline) {
				return fmt.Errorf("port %d still answers after shutdown", port)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

func (e *env) down() error {
	if err := os.MkdirAll(e.cache, 0o755); err != nil {
		return err
	}
	unlock, err := e.lock()
	if err != nil {
		return err
	}
	defer unlock()
	dirs, _ := filepath.Glob(filepath.Join(e.run, "*", "redis.conf"))
	for _, conf := range dirs {
		dir := filepath.Dir(conf)
		if err := e.stop(dir); err != nil {
			return err
		}
		logf("stopped %s", filepath.Base(dir))
	}
	if err := os.RemoveAll(e.run); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(e.cache, "env.sh")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	logf("down")
	return nil
}

// lock holds $CACHE/.lock (flock) for the command's duration, shared with other runs.
func (e *env) lock() (func(), error) {
	if err := os.MkdirAll(e.cache, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(e.cache, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(5 * time.Minute)
	for syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("another redis-env has held %s/.lock for 5 minutes", e.cache)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return func() { f.Close() }, nil
}

func flush(port int) error {
	for _, cmd := range [][]string{{"FLUSHALL", "SYNC"}, {"SCRIPT", "FLUSH"}, {"FUNCTION", "FLUSH"}, {"CONFIG", "RESETSTAT"}} {
		if _, err := do(port, cmd...); err != nil {
			return fmt.Errorf("port %d: %s: %w", port, strings.Join(cmd, " "), err)
		}
	}
	return nil
}

func readPid(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "redis.pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// pidAlive: running and not a zombie (a daemon's exit is reaped by init, sometimes late).
func pidAlive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

func waitGone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for pidAlive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	return true
}
