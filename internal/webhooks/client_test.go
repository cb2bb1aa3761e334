package webhooks

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestPublicAddr: loopback, private, link-local (the cloud metadata address), CGNAT,
// unspecified and IPv4-mapped forms of them are not public; ordinary addresses are.
func TestPublicAddr(t *testing.T) {
	for _, a := range []string{"127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1",
		"0.0.0.0", "::1", "fe80::1", "fc00::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "224.0.0.1", "64:ff9b::a00:1", "192.0.2.1"} {
		if PublicAddr(net.ParseIP(a)) {
			t.Errorf("PublicAddr(%s) = true", a)
		}
	}
	for _, a := range []string{"93.184.216.34", "8.8.8.8", "2606:4700::1111"} {
		if !PublicAddr(net.ParseIP(a)) {
			t.Errorf("PublicAddr(%s) = false", a)
		}
	}
}

// TestSendRefusesPrivateAtDial: without GATEWAY_WEBHOOK_ALLOW_PRIVATE a delivery to a loopback
// receiver — by address or by a name that resolves to it — never reaches it: refused at dial.
func TestSendRefusesPrivateAtDial(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	c := NewClient(time.Second, false)
	byName := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	for _, u := range []string{srv.URL, byName} {
		res := send(context.Background(), c, u, []byte("k"), "m1", []byte("{}"))
		if res.ok() || !strings.Contains(res.err, ErrPrivateAddress.Error()) {
			t.Errorf("%s: %+v", u, res)
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("the private receiver was reached %d times", hits.Load())
	}
	if res := send(context.Background(), NewClient(time.Second, true), srv.URL, []byte("k"), "m1", []byte("{}")); !res.ok() {
		t.Fatalf("allowed: %+v", res)
	}
}

// TestSendDoesNotFollowRedirects: a 3xx is a failed attempt naming why; the target is never hit.
func TestSendDoesNotFollowRedirects(t *testing.T) {
	var target atomic.Int32
	dst := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { target.Add(1) }))
	defer dst.Close()
	src := httptest.NewServer(http.RedirectHandler(dst.URL, http.StatusTemporaryRedirect))
	defer src.Close()
	res := send(context.Background(), NewClient(time.Second, true), src.URL, []byte("k"), "m1", []byte("{}"))
	if res.ok() || res.status != http.StatusTemporaryRedirect || !strings.Contains(res.err, "redirects are not followed") || target.Load() != 0 {
		t.Fatalf("redirect: %+v, target hit %d", res, target.Load())
	}
}

// TestSendBoundedAndTimed: an endless answer is read no further than maxResponseBytes, and a
// receiver that never answers fails the attempt at the timeout.
func TestSendBoundedAndTimed(t *testing.T) {
	var written atomic.Int64
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 1<<16)
		for range 1 << 10 { // 64 MiB if the client read it all
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	defer big.Close()
	start := time.Now()
	if res := send(context.Background(), NewClient(5*time.Second, true), big.URL, []byte("k"), "m1", []byte("{}")); !res.ok() {
		t.Fatalf("big answer: %+v", res)
	}
	if time.Since(start) > 3*time.Second || written.Load() >= 64<<20 {
		t.Fatalf("read the whole answer: %d bytes written in %v", written.Load(), time.Since(start))
	}
	block := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(block)
	start = time.Now()
	res := send(context.Background(), NewClient(300*time.Millisecond, true), slow.URL, []byte("k"), "m1", []byte("{}"))
	if res.ok() || res.status != 0 || time.Since(start) > 2*time.Second {
		t.Fatalf("silent receiver: %+v after %v", res, time.Since(start))
	}
	if !strings.Contains(res.err, "timeout") {
		t.Fatalf("timeout error reads %q", res.err)
	}
}
