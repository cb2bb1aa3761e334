package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// otlpSink is a local OTLP/HTTP trace receiver: it keeps every export's (decompressed) body.
type otlpSink struct {
	mu      sync.Mutex
	exports [][]byte
}

func (s *otlpSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if r.URL.Path == "/v1/traces" {
		s.mu.Lock()
		s.exports = append(s.exports, b)
		s.mu.Unlock()
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

func (s *otlpSink) snapshot() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.exports...)
}

// Cancelling serve's context (what SIGINT/SIGTERM do in main) drains: a request whose body is
// still arriving completes with its normal 201, new connections are refused from the moment
// shutdown starts, serve returns nil, and the spans still queued — the in-flight request's
// included — are exported to the OTLP endpoint on the way out.
//
// Not parallel: the span exporter reads the standard OTEL_* variables from the process
// environment (t.Setenv).
func TestGracefulShutdownDrainsAndFlushes(t *testing.T) {
	sink := &otlpSink{}
	collector := httptest.NewServer(sink)
	defer collector.Close()
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	// The batcher exports only when asked: on shutdown (an hour's delay, a huge batch size).
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "3600000")
	t.Setenv("OTEL_BSP_MAX_QUEUE_SIZE", "65536")
	t.Setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "65536")

	const shutdownTimeout = 30 * time.Second
	env := map[string]string{"GATEWAY_ADDR": "127.0.0.1:0", "GATEWAY_ADMIN_ADDR": "127.0.0.1:0", "GATEWAY_SHUTDOWN_TIMEOUT": shutdownTimeout.String()}
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, func(k string) string { return env[k] }, stdout, stderr, ready) }()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("gateway exited: %v\n%s", err, stderr)
	case <-time.After(15 * time.Second):
		t.Fatal("gateway did not start")
	}
	m := regexp.MustCompile(`export HG_TOKEN=(\S+)`).FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("no bootstrap token printed:\n%s", stdout)
	}

	// Start a POST /v1/tokens. It asks for 100-continue, so the interim answer proves the
	// server has read the headers and the handler is waiting for the body (a connection still
	// in the kernel's accept queue when the listener closes cannot be drained by any server).
	// Then send half of the body.
	body := `{"subject":"svc-drain","scopes":["tokens:read"],"ttlSeconds":600,"tokenType":"service"}`
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(shutdownTimeout))
	head := fmt.Sprintf("POST /v1/tokens HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n",
		addr, m[1], len(body))
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != http.StatusContinue {
		t.Fatalf("no 100 Continue: %v %v", resp, err)
	}
	if _, err := io.WriteString(conn, body[:len(body)/2]); err != nil {
		t.Fatal(err)
	}
	if n := len(sink.snapshot()); n != 0 {
		t.Fatalf("%d span exports before shutdown: the test could not tell a shutdown flush apart", n)
	}

	cancel()
	// Shutdown has started once new connections are refused (the listener is closed first).
	deadline := time.Now().Add(shutdownTimeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("new connections still accepted after the context was cancelled")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("serve returned (%v) while a request was in flight", err)
	default:
	}

	// The rest of the body arrives after shutdown began: the request still completes normally.
	if _, err := io.WriteString(conn, body[len(body)/2:]); err != nil {
		t.Fatalf("in-flight connection closed during shutdown: %v", err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("in-flight request got no response: %v\n%s", err, stderr)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || !strings.Contains(string(got), `"tokenId"`) {
		t.Fatalf("in-flight request: %d %s", resp.StatusCode, got)
	}

	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v, want nil", err)
		}
	case <-time.After(shutdownTimeout + 10*time.Second): // drain bound + the telemetry flush bound
		t.Fatal("serve did not return after the drain")
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatal("a connection was accepted after serve returned")
	}

	exports := sink.snapshot()
	if len(exports) == 0 {
		t.Fatalf("no spans exported at shutdown\n%s", stderr)
	}
	// The in-flight request's server span ended after cancel: only the shutdown flush sent it.
	all := bytes.Join(exports, nil)
	if !bytes.Contains(all, []byte("/v1/tokens")) || !bytes.Contains(all, []byte("hashgate")) {
		t.Fatalf("the exported spans do not include the drained request (%d exports, %d bytes)", len(exports), len(all))
	}
	if !strings.Contains(stderr.String(), "stopped") {
		t.Fatalf("no clean stop logged:\n%s", stderr)
	}
}
