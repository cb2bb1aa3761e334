package handlers

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A handler's own answers pass ShapeRefusals untouched, even plain-text refusals with
// Connection: close and the statuses net/http uses for its own; net/http's own refusal on the
// same server is shaped. (The gateway-level proof over every kind is
// cmd/gateway TestServerLevelRefusalsAreProblems.)
func TestShapeRefusalsLeavesHandlerAnswersAlone(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, MaxHeaderBytes: 1 << 10,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Connection", "close")
			code := map[string]int{"/400": 400, "/431": 431, "/501": 501, "/505": 505}[r.URL.Path]
			http.Error(w, strings.TrimPrefix(r.URL.Path, "/")+" "+http.StatusText(code), code)
		})}
	go func() { _ = srv.Serve(ShapeRefusals(ln, 1<<10, "https://gw.example/hg/")) }()
	t.Cleanup(func() { _ = srv.Close() })
	send := func(head string) (*http.Response, string) {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, head); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	for _, path := range []string{"/400", "/431", "/501", "/505"} {
		resp, body := send("GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n")
		if resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" || !strings.HasPrefix(body, path[1:]) {
			t.Errorf("handler answer %s was rewritten: %s %v %q", path, resp.Status, resp.Header, body)
		}
	}
	resp, body := send("GET /400 HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("b", 8<<10) + "\r\n\r\n")
	if resp.StatusCode != 431 || resp.Header.Get("Content-Type") != "application/problem+json" ||
		!strings.Contains(body, `"type":"https://gw.example/hg/problems/header-too-large"`) || !strings.Contains(body, "1024 bytes") {
		t.Errorf("net/http's 431 not shaped: %s %v %q", resp.Status, resp.Header, body)
	}
}

// The check every response passes through does not allocate.
func TestShapeRefusalPassThroughAllocs(t *testing.T) {
	resp := []byte("HTTP/1.1 200 OK\r\nCache-Control: no-store\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
	if n := testing.AllocsPerRun(100, func() {
		if _, ok := shapeRefusal(resp, 1024, ""); ok {
			t.Fatal("a 200 was shaped")
		}
	}); n != 0 {
		t.Errorf("%v allocations per response", n)
	}
}
