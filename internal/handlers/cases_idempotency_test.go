package handlers

import (
	"bytes"
	"context"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/cases"
	"github.com/hashgate/hashgate/internal/idempotency"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/repo/casestore"
	"github.com/hashgate/hashgate/internal/repo/idemstore"
	"github.com/hashgate/hashgate/internal/testredis"
)

// heldIdem holds the first Complete it sees until release is closed: the first request has
// claimed its Idempotency-Key and created the case, but its response is not stored yet, so the
// key is still in flight.
type heldIdem struct {
	idempotency.Store
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (h *heldIdem) Complete(ctx context.Context, cl *idempotency.Claim, resp idempotency.Response) error {
	held := false
	h.once.Do(func() { held = true })
	if held {
		close(h.entered)
		<-h.release
	}
	return h.Store.Complete(ctx, cl, resp)
}

// TestCaseHTTPInFlight: while the first POST /v1/cases with an Idempotency-Key is still
// running (held after it created the case, before it stored its response), an identical retry
// answers 409 request-in-flight with Retry-After; once the first completes, a replay answers
// its status, body, ETag and Location byte for byte. The quotes counterpart is
// TestQuoteHTTPInFlight; this one holds a real first request rather than a bare claim, and
// runs on every backend.
func TestCaseHTTPInFlight(t *testing.T) {
	t.Parallel()
	for _, b := range testredis.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			held := &heldIdem{entered: make(chan struct{}), release: make(chan struct{})}
			var releaseOnce sync.Once
			release := func() { releaseOnce.Do(func() { close(held.release) }) }
			t.Cleanup(release) // never leave the first request hanging when the test fails
			h := newHarness(t, b, func(h *harness, d *Deps) {
				hasher, err := keyhash.New(bytes.Repeat([]byte{9}, 32))
				if err != nil {
					t.Fatal(err)
				}
				idem, err := idemstore.New(h.store, idemstore.Options{Prefix: h.prefix, Hasher: hasher, TTL: time.Hour})
				if err != nil {
					t.Fatal(err)
				}
				c, err := casestore.New(h.store, casestore.Options{Prefix: h.prefix, Hasher: hasher, OpenTTL: 48 * time.Hour})
				if err != nil {
					t.Fatal(err)
				}
				held.Store = idem
				if d.Cases, err = cases.New(c, idempotency.New(held, hasher, nil)); err != nil {
					t.Fatal(err)
				}
			})
			auth := h.bearer("acme", "cases:read", "cases:write")
			body := caseBody(time.Now().Add(time.Hour))
			const key = "case-in-flight-0001"

			firstDone := make(chan *httptest.ResponseRecorder, 1)
			go func() {
				firstDone <- h.do("POST", "/v1/cases", body, "Authorization", auth, "Idempotency-Key", key)
			}()
			select {
			case <-held.entered:
			case rec := <-firstDone:
				t.Fatalf("first request finished without storing its response: %d %s", rec.Code, rec.Body)
			}

			keys := testredis.KeyCount(t, h.store, h.prefix)
			retry := h.do("POST", "/v1/cases", body, "Authorization", auth, "Idempotency-Key", key)
			if n := testredis.KeyCount(t, h.store, h.prefix); n != keys {
				t.Errorf("the in-flight retry changed the key count from %d to %d", keys, n)
			}
			p := wantProblem(t, retry, 409, "request-in-flight")
			ra := retry.Header().Get("Retry-After")
			secs, err := strconv.Atoi(ra)
			if err != nil || secs < 1 {
				t.Fatalf("409 in flight: Retry-After %q, want whole seconds ≥ 1", ra)
			}
			if p.RetryAfter != secs {
				t.Errorf("problem retryAfter %d, Retry-After header %q", p.RetryAfter, ra)
			}
			if retry.Header().Get("Location") != "" || retry.Header().Get("ETag") != "" || retry.Header().Get("Idempotent-Replayed") != "" {
				t.Errorf("409 in flight carries created-resource headers: %v", retry.Header())
			}

			release()
			first := <-firstDone
			wantStatus(t, first, 201)
			var c caseJSON
			decode(t, first, &c)
			if c.CaseId == "" || first.Header().Get("ETag") != `"1"` || first.Header().Get("Location") != "/v1/cases/"+c.CaseId ||
				first.Header().Get("Idempotent-Replayed") != "" {
				t.Fatalf("first: %v %s", first.Header(), first.Body)
			}

			replay := h.do("POST", "/v1/cases", body, "Authorization", auth, "Idempotency-Key", key)
			wantStatus(t, replay, first.Code)
			if !bytes.Equal(replay.Body.Bytes(), first.Body.Bytes()) {
				t.Errorf("replay body differs:\nfirst  %q\nreplay %q", first.Body.Bytes(), replay.Body.Bytes())
			}
			for _, hdr := range []string{"ETag", "Location", "Content-Type"} {
				if got, want := replay.Header().Values(hdr), first.Header().Values(hdr); len(got) != 1 || len(want) != 1 || got[0] != want[0] {
					t.Errorf("replay %s %q, first %q", hdr, got, want)
				}
			}
			if replay.Header().Get("Idempotent-Replayed") != "true" {
				t.Errorf("replay without Idempotent-Replayed: %v", replay.Header())
			}

			rec := h.do("GET", "/v1/cases/"+c.CaseId, nil, "Authorization", auth)
			wantStatus(t, rec, 200)
			if rec.Header().Get("ETag") != `"1"` {
				t.Errorf("case after retry and replay: ETag %q, want \"1\"", rec.Header().Get("ETag"))
			}
			requireKeysHaveTTL(t, h)
		})
	}
}
