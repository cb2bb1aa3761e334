package handlers

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/hashgate/hashgate/internal/testredis"
)

// Every session operation, driven through the HTTP API with tracing on, is traced down to
// its Redis calls, and no span carries a session token, an MFA code or the raw user id.
//
// For each operation the test asserts:
//   - at least one Redis command span (kind client, db.system=redis), every one in the
//     request's trace (rueidisotel's "redis.dial" spans, for connections rueidis opens lazily,
//     are not commands and are left out of the counts, but are checked for secrets too);
//   - Redis spans = calls into the client (rueidisotel makes exactly one span per Do, DoMulti
//     or DoCache) and = round trips + client-side cache hits. Where nothing is served from
//     the cache (every operation but a cached authorize) that is spans = round trips. A
//     cached authorize whose HMGET is a cache hit still produces one span (rueidisotel wraps
//     DoCache whether or not it reaches Redis) for zero round trips; that is asserted
//     exactly where the store has client-side caching (not the embedded store).
func TestEverySessionOperationIsTraced(t *testing.T) {
	t.Parallel()
	for _, b := range testredis.Backends() {
		for _, cacheTTL := range []time.Duration{0, time.Minute} {
			t.Run(fmt.Sprintf("%s/cacheTTL=%v", b.Name, cacheTTL), func(t *testing.T) {
				t.Parallel()
				runSessionTraceFlow(t, b, cacheTTL)
			})
		}
	}
}

func runSessionTraceFlow(t *testing.T, b testredis.Backend, cacheTTL time.Duration) {
	var counter *testredis.Recorder
	h, exp := tracedHarness(t, b, func(h *harness, d *Deps) {
		counter = testredis.NewCounter(h.store.Client)
		counted := *h.store
		counted.Client = counter
		svc, _ := newSessionService(t, &counted, h.prefix, cacheTTL)
		d.Sessions, d.SessionAuth = svc, svc
		// Every Redis span of a step is the session service's: the bearer check reads nothing.
		d.TokenCheck = acceptSigned
	})
	cached := cacheTTL > 0 && h.store.Caps.ClientCache
	// A raw user id distinctive enough that finding it anywhere is a leak, not a coincidence.
	const userID = "user.Q7trace-4c1d@example.test"
	write, read := h.bearer("acme", "sessions:write"), h.bearer("acme", "sessions:read")
	var secrets []string // tokens and codes handed out so far
	var all tracetest.SpanStubs
	seen := map[string]bool{}

	// step runs one request and checks its spans; it returns the response. hotStep is a read of
	// a session already decoded from the client-side cache: with the cache on it is answered in
	// the process (no client call, so no Redis span); otherwise it is checked like any step.
	var hot bool
	step := func(name string, wantStatus int, send func() *httptest.ResponseRecorder) *httptest.ResponseRecorder {
		t.Helper()
		inProcess := hot && cached
		hot = false
		exp.Reset()
		counter.Reset()
		rec := send()
		if rec.Code != wantStatus {
			t.Fatalf("%s: status %d, want %d; body %s", name, rec.Code, wantStatus, rec.Body)
		}
		spans := exp.GetSpans()
		all = append(all, spans...)
		var server *tracetest.SpanStub
		for i := range spans {
			if spans[i].SpanKind == trace.SpanKindServer {
				server = &spans[i]
			}
		}
		if server == nil {
			t.Fatalf("%s: no server span among %d spans", name, len(spans))
		}
		var names []string
		for _, s := range spans {
			// rueidisotel also traces connection dials ("redis.dial"): they are not commands,
			// and when one happens (a lazily opened connection) is not the request's doing.
			if !isRedisSpan(s) || s.Name == redisDialSpan {
				continue
			}
			names = append(names, s.Name)
			if s.SpanContext.TraceID() != server.SpanContext.TraceID() {
				t.Errorf("%s: redis span %q is outside the request's trace", name, s.Name)
			}
		}
		calls, trips, hits := counter.Calls(), counter.Trips(), counter.Hits()
		n := int64(len(names))
		t.Logf("%s: %d redis spans %v, %d round trips, %d cache hits", name, n, names, trips, hits)
		switch {
		case inProcess && (n != 0 || calls != 0):
			t.Errorf("%s: %d redis spans %v and %d client calls for a session decoded from the cache, want none", name, n, names, calls)
		case !inProcess && n == 0:
			t.Errorf("%s: no redis client span", name)
		}
		if n != calls || n != trips+hits {
			t.Errorf("%s: %d redis spans %v for %d client calls, %d round trips and %d cache hits", name, n, names, calls, trips, hits)
		}
		seen[name] = true
		return rec
	}
	hotStep := func(name string, wantStatus int, send func() *httptest.ResponseRecorder) *httptest.ResponseRecorder {
		t.Helper()
		hot = true
		return step(name, wantStatus, send)
	}

	created := step("create", http.StatusCreated, func() *httptest.ResponseRecorder {
		return h.do("POST", "/v1/sessions", map[string]any{"userId": userID, "authLevel": "BASIC",
			"device": map[string]any{"label": "phone"}}, "Authorization", write)
	})
	var tok SessionToken
	decode(t, created, &tok)
	secrets = append(secrets, tok.Token)

	step("get", http.StatusOK, func() *httptest.ResponseRecorder {
		return h.do("GET", "/v1/sessions/"+tok.SessionId, nil, "Authorization", read)
	})
	step("whoami", http.StatusOK, func() *httptest.ResponseRecorder {
		return h.do("GET", "/v1/session", nil, "X-Session-Token", tok.Token)
	})
	// whoami read the session: with the cache on, it is now decoded in the process and the
	// next reads make no client call at all (so no span: nothing reaches Redis).
	hotStep("authorize", http.StatusOK, func() *httptest.ResponseRecorder {
		return h.do("GET", "/v1/authorize", nil, "X-Session-Token", tok.Token)
	})
	hotStep("authorize again", http.StatusOK, func() *httptest.ResponseRecorder {
		return h.do("GET", "/v1/authorize", nil, "Cookie", cookie(tok.Token))
	})
	if got := [2]int64{counter.Trips(), counter.Hits()}; got != [2]int64{0, 0} && cached {
		t.Errorf("cached authorize again: %d round trips, %d client cache hits; want neither", got[0], got[1])
	} else if !cached && got[1] != 0 {
		t.Errorf("uncached authorize reported %d cache hits", got[1])
	}
	hotStep("authorize step-up refused", http.StatusForbidden, func() *httptest.ResponseRecorder {
		return h.do("GET", "/v1/authorize?level=MFA", nil, "X-Session-Token", tok.Token)
	})

	ch := step("mfa challenge", http.StatusCreated, func() *httptest.ResponseRecorder {
		return h.do("POST", "/v1/sessions/"+tok.SessionId+"/mfa/challenge", nil, "Authorization", write)
	})
	var c MfaChallenge
	decode(t, ch, &c)
	secrets = append(secrets, c.Code)
	step("mfa verify wrong", http.StatusUnprocessableEntity, func() *httptest.ResponseRecorder {
		return h.do("POST", "/v1/sessions/"+tok.SessionId+"/mfa/verify",
			map[string]string{"challengeId": c.ChallengeId, "code": otherCode(c.Code)}, "Authorization", write)
	})
	vr := step("mfa verify right", http.StatusOK, func() *httptest.ResponseRecorder {
		return h.do("POST", "/v1/sessions/"+tok.SessionId+"/mfa/verify",
			map[string]string{"challengeId": c.ChallengeId, "code": c.Code}, "Authorization", write)
	})
	var up MfaVerified
	decode(t, vr, &up)
	secrets = append(secrets, up.Token)

	rr := step("rotate", http.StatusOK, func() *httptest.ResponseRecorder {
		return h.do("POST", "/v1/sessions/"+up.SessionId+"/rotate", nil, "Authorization", write)
	})
	var rot SessionToken
	decode(t, rr, &rot)
	secrets = append(secrets, rot.Token)

	lr := step("create second device", http.StatusCreated, func() *httptest.ResponseRecorder {
		return h.do("POST", "/v1/sessions", map[string]any{"userId": userID, "authLevel": "BASIC"}, "Authorization", write)
	})
	var laptop SessionToken
	decode(t, lr, &laptop)
	secrets = append(secrets, laptop.Token)
	tr := step("create third device", http.StatusCreated, func() *httptest.ResponseRecorder {
		return h.do("POST", "/v1/sessions", map[string]any{"userId": userID, "authLevel": "BASIC"}, "Authorization", write)
	})
	var tablet SessionToken
	decode(t, tr, &tablet)
	secrets = append(secrets, tablet.Token)
	fr := step("create fourth device", http.StatusCreated, func() *httptest.ResponseRecorder {
		return h.do("POST", "/v1/sessions", map[string]any{"userId": userID, "authLevel": "BASIC"}, "Authorization", write)
	})
	var fourth SessionToken
	decode(t, fr, &fourth)
	secrets = append(secrets, fourth.Token)

	step("list user sessions", http.StatusOK, func() *httptest.ResponseRecorder {
		return h.do("GET", "/v1/users/"+userID+"/sessions", nil, "Authorization", read)
	})
	step("list own devices", http.StatusOK, func() *httptest.ResponseRecorder {
		return h.do("GET", "/v1/session/devices", nil, "X-Session-Token", rot.Token)
	})
	step("revoke own device", http.StatusNoContent, func() *httptest.ResponseRecorder {
		return h.do("DELETE", "/v1/session/devices/"+laptop.SessionId, nil, "X-Session-Token", rot.Token)
	})
	step("revoke", http.StatusNoContent, func() *httptest.ResponseRecorder {
		return h.do("DELETE", "/v1/sessions/"+tablet.SessionId, nil, "Authorization", write)
	})
	ra := step("revoke all", http.StatusOK, func() *httptest.ResponseRecorder {
		return h.do("DELETE", "/v1/users/"+userID+"/sessions?except="+rot.SessionId, nil, "Authorization", write)
	})
	if got := strings.TrimSpace(ra.Body.String()); got != `{"revoked":1}` {
		t.Errorf("revoke all: %s, want one revoked (the fourth device)", got)
	}
	step("logout", http.StatusNoContent, func() *httptest.ResponseRecorder {
		return h.do("DELETE", "/v1/session", nil, "Cookie", cookie(rot.Token))
	})
	// Read-your-writes: this gateway refuses the token at once, cached copy or not.
	step("authorize after logout", http.StatusUnauthorized, func() *httptest.ResponseRecorder {
		return h.do("GET", "/v1/authorize", nil, "X-Session-Token", rot.Token)
	})

	for _, op := range []string{"create", "whoami", "authorize", "authorize again", "mfa challenge", "mfa verify wrong",
		"mfa verify right", "rotate", "list user sessions", "list own devices", "revoke own device", "revoke",
		"revoke all", "logout"} {
		if !seen[op] {
			t.Errorf("operation %q did not run", op)
		}
	}
	assertNoSessionSecret(t, all, userID, secrets)
}

// redisDialSpan is the name rueidisotel gives the span of a connection dial.
const redisDialSpan = "redis.dial"

// isRedisSpan reports whether s is a rueidisotel span: kind client, db.system=redis.
func isRedisSpan(s tracetest.SpanStub) bool {
	if s.SpanKind != trace.SpanKindClient {
		return false
	}
	for _, a := range s.Attributes {
		if a.Key == "db.system" && a.Value.AsString() == "redis" {
			return true
		}
	}
	return false
}

// assertNoSessionSecret fails when a Redis span (name, attribute, event or status) holds the
// raw user id, a session token (whole, or its random part) or an MFA code, or when any other
// span holds a token or a code. Codes are 6 digits, so they are looked for in text only: a
// numeric attribute (a port, a size) is not text a code could leak through.
func assertNoSessionSecret(t *testing.T, spans tracetest.SpanStubs, userID string, secrets []string) {
	t.Helper()
	var needles []string
	for _, s := range secrets {
		if s == "" {
			continue
		}
		needles = append(needles, s)
		if i := strings.LastIndex(s, "_"); i >= 0 && len(s)-i > 16 {
			needles = append(needles, s[i+1:])
		}
	}
	redisSpans, otherSpans := 0, 0
	for _, s := range spans {
		texts := []string{s.Name, s.Status.Description}
		attrs := func(kvs []attribute.KeyValue) {
			for _, a := range kvs {
				if a.Value.Type() == attribute.STRING || a.Value.Type() == attribute.STRINGSLICE {
					texts = append(texts, string(a.Key)+"="+a.Value.String())
				}
			}
		}
		attrs(s.Attributes)
		for _, e := range s.Events {
			texts = append(texts, e.Name)
			attrs(e.Attributes)
		}
		// The raw user id stays out of every span: the server span names the route template,
		// not the path (/v1/users/{userId}/sessions).
		want := append(append([]string{}, needles...), userID)
		if isRedisSpan(s) {
			redisSpans++
		} else {
			otherSpans++
		}
		for _, txt := range texts {
			for _, n := range want {
				if strings.Contains(txt, n) {
					t.Errorf("span %q (kind %v) carries a secret or raw user id: %q", s.Name, s.SpanKind, txt)
				}
			}
		}
	}
	if redisSpans == 0 || otherSpans == 0 {
		t.Fatalf("checked %d redis and %d other spans: nothing to check", redisSpans, otherSpans)
	}
}
