package main

// Answers over a raw TCP connection, as a client that net/http's own client would not let us
// be: a body that never completes, oversized or malformed request heads.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// rawAnswer is what a raw client read back.
type rawAnswer struct {
	resp   *http.Response
	body   []byte
	closed bool // the server closed the connection after the answer
	err    error
}

// rawExchange writes head (and the partial body in it) to addr without ever completing the
// body, then reads one response and checks whether the server closes the connection after it.
// Every read is bounded by deadline: an answer that does not come then is an error.
func rawExchange(t *testing.T, addr, head string, deadline time.Duration) rawAnswer {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(deadline)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c, head); err != nil {
		return rawAnswer{err: err}
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return rawAnswer{err: fmt.Errorf("reading the status line and header: %w", err)}
	}
	out := rawAnswer{resp: resp}
	out.body, out.err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if out.err != nil {
		return out
	}
	// Nothing may follow but the end of the connection.
	var one [1]byte
	n, err := br.Read(one[:])
	switch {
	case n == 0 && errors.Is(err, io.EOF):
		out.closed = true
	case n == 0 && isReset(err):
		out.closed = true
	case err != nil:
		out.err = fmt.Errorf("after the answer: %w", err)
	}
	return out
}

func isReset(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "broken pipe"))
}

func problemType(t *testing.T, a rawAnswer) string {
	t.Helper()
	var p struct {
		Type   string `json:"type"`
		Status int    `json:"status"`
	}
	if err := json.Unmarshal(a.body, &p); err != nil || p.Status != a.resp.StatusCode {
		t.Errorf("not a problem for status %d: %q", a.resp.StatusCode, a.body)
	}
	return p.Type
}

// An unauthenticated request whose body is still arriving gets its 401 problem at once (one
// declaring a body over the limit its 413), with
// Connection: close, and the connection is closed — it does not wait for (or read) the rest
// of the body until the read timeout. The read timeout is 30s; the answer must come while the
// body is still incomplete, within a 5s guard (a correctness bound, not a speed claim).
func TestUnauthenticatedSlowBodyAnsweredAtOnce(t *testing.T) {
	t.Parallel()
	if os.Getenv("HASHGATE_TEST_REDIS8") == "" {
		t.Skip("HASHGATE_TEST_REDIS8 is unset (run scripts/test.sh to provision real Redis)")
	}
	addr, _ := realGateway(t, map[string]string{"GATEWAY_READ_TIMEOUT": "30s", "GATEWAY_WRITE_TIMEOUT": "30s"})
	heads := map[string]string{
		"no credential": "POST /v1/quotes HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"customerId\":",
		"bad session token": "DELETE /v1/session HTTP/1.1\r\nHost: gw\r\nX-Session-Token: not-a-token\r\nContent-Type: application/json\r\n" +
			"Content-Length: 1000\r\n\r\n{\"a\":",
		"bad bearer, chunked": "POST /v1/tokens HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer a.b.c\r\nContent-Type: application/json\r\n" +
			"Transfer-Encoding: chunked\r\n\r\n10\r\n{\"subject\":",
		"forward auth with a body": "GET /v1/authorize HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{",
		// Over the body limit (64 KiB) but under what net/http would drain (256 KiB).
		"declared too large": "POST /v1/quotes HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"a\":",
	}
	for name, head := range heads {
		a := rawExchange(t, addr, head, 5*time.Second)
		if a.err != nil || a.resp == nil {
			t.Errorf("%s: no complete answer while the body is incomplete: %v", name, a.err)
			continue
		}
		want := http.StatusUnauthorized
		if name == "declared too large" {
			want = http.StatusRequestEntityTooLarge
		}
		if a.resp.StatusCode != want || a.resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: %d %q %s, want a %d problem", name, a.resp.StatusCode, a.resp.Header.Get("Content-Type"), a.body, want)
		}
		problemType(t, a)
		if !a.resp.Close || !a.closed {
			t.Errorf("%s: connection kept open after refusing an unread body (Connection: %q, closed %v)",
				name, a.resp.Header.Get("Connection"), a.closed)
		}
	}
}

// The refusals net/http writes by itself, before any handler runs, reach the client as RFC
// 9457 problems like every other refusal (not text/plain), and the connection is closed.
func TestServerLevelRefusalsAreProblems(t *testing.T) {
	t.Parallel()
	if os.Getenv("HASHGATE_TEST_REDIS8") == "" {
		t.Skip("HASHGATE_TEST_REDIS8 is unset (run scripts/test.sh to provision real Redis)")
	}
	addr, _ := realGateway(t, nil)
	big := strings.Repeat("a", 64<<10)
	tests := []struct {
		name, head string
		status     int
		slug       string
	}{
		{"oversized header", "GET /v1/authorize HTTP/1.1\r\nHost: gw\r\nCookie: __Host-hg_session=" + big + "\r\n\r\n", 431, "header-too-large"},
		{"many headers", "GET /healthz HTTP/1.1\r\nHost: gw\r\n" + strings.Repeat("X-Pad: "+strings.Repeat("p", 1000)+"\r\n", 40) + "\r\n", 431, "header-too-large"},
		{"malformed request line", "GARBAGE\r\n\r\n", 400, "malformed-request"},
		{"no Host", "GET /healthz HTTP/1.1\r\n\r\n", 400, "malformed-request"},
		{"invalid header name", "GET /healthz HTTP/1.1\r\nHost: gw\r\nBad Header: x\r\n\r\n", 400, "malformed-request"},
		{"invalid header value", "GET /healthz HTTP/1.1\r\nHost: gw\r\nX-A: a\x01b\r\n\r\n", 400, "malformed-request"},
		{"two Content-Lengths", "POST /v1/quotes HTTP/1.1\r\nHost: gw\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400, "malformed-request"},
		{"unsupported transfer coding", "POST /v1/quotes HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "unsupported-transfer-coding"},
		{"unsupported HTTP version", "GET /healthz HTTP/3.0\r\nHost: gw\r\n\r\n", 505, "http-version-not-supported"},
		{"unknown expectation", "GET /healthz HTTP/1.1\r\nHost: gw\r\nExpect: the-unexpected\r\n\r\n", 417, "expectation-failed"},
	}
	for _, tt := range tests {
		a := rawExchange(t, addr, tt.head, 5*time.Second)
		if a.err != nil || a.resp == nil {
			t.Errorf("%s: %v", tt.name, a.err)
			continue
		}
		if a.resp.StatusCode != tt.status || a.resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: %s, Content-Type %q: %q; want %d application/problem+json", tt.name, a.resp.Status,
				a.resp.Header.Get("Content-Type"), a.body, tt.status)
			continue
		}
		if got := problemType(t, a); got != "/problems/"+tt.slug {
			t.Errorf("%s: problem type %q, want .../%s", tt.name, got, tt.slug)
		}
		if !a.resp.Close || !a.closed {
			t.Errorf("%s: connection not closed after the refusal", tt.name)
		}
	}
	// The connection still serves normal requests, and keeps them alive.
	a := rawExchange(t, addr, "GET /healthz HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n", 5*time.Second)
	if a.err != nil || a.resp.StatusCode != 200 || a.resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("healthz after the refusals: %+v", a)
	}
}
