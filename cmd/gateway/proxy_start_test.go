package main

// The real reverse proxies of the forward-auth end-to-end tests (proxy_test.go): each started
// on loopback, by the test, with the documented config (docs/proxy/*, placeholders filled in),
// and stopped by its pid at cleanup.

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	envNginx   = "HASHGATE_TEST_NGINX"
	envCaddy   = "HASHGATE_TEST_CADDY"
	envTraefik = "HASHGATE_TEST_TRAEFIK"
)

// realProxy is one proxy the end-to-end tests run: the variable naming its binary
// (scripts/proxy-env.sh exports it) and how to start it in front of gateway and app.
type realProxy struct {
	name, env string
	start     func(t *testing.T, bin, gateway, app string) string
}

var realProxies = []realProxy{
	{"nginx", envNginx, startNginx},
	{"caddy", envCaddy, startCaddy},
	{"traefik", envTraefik, startTraefik},
}

// provisionedProxies is the proxies whose binary is provisioned. A missing one is skipped
// (the whole test when none is there), except under CI=true, where it fails the test: a CI run
// never passes without having run every proxy.
func provisionedProxies(t *testing.T) []realProxy {
	t.Helper()
	var have []realProxy
	var missing []string
	for _, p := range realProxies {
		if os.Getenv(p.env) == "" {
			missing = append(missing, p.env)
			continue
		}
		have = append(have, p)
	}
	switch {
	case len(missing) > 0 && os.Getenv("CI") == "true":
		t.Fatalf("CI=true and %s unset: scripts/proxy-env.sh up provisions nginx, caddy and traefik", strings.Join(missing, ", "))
	case len(have) == 0:
		t.Skipf("%s unset: run scripts/test.sh (scripts/proxy-env.sh provisions nginx-light and caddy from Debian's packages "+
			"and builds traefik)", strings.Join(missing, ", "))
	case len(missing) > 0:
		t.Logf("not run (unset): %s", strings.Join(missing, ", "))
	}
	return have
}

// freeLoopbackPort is a port the kernel just handed out on 127.0.0.1 (the proxies cannot
// listen on port 0 and report it); startProxy retries when another process took it meanwhile.
func freeLoopbackPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).AddrPort().String()
}

// proxyProc is a running proxy process started by the test.
type proxyProc struct {
	cmd  *exec.Cmd
	done chan error
	log  string
}

func (p *proxyProc) logs() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// startProxy starts command (built by mk for a listen address) and waits until the address
// accepts connections; it is stopped (TERM, then KILL) at cleanup. A start that fails because
// the port was taken is retried on another port.
func startProxy(t *testing.T, mk func(listen string) *exec.Cmd, logFile string) string {
	t.Helper()
	for attempt := 0; ; attempt++ {
		listen := freeLoopbackPort(t)
		cmd := mk(listen)
		f, err := os.Create(logFile)
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = f, f
		if err := cmd.Start(); err != nil {
			f.Close()
			t.Fatalf("start %s: %v", cmd.Path, err)
		}
		f.Close()
		p := &proxyProc{cmd: cmd, done: make(chan error, 1), log: logFile}
		go func() { p.done <- cmd.Wait() }()
		if err := waitListening(listen, p.done); err != nil {
			stopProxy(t, p)
			if attempt < 3 && strings.Contains(p.logs(), "address already in use") {
				continue
			}
			t.Fatalf("%s did not start: %v\n%s", filepath.Base(cmd.Path), err, p.logs())
		}
		t.Cleanup(func() {
			stopProxy(t, p)
			if t.Failed() {
				t.Logf("%s log:\n%s", filepath.Base(cmd.Path), p.logs())
			}
		})
		return listen
	}
}

func waitListening(addr string, done <-chan error) error {
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			return fmt.Errorf("exited: %v", err)
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("not listening after 15s")
}

// stopProxy ends the process the test started (by its pid): TERM, and KILL after 10s.
func stopProxy(t *testing.T, p *proxyProc) {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Errorf("%s ignored SIGTERM; killing it", filepath.Base(p.cmd.Path))
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// startNginx runs nginx in the foreground with its own prefix, pid file, temp paths and logs in
// a temp dir; the server block is docs/proxy/nginx.conf, included from the http block.
func startNginx(t *testing.T, bin, gateway, app string) string {
	t.Helper()
	return startNginxWith(t, bin, gateway, app, "", "")
}

// startNginxWith is startNginx with extra lines in the http block (httpExtra) and at the top of
// the documented server block (serverExtra).
func startNginxWith(t *testing.T, bin, gateway, app, httpExtra, serverExtra string) string {
	t.Helper()
	dir := t.TempDir()
	return startProxy(t, func(listen string) *exec.Cmd {
		site := proxyConfig(t, "nginx.conf", map[string]string{"@LISTEN@": listen, "@GATEWAY@": gateway, "@APP@": app})
		if serverExtra != "" {
			head := "    listen " + listen + ";\n"
			if !strings.Contains(site, head) {
				t.Fatalf("docs/proxy/nginx.conf has no line %q", head)
			}
			site = strings.Replace(site, head, head+serverExtra, 1)
		}
		if err := os.WriteFile(filepath.Join(dir, "hashgate.conf"), []byte(site), 0o600); err != nil {
			t.Fatal(err)
		}
		main := fmt.Sprintf(`daemon off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log info;
events { worker_connections 256; }
http {
    access_log %[1]s/access.log;
    client_body_temp_path %[1]s/client_body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
%[2]s
    include %[1]s/hashgate.conf;
}
`, dir, httpExtra)
		if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(main), 0o600); err != nil {
			t.Fatal(err)
		}
		return exec.Command(bin, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-e", filepath.Join(dir, "error.log"))
	}, filepath.Join(dir, "stderr.log"))
}

// startCaddy runs `caddy run` with the site of docs/proxy/Caddyfile, the admin endpoint off,
// and HOME and the XDG directories in a temp dir.
func startCaddy(t *testing.T, bin, gateway, app string) string {
	t.Helper()
	dir := t.TempDir()
	return startProxy(t, func(listen string) *exec.Cmd {
		site := proxyConfig(t, "Caddyfile", map[string]string{"@LISTEN@": listen, "@GATEWAY@": gateway, "@APP@": app})
		conf := filepath.Join(dir, "Caddyfile")
		if err := os.WriteFile(conf, []byte("{\n\tadmin off\n\tauto_https off\n}\n\n"+site), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "run", "--config", conf, "--adapter", "caddyfile")
		cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
			"XDG_DATA_HOME="+filepath.Join(dir, "data"), "XDG_CACHE_HOME="+filepath.Join(dir, "cache"))
		return cmd
	}, filepath.Join(dir, "caddy.log"))
}

// startTraefik runs traefik with a static configuration written here (one entry point on the
// listen address, the file provider on docs/proxy/traefik.yml, placeholders filled in).
func startTraefik(t *testing.T, bin, gateway, app string) string {
	t.Helper()
	dir := t.TempDir()
	dynamic := filepath.Join(dir, "dynamic.yml")
	conf := proxyConfig(t, "traefik.yml", map[string]string{"@GATEWAY@": gateway, "@APP@": app})
	if err := os.WriteFile(dynamic, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	base := startProxy(t, func(listen string) *exec.Cmd {
		static := fmt.Sprintf(`global:
  checkNewVersion: false
  sendAnonymousUsage: false
log:
  level: INFO
entryPoints:
  web:
    address: "%s"
providers:
  file:
    filename: "%s"
    watch: false
`, listen, dynamic)
		file := filepath.Join(dir, "traefik.yml")
		if err := os.WriteFile(file, []byte(static), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "--configFile="+file)
		cmd.Env = append(os.Environ(), "HOME="+dir)
		return cmd
	}, filepath.Join(dir, "traefik.log"))
	// The entry point listens before the file provider's routers are in place (404 until then).
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get("http://" + base + "/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("traefik's routers not in place after 15s (last: %v)", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
