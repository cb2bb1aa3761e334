package robustness

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/anishathalye/porcupine"
)

// Evictions at the session cap: the replicas run with GATEWAY_SESSION_MAX_PER_USER=sessionCap
// (the default policy, evict-oldest), and a few users (evictUsers) get sessions created for
// them during the run, by whichever clients and replicas, beyond the cap. The create's answer
// does not say which session it evicted (the least recently used), so the model does not
// guess: once a create is acknowledged, some set of at most sessionCap of the user's sessions
// (the new one among them) is live, and each later create removes from it, never adds back.
// A session whose token authorizes must be in the live set; so any sessionCap + 1 of them
// authorizing after the create that made room is a violation, as is an evicted token
// authorizing after another session was seen live in its place.

const (
	sessionCap = 2
	evictUsers = 3
	// evictPerUser bounds the sessions made for one user (the model's live set is a bit set);
	// past it the user is replaced by a fresh one, as is, 1 pick in 20, a user one of whose
	// creates went unanswered (its clients create no more for it: see world.uncertain), so
	// evictions go on through a long run with many faults.
	evictPerUser = 60
)

type evictOp string

const (
	evictCreate    evictOp = "create"
	evictAuthorize evictOp = "authorize"
)

type evictIn struct {
	Op   evictOp
	User string
	N    int // the session: the user's Nth create
	// Via is the gateway that answered (its URL), shown in the visualization: in a split,
	// which primary's copy an answer came from (docs/ROBUSTNESS.md, finding 12).
	Via string
}

func (in evictIn) key() string { return "user " + in.User }

type evictOut struct {
	Unknown bool
	OK      bool
}

// evictState: bit n set = the user's Nth session is live.
type evictState uint64

// created is every state the create of session n can leave s in: n live, and, past the cap,
// one of the others evicted (which one the answer does not say).
func (s evictState) created(n int) []any {
	s |= 1 << n
	if bits.OnesCount64(uint64(s)) <= sessionCap {
		return []any{s}
	}
	var out []any
	for i := range 64 {
		if i != n && s&(1<<i) != 0 {
			out = append(out, s&^(1<<i))
		}
	}
	return out
}

var evictModel = porcupine.NondeterministicModel{
	Partition: partitionByKey,
	Init:      func() []any { return []any{evictState(0)} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(evictState), input.(evictIn), output.(evictOut)
		switch {
		case in.Op == evictAuthorize:
			if out.OK && s&(1<<in.N) == 0 {
				return nil
			}
			return []any{s}
		case out.OK:
			return s.created(in.N)
		case out.Unknown:
			return append([]any{s}, s.created(in.N)...)
		}
		return []any{s}
	},
	Equal: func(a, b any) bool { return a.(evictState) == b.(evictState) },
	DescribeOperation: func(input, output any) string {
		in, out := input.(evictIn), output.(evictOut)
		return fmt.Sprintf("%s(session %d) → %s via %s", in.Op, in.N, outcome(out.Unknown, out.OK), in.Via)
	},
	DescribeState: func(state any) string { return fmt.Sprintf("live %b", uint64(state.(evictState))) },
}

// evictUser is one user of the eviction workload as the clients know it: the tokens of the
// sessions whose create was answered, by create number ("" until then).
type evictUser struct {
	name   string
	tokens []string
}

// known is the create numbers of the sessions whose token a create answered.
func (u *evictUser) known() []int {
	var out []int
	for n, tok := range u.tokens {
		if tok != "" {
			out = append(out, n)
		}
	}
	return out
}

// evictStep creates a session for one of the eviction users (1 in 3, while its creates'
// answers were all learnt) or authorizes one of its sessions whose token a create answered.
func (w *world) evictStep(c int, rng *rand.Rand, g *gateway) {
	w.mu.Lock()
	if len(w.evict) == 0 {
		for range evictUsers {
			w.evict = append(w.evict, &evictUser{name: fmt.Sprintf("evict-%d", w.seq.Add(1))})
		}
	}
	i := rng.IntN(len(w.evict))
	u, known := w.evict[i], w.evict[i].known()
	if uncertain := w.uncertain[evictIn{User: u.name}.key()]; len(u.tokens) >= evictPerUser || uncertain && (len(known) == 0 || rng.IntN(20) == 0) {
		u, known = &evictUser{name: fmt.Sprintf("evict-%d", w.seq.Add(1))}, nil
		w.evict[i] = u
	}
	in := evictIn{Op: evictAuthorize, User: u.name}
	create := len(known) == 0 || rng.IntN(3) == 0 && !w.uncertain[in.key()]
	if create {
		in.Op, in.N = evictCreate, len(u.tokens)
		u.tokens = append(u.tokens, "")
	} else {
		in.N = known[rng.IntN(len(known))]
	}
	tok := u.tokens[in.N]
	w.mu.Unlock()
	call := time.Now()
	var r reply
	if create {
		r = g.do("POST", "/v1/sessions", map[string]any{"userId": u.name, "authLevel": "BASIC",
			"idleTimeoutSeconds": 86400, "absoluteTimeoutSeconds": 86400}, "Authorization", w.admin)
	} else {
		r = g.do("GET", "/v1/authorize", nil, "X-Session-Token", tok)
	}
	ret := time.Now()
	in.Via = g.url
	out := evictOut{Unknown: unknown(r.status), OK: r.status/100 == 2}
	if !create && out.Unknown {
		return
	}
	if create && r.status == http.StatusCreated {
		var s struct{ Token string }
		if r.decode(&s) != nil || s.Token == "" {
			out.Unknown, out.OK = true, false
		} else {
			w.mu.Lock()
			u.tokens[in.N] = s.Token
			w.mu.Unlock()
		}
	}
	w.record("evictions", c, in, out, call, ret, out.Unknown)
}

// evictHistories: three sessions of a user live after the cap of two was reached, an evicted
// session authorizing after its replacement was seen, and the legal neighbours.
func evictHistories() []knownHistory {
	create := func(n int) evictIn { return evictIn{Op: evictCreate, User: "u", N: n} }
	auth := func(n int) evictIn { return evictIn{Op: evictAuthorize, User: "u", N: n} }
	ok, refused, lost := evictOut{OK: true}, evictOut{}, evictOut{Unknown: true}
	m := evictModel.ToModel()
	three := []porcupine.Operation{op(0, 0, 10, create(0), ok), op(0, 20, 30, create(1), ok), op(0, 40, 50, create(2), ok)}
	with := func(ops ...porcupine.Operation) []porcupine.Operation { return append(three[:3:3], ops...) }
	return []knownHistory{
		{"every session of a user authorized past the cap", m, with(
			op(1, 60, 70, auth(0), ok), op(1, 80, 90, auth(1), ok), op(1, 100, 110, auth(2), ok)), false},
		{"an evicted session authorized after the one kept was", m, with(
			op(1, 60, 70, auth(1), ok), op(1, 80, 90, auth(0), ok), op(1, 100, 110, auth(1), ok)), false},
		{"the cap's sessions authorized, the evicted one refused", m, with(
			op(1, 60, 70, auth(0), refused), op(1, 80, 90, auth(1), ok), op(1, 100, 110, auth(2), ok)), true},
		{"a session authorized while the create that evicts it runs", m, []porcupine.Operation{
			op(0, 0, 10, create(0), ok), op(0, 20, 30, create(1), ok), op(0, 40, 70, create(2), ok),
			op(1, 45, 50, auth(0), ok), op(1, 80, 90, auth(1), ok), op(1, 100, 110, auth(2), ok)}, true},
		{"a create whose answer was lost may have evicted", m, []porcupine.Operation{
			op(0, 0, 10, create(0), ok), op(0, 20, 30, create(1), ok), op(0, 40, -1, create(2), lost),
			op(1, 60, 70, auth(0), refused), op(1, 80, 90, auth(1), ok)}, true},
	}
}
