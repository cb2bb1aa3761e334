package robustness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The workload: concurrent clients, each with its own seeded random source, send a mix of
// session, token and quote operations to a gateway replica picked at random, and record each
// in its model's history. The objects are created before the run and replicated (their loss
// is not what is checked); sessions keep being created during the run so live ones remain.

const (
	tenant          = "t-robustness"
	initialSessions = 40
	tokenFamilies   = 12
	familyChildren  = 2
	quoteCount      = 12
	// submitAfter: a draft is submitted only once a client has seen it at this version, so
	// drafts live through many compare-and-set writes first.
	submitAfter = 20
)

// world is what the clients know of the objects: each session's tokens (in the order handed
// out), each family's tokens, each quote's last version seen.
type world struct {
	gws    []*gateway
	admin  string // bearer
	start  time.Time
	h      map[string]*history // by model name
	mu     sync.Mutex
	sess   []*clientSession
	fams   [][]family
	quotes []*clientQuote
	cases  []*clientCase
	// idem: the Idempotency-Keys in use; idemKeys counts every key made.
	idem     []*idemKey
	evict    []*evictUser // the eviction workload's users (evictions_test.go)
	idemKeys atomic.Int64
	prefix   string // the replicas' key prefix
	seq      atomic.Int64
	// uncertain holds the objects (model keys) a write whose answer was lost touched: a
	// client writes to such an object no more, it only reads it. A lost answer may be placed
	// anywhere after its call, so each one multiplies the orders the checker must try; without
	// this a long outage leaves objects with dozens of them and the check does not end.
	uncertain map[string]bool
}

// authenticatedWrite records a write that authenticated with the credential it ends (a logout,
// a token's self-revocation) and was answered 2xx as two operations over the same interval:
// the authentication (an authorize answered ok, which the model checks) and the effect. Two
// such writes at once may both authenticate before either ends the credential; one that
// starts after another was answered may not.
func (w *world) authenticatedWrite(model string, c int, auth, write keyed, authOut, writeOut any, call, ret time.Time) {
	w.record(model, c, auth, authOut, call, ret, false)
	w.record(model, c, write, writeOut, call, ret, false)
}

// writable reports whether clients still write to the object key.
func (w *world) writable(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.uncertain[key]
}

// record adds one operation to model's history; a write whose answer was lost makes its object
// read-only for the rest of the run.
func (w *world) record(model string, c int, in keyed, out any, call, ret time.Time, unknown bool) {
	if unknown {
		w.mu.Lock()
		w.uncertain[in.key()] = true
		w.mu.Unlock()
	}
	w.h[model].add(c, in, out, call, ret, unknown)
}

// clientSession is one session as the clients know it: the id and token the create returned,
// then each rotation's (the same id, as the brief requires; -robustness.stable-ids checks it).
// Revocations and rotations name the id the create returned (-robustness.revoke-first-id, the
// default), else the latest id a rotation answered.
type clientSession struct {
	id     string // as created: the model's object
	ids    []string
	tokens []string
	// loginMFA: created with mfaRequired (not logged in until a verify).
	loginMFA bool
}

type family struct{ id, bearer string }

type clientQuote struct {
	id      string
	version atomic.Int64
}

// setup creates the objects through the first replica and returns the world; run is how long
// the workload will last (the cases' due times are spread over it).
func setup(t *testing.T, gws []*gateway, prefix string, run time.Duration) *world {
	t.Helper()
	w := &world{gws: gws, h: map[string]*history{}, uncertain: map[string]bool{}, prefix: prefix}
	w.admin = gws[0].bearer(t, tenant, "sessions:read", "sessions:write", "tokens:read", "tokens:write", "quotes:read", "quotes:write",
		"cases:read", "cases:write")
	for range initialSessions {
		if err := w.createSession(gws[0], false); err != nil {
			t.Fatal(err)
		}
	}
	for range tokenFamilies {
		if err := w.createFamily(gws[0]); err != nil {
			t.Fatal(err)
		}
	}
	for range quoteCount {
		if err := w.createQuote(gws[0]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.setupCases(gws[0], run); err != nil {
		t.Fatal(err)
	}
	for range idemPool {
		w.idem = append(w.idem, w.newIdemKey())
	}
	return w
}

// createQuote creates a draft (customerId c0, stateVersion 1: the model's initial state).
func (w *world) createQuote(g *gateway) error {
	r := g.do("POST", "/v1/quotes", map[string]any{"customerId": initialQuote.Customer, "salesChannel": "web", "currency": "EUR"},
		"Authorization", w.admin)
	var q struct {
		QuoteID      string `json:"quoteId"`
		StateVersion int64  `json:"stateVersion"`
	}
	if r.status != http.StatusCreated || r.decode(&q) != nil || q.StateVersion != initialQuote.Version {
		return fmt.Errorf("create quote: %d %s", r.status, r.body)
	}
	cq := &clientQuote{id: q.QuoteID}
	cq.version.Store(q.StateVersion)
	w.mu.Lock()
	w.quotes = append(w.quotes, cq)
	w.mu.Unlock()
	return nil
}

// createSession creates a session for a user of its own; with loginMFA, created with
// mfaRequired (its login completes at a verify).
func (w *world) createSession(g *gateway, loginMFA bool) error {
	r := g.do("POST", "/v1/sessions", map[string]any{"userId": fmt.Sprintf("user-%d", w.seq.Add(1)), "authLevel": "BASIC",
		"idleTimeoutSeconds": 86400, "absoluteTimeoutSeconds": 86400, "mfaRequired": loginMFA}, "Authorization", w.admin)
	var s struct{ SessionID, Token string }
	if r.status != http.StatusCreated || r.decode(&s) != nil || s.SessionID == "" {
		return fmt.Errorf("create session: %d %s", r.status, r.body)
	}
	w.mu.Lock()
	w.sess = append(w.sess, &clientSession{id: s.SessionID, ids: []string{s.SessionID}, tokens: []string{s.Token}, loginMFA: loginMFA})
	w.mu.Unlock()
	return nil
}

// createFamily issues a root token over HTTP with the admin bearer, and children with the root.
func (w *world) createFamily(g *gateway) error {
	n := w.seq.Add(1)
	root, err := w.issue(g, w.admin, fmt.Sprintf("root-%d", n), "tokens:read", "tokens:write")
	if err != nil {
		return err
	}
	fam := []family{root}
	for c := range familyChildren {
		child, err := w.issue(g, root.bearer, fmt.Sprintf("child-%d-%d", n, c), "tokens:read", "tokens:write")
		if err != nil {
			return err
		}
		fam = append(fam, child)
	}
	w.mu.Lock()
	w.fams = append(w.fams, fam)
	w.mu.Unlock()
	return nil
}

func (w *world) issue(g *gateway, bearer, subject string, scopes ...string) (family, error) {
	r := g.do("POST", "/v1/tokens", map[string]any{"subject": subject, "scopes": scopes, "ttlSeconds": 3600, "tokenType": "service"},
		"Authorization", bearer)
	var out struct{ TokenID, Token string }
	if r.status != http.StatusCreated || r.decode(&out) != nil || out.Token == "" {
		return family{}, fmt.Errorf("issue token: %d %s", r.status, r.body)
	}
	return family{id: out.TokenID, bearer: "Bearer " + out.Token}, nil
}

// run starts clients goroutines that send operations until ctx ends, each pausing pace
// between two, and waits for them.
func (w *world) run(ctx context.Context, clients int, seed uint64, pace time.Duration) {
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(c)))
			for ctx.Err() == nil {
				w.step(c, rng)
				if pace > 0 {
					time.Sleep(pace)
				}
			}
		}()
	}
	wg.Wait()
}

// step sends one operation to a replica not killed.
func (w *world) step(c int, rng *rand.Rand) {
	g := w.gws[rng.IntN(len(w.gws))]
	for g.dead.Load() {
		g = w.gws[rng.IntN(len(w.gws))]
	}
	switch p := rng.Float64(); {
	case p < 0.03:
		// Not checked: a session lost with its create only refuses. One in three waits for its
		// login's MFA verify.
		_ = w.createSession(g, rng.IntN(3) == 0)
	case p < 0.08:
		w.evictStep(c, rng, g)
	case p < 0.40:
		w.sessionStep(c, rng, g)
	case p < 0.57:
		w.tokenStep(c, rng, g)
	case p < 0.77:
		w.quoteStep(c, rng, g)
	case p < 0.95:
		w.caseStep(c, rng, g)
	default:
		w.idemStep(c, rng, g)
	}
}

// unknown reports whether the client never learned the result: a transport failure or
// timeout, a 5xx (503 for Redis trouble or a write not confirmed by the replica) or a 429.
func unknown(status int) bool {
	return status == 0 || status >= 500 || status == http.StatusTooManyRequests
}

func (w *world) sessionStep(c int, rng *rand.Rand, g *gateway) {
	w.mu.Lock()
	s := w.sess[rng.IntN(len(w.sess))]
	toks, id := s.tokens, s.ids[len(s.ids)-1]
	w.mu.Unlock()
	if *flagFirstID {
		id = s.id
	}
	tok := toks[len(toks)-1]
	if rng.IntN(4) == 0 {
		tok = toks[rng.IntN(len(toks))]
	}
	in := sessionIn{Session: s.id, Token: tok, Initial: tok == toks[0], ID: id, FirstID: id == s.id, LoginMFA: s.loginMFA}
	p := rng.Float64()
	if !w.writable(in.key()) {
		p = 1 // authorize only
	}
	call := time.Now()
	var r reply
	switch {
	case p < 0.05:
		in.Op, in.Token, in.Initial = opRevoke, "", false
		r = g.do("DELETE", "/v1/sessions/"+id, nil, "Authorization", w.admin)
	case p < 0.10:
		in.Op = opLogout
		r = g.do("DELETE", "/v1/session", nil, "X-Session-Token", tok)
	case p < 0.20:
		in.Op, in.Token, in.Initial = opRotate, "", false
		r = g.do("POST", "/v1/sessions/"+id+"/rotate", nil, "Authorization", w.admin)
	case p < 0.25:
		// A step-up: the challenge changes no token (a logged-in session stays authorized at
		// BASIC meanwhile), so only the verify is recorded; without a challenge there is none.
		var ch struct{ ChallengeID, Code string }
		if cr := g.do("POST", "/v1/sessions/"+id+"/mfa/challenge", nil, "Authorization", w.admin); cr.status != http.StatusCreated || cr.decode(&ch) != nil {
			return
		}
		in.Op, in.Token, in.Initial = opVerify, "", false
		call = time.Now()
		r = g.do("POST", "/v1/sessions/"+id+"/mfa/verify", map[string]any{"challengeId": ch.ChallengeID, "code": ch.Code}, "Authorization", w.admin)
	default:
		in.Op = opAuthorize
		r = g.do("GET", "/v1/authorize", nil, "X-Session-Token", tok)
	}
	ret := time.Now()
	out := sessionOut{Unknown: unknown(r.status), OK: r.status/100 == 2}
	if in.Op == opAuthorize && out.Unknown {
		return // a read whose answer was lost tells nothing
	}
	if (in.Op == opRotate || in.Op == opVerify) && out.OK {
		var v struct{ SessionID, Token string }
		if r.decode(&v) != nil || v.Token == "" || v.SessionID == "" {
			out.Unknown, out.OK = true, false
		} else {
			out.Token, out.ID = v.Token, v.SessionID
			w.mu.Lock()
			s.ids, s.tokens = append(s.ids, v.SessionID), append(s.tokens, v.Token)
			w.mu.Unlock()
		}
	}
	if in.Op == opLogout && out.OK {
		auth := in
		auth.Op, auth.LoginMFA = opAuthorize, false // a logout accepts a session whose login waits
		w.authenticatedWrite("sessions", c, auth, in, sessionOut{OK: true}, out, call, ret)
		return
	}
	w.record("sessions", c, in, out, call, ret, out.Unknown)
}

func (w *world) tokenStep(c int, rng *rand.Rand, g *gateway) {
	if rng.IntN(200) == 0 {
		_ = w.createFamily(g) // a fresh family now and then: a revoked root ends its family
	}
	w.mu.Lock()
	f := rng.IntN(len(w.fams))
	node := rng.IntN(familyChildren + 1)
	tok := w.fams[f][node]
	w.mu.Unlock()
	in := tokenIn{Op: opAuthorize, Family: strconv.Itoa(f), Node: node}
	call := time.Now()
	var r reply
	if rng.IntN(20) == 0 && (node != 0 || rng.IntN(3) == 0) && w.writable(in.key()) {
		in.Op = opRevoke
		r = g.do("DELETE", "/v1/tokens/"+tok.id, nil, "Authorization", tok.bearer)
	} else {
		r = g.do("GET", "/v1/authorize", nil, "Authorization", tok.bearer)
	}
	ret := time.Now()
	out := tokenOut{Unknown: unknown(r.status), OK: r.status/100 == 2}
	if in.Op == opAuthorize && out.Unknown {
		return
	}
	if in.Op == opRevoke && out.OK {
		w.authenticatedWrite("tokens", c, tokenIn{Op: opAuthorize, Family: in.Family, Node: in.Node}, in, tokenOut{OK: true}, out, call, ret)
		return
	}
	w.record("tokens", c, in, out, call, ret, out.Unknown)
}

func (w *world) quoteStep(c int, rng *rand.Rand, g *gateway) {
	if rng.IntN(100) == 0 {
		_ = w.createQuote(g) // a fresh draft now and then: submitted ones take no more writes
	}
	w.mu.Lock()
	q := w.quotes[rng.IntN(len(w.quotes))]
	w.mu.Unlock()
	ifMatch := q.version.Load()
	if rng.IntN(5) == 0 {
		ifMatch -= int64(rng.IntN(2) + 1) // a stale ETag now and then
	}
	in := quoteIn{Quote: q.id, IfMatch: ifMatch}
	etag := `"` + strconv.FormatInt(ifMatch, 10) + `"`
	p := rng.Float64()
	if !w.writable(in.key()) {
		p = 0 // read only
	}
	call := time.Now()
	var r reply
	switch {
	case p < 0.45:
		in.Op, in.IfMatch = opRead, 0
		r = g.do("GET", "/v1/quotes/"+q.id, nil, "Authorization", w.admin)
	case p < 0.97:
		in.Op, in.Customer = opPatch, fmt.Sprintf("c%d", w.seq.Add(1))
		r = g.do("PATCH", "/v1/quotes/"+q.id, map[string]any{"customerId": in.Customer}, "Authorization", w.admin,
			"If-Match", etag, "Content-Type", "application/merge-patch+json")
	case ifMatch < submitAfter:
		return
	default:
		in.Op = opSubmit
		r = g.do("POST", "/v1/quotes/"+q.id+"/submit", nil, "Authorization", w.admin, "If-Match", etag)
	}
	ret := time.Now()
	out := quoteOut{Unknown: unknown(r.status), Status: r.status}
	if out.Unknown {
		if in.Op == opRead {
			return
		}
		out.Status = 0
	}
	if r.status == http.StatusOK {
		var v struct {
			CustomerID   string `json:"customerId"`
			Status       string `json:"status"`
			StateVersion int64  `json:"stateVersion"`
		}
		if r.decode(&v) != nil {
			out.Status = -1 // a 200 the model cannot explain
		}
		out.Version, out.Customer, out.Submitted = v.StateVersion, v.CustomerID, v.Status == "SUBMITTED"
		q.version.Store(v.StateVersion)
	}
	w.record("quotes", c, in, out, call, ret, out.Unknown)
}
