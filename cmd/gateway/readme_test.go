package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/testredis"
)

// readmeBlockMarker precedes the README's real-Redis steps; the test runs that block as written.
const readmeBlockMarker = "<!-- The block below is run twice, as written, by cmd/gateway/readme_test.go. -->"

// readmeSteps is the shell block after the marker in README.md.
func readmeSteps(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), readmeBlockMarker)
	m := regexp.MustCompile("(?s)^\\s*```sh\n(.*?)```").FindStringSubmatch(after)
	if !ok || m == nil {
		t.Fatal("README.md has no marked real-Redis shell block")
	}
	return m[1]
}

// The README's real-Redis steps, run twice in the same shell setup as a newcomer would (the
// second time after stopping the gateway): both runs succeed, the second keeps the keys, the
// bootstrap token, and every token and session made in the first run keeps working. Nothing
// is written into the working directory (the checkout). The steps are taken from README.md
// as written; only `go run ./cmd/gateway` becomes the built binary and the Redis URL the test
// server's.
func TestReadmeRealRedisStepsSurviveARestart(t *testing.T) {
	t.Parallel()
	url := os.Getenv(testredis.EnvRedis8)
	if url == "" {
		t.Skipf("%s is unset", testredis.EnvRedis8)
	}
	steps := readmeSteps(t)
	const readmeURL = "redis://127.0.0.1:6390"
	if !strings.Contains(steps, readmeURL) || !strings.Contains(steps, "go run ./cmd/gateway") {
		t.Fatalf("the README steps changed shape (want %s and go run ./cmd/gateway):\n%s", readmeURL, steps)
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "gateway")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	steps = strings.ReplaceAll(strings.ReplaceAll(steps, "go run ./cmd/gateway", bin), readmeURL, url)
	// After the steps: report the tokens, then keep the shell (and its gateway) until stopped.
	script := steps + "\necho \"HG_TOKEN=$HG_TOKEN\"\necho \"SVC_TOKEN=$SVC_TOKEN\"\necho STEPS-DONE\nwait\n"

	home, checkout := filepath.Join(tmp, "home"), filepath.Join(tmp, "checkout")
	for _, d := range []string{home, checkout} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	var env []string
	var base string
	// onFreePort points the steps' gateway at a port the kernel just handed out.
	onFreePort := func() {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GATEWAY_ADDR=" + addr, "GATEWAY_ADMIN_ADDR=127.0.0.1:0",
			"GATEWAY_KEY_PREFIX=" + testredis.Prefix(t), "GATEWAY_LOG_LEVEL=warn"}
		base = "http://" + addr
	}
	onFreePort()

	// runSteps runs the steps; a gateway that found its port taken by another process (which
	// may even answer the steps' health check) runs them again on another port.
	var runSteps func(run int) (vals map[string]string, stop func())
	runOnce := func(run int) (vals map[string]string, stop func(), portTaken bool) {
		t.Helper()
		cmd := exec.Command("bash", "-e", "-c", script)
		cmd.Dir, cmd.Env = checkout, env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		stderr := &syncBuffer{}
		cmd.Stderr = stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		stop = func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			_ = cmd.Wait()
		}
		vals = map[string]string{}
		lines := make(chan string)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		timeout := time.After(60 * time.Second)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					stop()
					t.Fatalf("run %d: the steps ended early:\n%s", run, stderr)
				}
				if line == "STEPS-DONE" {
					go func() { _, _ = io.Copy(io.Discard, out) }()
					if strings.Contains(stderr.String(), "address already in use") {
						stop()
						return nil, nil, true
					}
					return vals, stop, false
				}
				vals["out"] += line + "\n"
				if k, v, ok := strings.Cut(line, "="); ok {
					vals[k] = v
				}
			case <-tick.C:
				if strings.Contains(stderr.String(), "address already in use") {
					stop()
					return nil, nil, true
				}
			case <-timeout:
				stop()
				t.Fatalf("run %d: the steps did not finish:\n%s", run, stderr)
			}
		}
	}
	runSteps = func(run int) (map[string]string, func()) {
		t.Helper()
		for attempt := 1; ; attempt++ {
			vals, stop, taken := runOnce(run)
			if !taken {
				return vals, stop
			}
			if attempt == 3 {
				t.Fatalf("run %d: the gateway's port was taken 3 times", run)
			}
			onFreePort()
		}
	}
	call := func(method, path, body string, header ...string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&v)
		return resp.StatusCode, v
	}

	run1, stop1 := runSteps(1)
	svc, admin := run1["SVC_TOKEN"], run1["HG_TOKEN"]
	if svc == "" || admin == "" {
		stop1()
		t.Fatalf("run 1 made no tokens:\n%s", run1["out"])
	}
	code, sess := call("POST", "/v1/sessions", `{"userId":"alice","authLevel":"BASIC"}`, "Authorization", "Bearer "+svc)
	if code != 201 {
		stop1()
		t.Fatalf("run 1: create a session with the minted token: %d %v", code, sess)
	}
	sessionID, sessionToken := sess["sessionId"].(string), sess["token"].(string)
	stop1()

	run2, stop2 := runSteps(2)
	defer stop2()
	if !strings.Contains(run2["out"], "kept existing") {
		t.Errorf("run 2 did not keep the keys:\n%s", run2["out"])
	}
	if run2["HG_TOKEN"] != admin {
		t.Errorf("run 2 replaced the live bootstrap token")
	}
	for what, c := range map[string]func() (int, map[string]any){
		"run 1's minted token": func() (int, map[string]any) {
			return call("GET", "/v1/sessions/"+sessionID, "", "Authorization", "Bearer "+svc)
		},
		"run 1's session token": func() (int, map[string]any) { return call("GET", "/v1/session", "", "X-Session-Token", sessionToken) },
		"run 1's admin token":   func() (int, map[string]any) { return call("GET", "/v1/tokens", "", "Authorization", "Bearer "+admin) },
		"run 2's minted token": func() (int, map[string]any) {
			return call("GET", "/v1/sessions/"+sessionID, "", "Authorization", "Bearer "+run2["SVC_TOKEN"])
		},
	} {
		if code, body := c(); code != 200 {
			t.Errorf("%s after the restart: %d %v", what, code, body)
		}
	}
	if entries, _ := os.ReadDir(checkout); len(entries) > 0 {
		t.Errorf("the steps wrote into the checkout: %v", entries)
	}
}
