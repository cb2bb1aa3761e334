package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashgate/hashgate/client"
)

// keyPrefix is GATEWAY_KEY_PREFIX for the benchmark's gateways.
const keyPrefix = "hg"

// caseMaxEscalation is GATEWAY_CASE_MAX_ESCALATION for the benchmark's gateways (the default
// is 3): each case then takes ten escalations, so the set-up creates fewer cases.
const caseMaxEscalation = 10

// plan is one gateway scenario: how to set it up and what counts as a correct answer.
type plan struct {
	Key, Name string
	Expect    []int
	// prepare returns the warm-up and the measured scripts (disjoint objects where a
	// request changes state that the next one depends on).
	prepare func(ctx context.Context) (warm, measure wrkScript, err error)
	// again, when set, makes a fresh measured script for one more run at about rate req/s
	// (the paired rounds), its objects created through the gateway at base (the one the run
	// loads: each side of a pair pays for its own set-up): the row's requests use up what
	// they act on. Unset, the measured script runs again as it is.
	again func(ctx context.Context, base string, rate float64) (wrkScript, error)
	// durable: a revocation confirmed by a replica, by design two round trips (the write,
	// then WAIT on its connection): reported, outside the one-round-trip target.
	durable bool
}

// createdSession is a session made through POST /v1/sessions.
type createdSession struct{ ID, Token string }

type mfaTarget struct{ SessionID, ChallengeID, WrongCode string }

type quoteRef struct{ ID, ETag string }

// fixtures creates (once) the objects the scenarios share, through the public API.
type fixtures struct {
	api      *api
	cfg      config
	rateHint func() float64 // the fastest gateway scenario's req/s so far, for sizing the case set
	// mint issues a root token of another tenant (gateway token mint); againRuns counts
	// the tenants caseEscalateAgain minted.
	mint        func(ctx context.Context, tenant string) (string, error)
	againRuns   int
	sessOnce    sync.Once
	sessions    []createdSession
	device      createdSession
	sessErr     error
	bearerOnce  sync.Once
	bearers     []string
	tokenIDs    []string
	mfa         []mfaTarget
	quoteSample quoteRef
	quoteItems  int
	caseFresh   string
	caseUsed    string
	caseListN   int // case-list's cases: listCases, or fewer in the set-up test
	readOnce    sync.Once
	readQuotes  []quoteRef
	readErr     error
}

func (f *fixtures) json() map[string]string { return jsonHeaders(f.api.token) }

// jsonHeaders are a JSON request's headers with token.
func jsonHeaders(token string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json"}
}

// session creates one session for userID.
func (f *fixtures) session(ctx context.Context, userID string, device *client.DeviceInfo) (createdSession, error) {
	rsp, err := client.Check(f.api.cl.CreateSessionWithResponse(ctx, client.SessionCreateRequest{
		UserId: userID, AuthLevel: client.AuthLevelBASIC, Device: device}))
	if err != nil {
		return createdSession{}, fmt.Errorf("POST /v1/sessions: %w", err)
	}
	if rsp.JSON201 == nil || rsp.JSON201.SessionId == "" || rsp.JSON201.Token == "" {
		return createdSession{}, fmt.Errorf("POST /v1/sessions: no sessionId or token in the answer")
	}
	return createdSession{ID: rsp.JSON201.SessionId, Token: rsp.JSON201.Token}, nil
}

// loadSessions creates cfg.sessions users with one session each (and one with device info).
func (f *fixtures) loadSessions(ctx context.Context) ([]createdSession, error) {
	f.sessOnce.Do(func() {
		f.sessions = make([]createdSession, f.cfg.sessions)
		f.sessErr = parallel(ctx, f.cfg.sessions, 16, func(ctx context.Context, i int) error {
			s, err := f.session(ctx, fmt.Sprintf("bench-user-%d", i), nil)
			f.sessions[i] = s
			return err
		})
		if f.sessErr == nil {
			f.device, f.sessErr = f.session(ctx, "bench-device-user", &client.DeviceInfo{
				Label: new("work laptop"), Ip: new("203.0.113.7"),
				UserAgent: new("Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"),
			})
		}
	})
	return f.sessions, f.sessErr
}

// loadBearers issues service tokens for the proxies.
func (f *fixtures) loadBearers(ctx context.Context) ([]string, error) {
	var err error
	f.bearerOnce.Do(func() {
		for i := range 4 {
			var rsp *client.IssueTokenResponse
			rsp, err = client.Check(f.api.cl.IssueTokenWithResponse(ctx, client.TokenIssueRequest{
				Subject: fmt.Sprintf("bench-proxy-%d", i), Scopes: []client.Scope{client.ScopeSessionsRead},
				TtlSeconds: 3600, TokenType: client.TokenIssueRequestTokenTypeService,
			}))
			if err != nil {
				err = fmt.Errorf("POST /v1/tokens: %w", err)
				break
			}
			f.bearers, f.tokenIDs = append(f.bearers, rsp.JSON201.Token), append(f.tokenIDs, rsp.JSON201.TokenId)
		}
	})
	if err != nil {
		return nil, err
	}
	return f.bearers, nil
}

// jwtID is the jti claim of a JWT (the token id), or "".
func jwtID(tok string) string {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return ""
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var c struct{ Jti string }
	_ = json.Unmarshal(b, &c)
	return c.Jti
}

func itemsWithHeader(path, header, prefix string, values []string) []wrkItem {
	items := make([]wrkItem, len(values))
	for i, v := range values {
		items[i] = wrkItem{Path: path, Header: header, Value: prefix + v}
	}
	return items
}

func same(s wrkScript) (wrkScript, wrkScript, error) { return s, s, nil }

// gatewayPlans are the scenarios run against the gateway with client-side caching on.
func (f *fixtures) gatewayPlans() []plan {
	return []plan{
		{Key: "authz-session", Name: "GET /v1/authorize, session cookie", Expect: []int{200}, prepare: f.authzSession},
		{Key: "authz-bearer", Name: "GET /v1/authorize, bearer JWT", Expect: []int{200}, prepare: f.authzBearer},
		{Key: "whoami", Name: "GET /v1/session (X-Session-Token)", Expect: []int{200}, prepare: f.whoami},
		{Key: "mfa-verify", Name: "POST …/mfa/verify, wrong code (422 → 429)", Expect: []int{422, 429}, prepare: f.mfaVerify},
		{Key: "quote-patch", Name: "PATCH /v1/quotes/{id} with If-Match", Expect: []int{200}, prepare: f.quotePatch, again: f.quotePatchAgain},
		{Key: "case-escalate", Name: "POST /v1/cases/{id}/escalate", Expect: []int{200}, prepare: f.caseEscalate, again: f.caseEscalateAgain},
		{Key: "case-list", Name: "GET /v1/cases, a team's queue, pages of 50 of 10,000", Expect: []int{200}, prepare: f.caseList},
		{Key: "session-create", Name: "POST /v1/sessions", Expect: []int{201}, prepare: f.sessionCreate},
	}
}

// noEventsPlans are the write rows again, against a gateway with GATEWAY_EVENTS=false: what
// events cost each write (report_events.go).
func (f *fixtures) noEventsPlans() []plan {
	var out []plan
	for _, p := range f.gatewayPlans() {
		if slices.Contains(eventWriteRows, p.Key) {
			p.Key, p.Name = p.Key+noEventsSuffix, p.Name+", events off"
			out = append(out, p)
		}
	}
	return out
}

// limitPlans run against a fresh gateway with the rate limits on, next to the one with them
// off (noLimitPlans): the two differ in nothing else, not even in what ran on them before.
func (f *fixtures) limitPlans() []plan {
	return []plan{
		{Key: "quote-get", Name: "GET /v1/quotes/{id}, bearer (rate limits on)", Expect: []int{200}, prepare: f.quoteGet},
	}
}

// noLimitPlans run against a gateway with every request-rate limit off (GATEWAY_RATE_LIMIT_*=0):
// the same bearer read as quote-get, for the cost of limiting.
func (f *fixtures) noLimitPlans() []plan {
	return []plan{
		{Key: "quote-get-nolimit", Name: "GET /v1/quotes/{id}, bearer (rate limits off)", Expect: []int{200}, prepare: f.quoteGet},
	}
}

// quoteGet reads quotes with the admin bearer token: a bearer API operation, counted against
// the token's and the tenant's rate limits (one Redis round trip for the read; the limits
// none). Both runs read the same quotes.
func (f *fixtures) quoteGet(ctx context.Context) (wrkScript, wrkScript, error) {
	f.readOnce.Do(func() { f.readQuotes, f.readErr = f.createQuotes(ctx, 256) })
	if f.readErr != nil {
		return wrkScript{}, wrkScript{}, f.readErr
	}
	items := make([]wrkItem, len(f.readQuotes))
	for i, q := range f.readQuotes {
		items[i] = wrkItem{Path: "/v1/quotes/" + q.ID}
	}
	return same(wrkScript{Method: "GET", Headers: map[string]string{"Authorization": "Bearer " + f.api.token}, Items: items})
}

// noCachePlans run against a second gateway with GATEWAY_REDIS_CLIENT_CACHE=false.
func (f *fixtures) noCachePlans() []plan {
	return []plan{
		{Key: "authz-session-nocache", Name: "GET /v1/authorize, session cookie, cache off", Expect: []int{200}, prepare: f.authzSession},
		{Key: "authz-bearer-nocache", Name: "GET /v1/authorize, bearer JWT, cache off", Expect: []int{200}, prepare: f.authzBearer},
	}
}

// sessionTokens are the tokens of the sessions the session scenarios rotate over.
func (f *fixtures) sessionTokens(ctx context.Context) ([]string, error) {
	ss, err := f.loadSessions(ctx)
	if err != nil {
		return nil, err
	}
	toks := make([]string, len(ss))
	for i, s := range ss {
		toks[i] = s.Token
	}
	return toks, nil
}

func (f *fixtures) authzSession(ctx context.Context) (wrkScript, wrkScript, error) {
	toks, err := f.sessionTokens(ctx)
	if err != nil {
		return wrkScript{}, wrkScript{}, err
	}
	return same(wrkScript{Method: "GET", Items: itemsWithHeader("/v1/authorize", "Cookie", sessionCookie+"=", toks)})
}

func (f *fixtures) authzBearer(ctx context.Context) (wrkScript, wrkScript, error) {
	bs, err := f.loadBearers(ctx)
	if err != nil {
		return wrkScript{}, wrkScript{}, err
	}
	return same(wrkScript{Method: "GET", Items: itemsWithHeader("/v1/authorize", "Authorization", "Bearer ", bs)})
}

func (f *fixtures) whoami(ctx context.Context) (wrkScript, wrkScript, error) {
	toks, err := f.sessionTokens(ctx)
	if err != nil {
		return wrkScript{}, wrkScript{}, err
	}
	return same(wrkScript{Method: "GET", Items: itemsWithHeader("/v1/session", sessionHeader, "", toks)})
}

func (f *fixtures) createQuotes(ctx context.Context, n int) ([]quoteRef, error) {
	return createQuotes(ctx, f.api, n)
}

// createQuotes creates n quotes through a (its token's tenant).
func createQuotes(ctx context.Context, a *api, n int) ([]quoteRef, error) {
	qs := make([]quoteRef, n)
	err := parallel(ctx, n, 16, func(ctx context.Context, i int) error {
		rsp, err := client.Check(a.cl.CreateQuoteWithResponse(ctx, nil,
			client.QuoteCreateRequest{CustomerId: "cust-bench", SalesChannel: "web", Currency: "EUR"}))
		if err != nil {
			return fmt.Errorf("POST /v1/quotes: %w", err)
		}
		if rsp.JSON201 == nil || rsp.JSON201.QuoteId == "" || rsp.HTTPResponse.Header.Get("ETag") == "" {
			return fmt.Errorf("POST /v1/quotes: no quoteId or ETag in the answer")
		}
		qs[i] = quoteRef{ID: rsp.JSON201.QuoteId, ETag: rsp.HTTPResponse.Header.Get("ETag")}
		return nil
	})
	return qs, err
}

// probe sends the script's first request once and checks its status.
func probe(ctx context.Context, base string, s wrkScript, expect []int) error {
	var it wrkItem
	if s.Sample != nil {
		it = s.Sample.first()
	} else {
		it = s.Items[0]
	}
	method, path, body := s.Method, it.Path, it.Body
	hdr := map[string]string{}
	for k, v := range s.Headers {
		hdr[k] = v
	}
	if it.Header != "" {
		hdr[it.Header] = it.Value
	}
	switch {
	case s.QuotePatch:
		method, path, body = http.MethodPatch, "/v1/quotes/"+it.Path, `{"customerId":"cust-probe"}`
		hdr["If-Match"] = it.Value
	case s.CounterBody != "":
		body = fmt.Sprintf(s.CounterBody, 99, 0)
	}
	var b any
	if body != "" {
		b = body
	}
	a := &api{base: base, hc: &http.Client{Timeout: 10 * time.Second}}
	r, err := a.do(ctx, method, path, b, hdr)
	if err != nil {
		return err
	}
	return r.check(method+" "+templatePath(path), expect...)
}

// templatePath hides ids in a path for messages: /v1/quotes/q_… → /v1/quotes/{id}.
func templatePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if len(s) > 20 {
			segs[i] = "{id}"
		}
	}
	return strings.Join(segs, "/")
}
