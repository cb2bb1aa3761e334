package robustness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The events run's workload: clients write, over HTTP to a gateway process picked at random
// among those not killed, in every domain that emits events, and record each write's outcome
// (evOp). Nothing is created before the run: the clients create what they write to.

const (
	evTenant = "t-events"
	// evUsers is the users sessions are created for; with evSessionCap sessions per user a
	// create evicts one now and then (session.evicted).
	evUsers      = 6
	evSessionCap = 4
)

// evWorld is what the clients know: the objects each write may name.
type evWorld struct {
	gws   []*gateway
	admin string // bearer: a root token minted with `gateway token mint`
	mu    sync.Mutex
	ops   []evOp
	roots []family // token roots issued by admin: their bearers issue children
	toks  []string // every token id an issue answered
	quote []*evRef
	cases []*evRef
	sess  []*evSess
	// keys: Idempotency-Keys whose create's answer was lost, sent again (same body) by the
	// next create of that kind.
	keys map[string][]evKey
	seq  int
	// lastDue: the latest dueAt of a case create sent.
	lastDue time.Time
}

type evRef struct {
	id      string
	version int64 // the last stateVersion seen (quotes: the If-Match sent)
}

type evSess struct{ id, token string }

type evKey struct {
	key  string
	body map[string]any
}

// record adds one write sent at call; status is its answer's (0: none).
func (w *evWorld) record(op evOp, call time.Time, status int) {
	op.Status, op.Call, op.Return = status, call, time.Now()
	w.mu.Lock()
	w.ops = append(w.ops, op)
	w.mu.Unlock()
}

// writes is how many writes were recorded.
func (w *evWorld) writes() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.ops)
}

func (w *evWorld) next() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	return w.seq
}

// evResultOf is what the client learned from status (see unknown).
func evResultOf(status int) evOutcome {
	switch {
	case unknown(status):
		return evUnknown
	case status/100 == 2:
		return evAcked
	default:
		return evRefused
	}
}

// run sends writes from clients goroutines until ctx ends, each pausing pace between two.
func (w *evWorld) run(ctx context.Context, clients int, pace time.Duration, seed uint64) {
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(100+c)))
			for ctx.Err() == nil {
				w.step(rng)
				if pace > 0 {
					time.Sleep(pace)
				}
			}
		}()
	}
	wg.Wait()
}

// live is a replica not killed, picked at random.
func (w *evWorld) live(rng *rand.Rand) *gateway {
	for {
		if g := w.gws[rng.IntN(len(w.gws))]; !g.dead.Load() {
			return g
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (w *evWorld) step(rng *rand.Rand) {
	g := w.live(rng)
	switch p := rng.Float64(); {
	case p < 0.22:
		w.tokenWrite(rng, g)
	case p < 0.52:
		w.quoteWrite(rng, g)
	case p < 0.76:
		w.caseWrite(rng, g)
	default:
		w.sessionWrite(rng, g)
	}
}

// pick is a random element of s under w.mu, or the zero value.
func pick[T any](w *evWorld, rng *rand.Rand, s *[]T) (T, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var zero T
	if len(*s) == 0 {
		return zero, false
	}
	return (*s)[rng.IntN(len(*s))], true
}

func (w *evWorld) tokenWrite(rng *rand.Rand, g *gateway) {
	root, haveRoot := pick(w, rng, &w.roots)
	id, haveTok := pick(w, rng, &w.toks)
	switch p := rng.Float64(); {
	case p < 0.3 || !haveRoot:
		w.issue(g, w.admin, true)
	case p < 0.7 || !haveTok:
		w.issue(g, root.bearer, false)
	default:
		// Any token of the tenant (admin holds tokens:admin): a root's revocation cascades.
		call := time.Now()
		r := g.do("DELETE", "/v1/tokens/"+id, nil, "Authorization", w.admin)
		w.record(evOp{Domain: "token", Kind: "revoke", ID: id, Result: evResultOf(r.status)}, call, r.status)
	}
}

func (w *evWorld) issue(g *gateway, bearer string, root bool) {
	n := w.next()
	call := time.Now()
	r := g.do("POST", "/v1/tokens", map[string]any{"subject": "ev-" + strconv.Itoa(n), "scopes": []string{"tokens:read", "tokens:write"},
		"ttlSeconds": 3600, "tokenType": "service"}, "Authorization", bearer)
	op := evOp{Domain: "token", Kind: "issue", Result: evResultOf(r.status)}
	var out struct{ TokenID, Token string }
	if op.Result == evAcked && (r.decode(&out) != nil || out.TokenID == "") {
		op.Result = evUnknown
	}
	op.ID = out.TokenID
	w.record(op, call, r.status)
	if op.Result == evAcked {
		w.mu.Lock()
		w.toks = append(w.toks, out.TokenID)
		if root {
			w.roots = append(w.roots, family{id: out.TokenID, bearer: "Bearer " + out.Token})
		}
		w.mu.Unlock()
	}
}

// keyedCreate creates a quote or a case (kind) with body, under an Idempotency-Key half the
// time; a key whose answer was lost is sent again, with its body, by a later create.
func (w *evWorld) keyedCreate(rng *rand.Rand, g *gateway, kind, path string, body map[string]any) {
	var headers []string
	key := ""
	if rng.IntN(2) == 0 {
		w.mu.Lock()
		if pending := w.keys[kind]; len(pending) > 0 {
			k := pending[len(pending)-1]
			w.keys[kind] = pending[:len(pending)-1]
			key, body = k.key, k.body
		}
		w.mu.Unlock()
		if key == "" {
			key = fmt.Sprintf("ev-%s-%d", kind, w.next())
		}
		headers = []string{"Idempotency-Key", key}
	}
	call := time.Now()
	r := g.do("POST", path, body, append(headers, "Authorization", w.admin)...)
	op := evOp{Domain: kind, Kind: "create", Result: evResultOf(r.status)}
	var out struct {
		QuoteID, CaseID string
		StateVersion    int64
	}
	if op.Result == evAcked && (r.decode(&out) != nil || out.QuoteID+out.CaseID == "") {
		op.Result = evUnknown
	}
	op.ID, op.Version = out.QuoteID+out.CaseID, out.StateVersion
	w.record(op, call, r.status)
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case op.Result == evAcked && kind == "quote":
		w.quote = append(w.quote, &evRef{id: op.ID, version: out.StateVersion})
	case op.Result == evAcked:
		w.cases = append(w.cases, &evRef{id: op.ID, version: out.StateVersion})
	case op.Result == evUnknown && key != "":
		w.keys[kind] = append(w.keys[kind], evKey{key: key, body: body})
	}
}

func (w *evWorld) quoteWrite(rng *rand.Rand, g *gateway) {
	q, ok := pick(w, rng, &w.quote)
	if p := rng.Float64(); !ok || p < 0.12 {
		w.keyedCreate(rng, g, "quote", "/v1/quotes", map[string]any{"customerId": fmt.Sprintf("c%d", w.next()), "salesChannel": "web", "currency": "EUR"})
		return
	}
	w.mu.Lock()
	v := q.version
	w.mu.Unlock()
	etag := `"` + strconv.FormatInt(v, 10) + `"`
	op := evOp{Domain: "quote", ID: q.id}
	call := time.Now()
	var r reply
	switch p := rng.Float64(); {
	case p < 0.5:
		op.Kind = "patch"
		r = g.do("PATCH", "/v1/quotes/"+q.id, map[string]any{"customerId": fmt.Sprintf("c%d", w.next())}, "Authorization", w.admin,
			"If-Match", etag, "Content-Type", "application/merge-patch+json")
	case p < 0.8:
		op.Kind = "item"
		r = g.do("PUT", fmt.Sprintf("/v1/quotes/%s/items/i%d", q.id, rng.IntN(4)), map[string]any{"sku": "sku-1", "quantity": 1 + rng.IntN(5),
			"unitPriceMinor": 100 + rng.IntN(900)}, "Authorization", w.admin, "If-Match", etag)
	case p < 0.92:
		op.Kind = "submit"
		r = g.do("POST", "/v1/quotes/"+q.id+"/submit", nil, "Authorization", w.admin, "If-Match", etag)
	default:
		op.Kind = "delete"
		r = g.do("DELETE", "/v1/quotes/"+q.id, nil, "Authorization", w.admin)
	}
	op.Result = evResultOf(r.status)
	if op.Result == evAcked && op.Kind != "delete" {
		n, err := strconv.ParseInt(strings.Trim(strings.TrimPrefix(r.header.Get("ETag"), "W/"), `"`), 10, 64)
		if err != nil || n <= v {
			op.Result = evUnknown // an answer without its version: not one the check can use
		}
		op.Version = n
	}
	w.record(op, call, r.status)
	switch {
	case op.Result == evAcked && op.Kind != "delete":
		w.mu.Lock()
		q.version = max(q.version, op.Version)
		w.mu.Unlock()
	case r.status == http.StatusPreconditionFailed || op.Result == evUnknown:
		w.refresh(g, "/v1/quotes/"+q.id, q) // another client wrote, or this one may have
	}
}

// refresh reads an object's stateVersion (not a recorded write).
func (w *evWorld) refresh(g *gateway, path string, ref *evRef) {
	r := g.do("GET", path, nil, "Authorization", w.admin)
	var v struct{ StateVersion int64 }
	if r.status == http.StatusOK && r.decode(&v) == nil {
		w.mu.Lock()
		ref.version = max(ref.version, v.StateVersion)
		w.mu.Unlock()
	}
}

var caseTransitions = []string{"escalate", "assign", "resolve", "reopen"}

func (w *evWorld) caseWrite(rng *rand.Rand, g *gateway) {
	c, ok := pick(w, rng, &w.cases)
	if !ok || rng.Float64() < 0.15 {
		// Due within the run's first seconds: the sweepers escalate some (auto: true).
		due := time.Now().Add(time.Duration(300+rng.IntN(4000)) * time.Millisecond)
		w.mu.Lock()
		if due.After(w.lastDue) {
			w.lastDue = due
		}
		w.mu.Unlock()
		w.keyedCreate(rng, g, "case", "/v1/cases", map[string]any{"subjectRef": fmt.Sprintf("subject-%d", w.next()), "assignedTeam": "team-a",
			"dueAt": due.UTC().Format(time.RFC3339Nano), "reason": "opened"})
		return
	}
	tr := caseTransitions[rng.IntN(len(caseTransitions))]
	body := map[string]any{"reason": fmt.Sprintf("r%d", w.next())}
	if tr == "assign" {
		body["assignedTeam"] = fmt.Sprintf("team-%c", 'a'+rng.IntN(3))
	}
	call := time.Now()
	r := g.do("POST", "/v1/cases/"+c.id+"/"+tr, body, "Authorization", w.admin)
	op := evOp{Domain: "case", Kind: tr, ID: c.id, Result: evResultOf(r.status)}
	var out struct{ StateVersion int64 }
	if op.Result == evAcked && (r.decode(&out) != nil || out.StateVersion < 2) {
		op.Result = evUnknown
	}
	op.Version = out.StateVersion
	w.record(op, call, r.status)
}

func (w *evWorld) sessionWrite(rng *rand.Rand, g *gateway) {
	s, ok := pick(w, rng, &w.sess)
	op := evOp{Domain: "session"}
	if ok {
		op.ID = s.id
	}
	call := time.Now()
	var r reply
	switch p := rng.Float64(); {
	case !ok || p < 0.3:
		r = g.do("POST", "/v1/sessions", map[string]any{"userId": fmt.Sprintf("ev-user-%d", rng.IntN(evUsers)), "authLevel": "BASIC",
			"idleTimeoutSeconds": 86400, "absoluteTimeoutSeconds": 86400}, "Authorization", w.admin)
		op.Kind, op.Result = "create", evResultOf(r.status)
		var out struct{ SessionID, Token string }
		if op.Result == evAcked && (r.decode(&out) != nil || out.SessionID == "") {
			op.Result = evUnknown
		}
		op.ID = out.SessionID
		if op.Result == evAcked {
			w.mu.Lock()
			w.sess = append(w.sess, &evSess{id: out.SessionID, token: out.Token})
			w.mu.Unlock()
		}
	case p < 0.6:
		r = g.do("POST", "/v1/sessions/"+s.id+"/rotate", nil, "Authorization", w.admin)
		op.Kind, op.Result = "rotate", evResultOf(r.status)
		var out struct{ Token string }
		if op.Result == evAcked && r.decode(&out) == nil && out.Token != "" {
			w.mu.Lock()
			s.token = out.Token
			w.mu.Unlock()
		}
	case p < 0.8:
		r = g.do("DELETE", "/v1/sessions/"+s.id, nil, "Authorization", w.admin)
		op.Kind, op.Result = "revoke", evResultOf(r.status)
	default:
		w.mu.Lock()
		tok := s.token
		w.mu.Unlock()
		r = g.do("DELETE", "/v1/session", nil, "X-Session-Token", tok)
		op.Kind, op.Result = "logout", evResultOf(r.status)
	}
	w.record(op, call, r.status)
}
