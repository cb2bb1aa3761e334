package robustness

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// Evictions at the session cap: the replicas run with GATEWAY_SESSION_MAX_PER_USER=sessionCap
// (the default policy, evict-oldest), and a few users (evictUsers) get sessions created for
// them during the run, by whichever clients and replicas, beyond the cap. The model checks
// what the gateway promises, no more:
//
//   - an acknowledged eviction holds: a create that evicts is a credential-ending write,
//     confirmed by a replica before it is answered, so the session it evicted (the answer does
//     not say which: the model tries each) authorizes on no replica afterwards;
//   - at most sessionCap of a user's sessions are live on the copy that survives: a session
//     whose token authorizes must be live there, unless it is on a lost copy (below).
//
// A create that evicts nothing ends no credential, so it is not confirmed (by design): during
// a cut (faultCounts.Cuts: a primary cut off from its replica, a split, a zombie) the cut-off
// primary is a second copy, where such creates are acknowledged and their sessions authorize
// until the copy is discarded (finding 12). So within a cut the model keeps two copies
// (evictState): the one that survives and a lost one, forked from it at some moment of the
// cut and discarded by its end. Each gateway replica serves from one copy at a time: the one
// it is first seen on after the fork, and it may change copy at most twice in a cut (following
// a failover, and back when the Sentinels undo it: finding 7). An acknowledged create lands
// on its gateway's copy, on the lost one only if it evicts nothing there (an eviction there
// would need a replica); an authorization succeeds only with the session live on its
// gateway's copy; an answer never learnt may have done anything on either copy, or nothing.
// Outside a cut there is one copy, as before.

const (
	sessionCap = 2
	evictUsers = 3
	// evictPerUser bounds the sessions made for one user (the model's live set is a bit set);
	// past it the user is replaced by a fresh one, as is, 1 pick in 20, a user one of whose
	// creates went unanswered (its clients create no more for it: see world.uncertain), so
	// evictions go on through a long run with many faults.
	evictPerUser = 60
	// forkLead: how long before a cut's recorded start an operation may already have run on
	// the copy the cut will discard (what the primary took in its last moments and had not yet
	// sent its replica: replication lags by milliseconds on loopback, more on a loaded machine).
	forkLead = time.Second
	// copyMoves: how often a gateway may change copy within a cut.
	copyMoves = 2
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
	// G is the gateway that answered (its index), Via its URL, shown in the visualization.
	G   int
	Via string
	// Cut: the cut (1, 2, …) the operation ran in, at least in part (set by markCuts after
	// the run; 0: none), when a second copy may exist.
	Cut int
}

func (in evictIn) key() string { return "user " + in.User }

// duringCut is in marked as run during the kth cut (markCuts).
func (in evictIn) duringCut(k int) any { in.Cut = k; return in }

type evictOut struct {
	Unknown bool
	OK      bool
}

// evictLive: bit n set = the user's Nth session is live.
type evictLive uint64

// evictState is the copy that survives (Live) and, during cut Fork, the one that will be lost
// (Lost), with each gateway's copy: OnLost, Placed (bit g: gateway g has been seen on a copy
// since the fork) and Moves (how often it changed copy).
type evictState struct {
	Live, Lost     evictLive
	Fork           int
	OnLost, Placed uint8
	Moves          [8]uint8
}

// added is every set live can become by the create of session n: n live, and, past the cap,
// one of the others evicted (which one the answer does not say); evicted names it (0: none).
func (live evictLive) added(n int) (sets, evicted []evictLive) {
	live |= 1 << n
	if bits.OnesCount64(uint64(live)) <= sessionCap {
		return []evictLive{live}, []evictLive{0}
	}
	for i := range 64 {
		if i != n && live&(1<<i) != 0 {
			sets, evicted = append(sets, live&^(1<<i)), append(evicted, 1<<i)
		}
	}
	return sets, evicted
}

// created is every state an acknowledged create of n leaves s in: on the surviving copy (an
// eviction there is confirmed, so the evicted session is gone from the lost copy too), or, on
// the lost copy, only if it evicts nothing there.
func (s evictState) created(n int, onLost bool) []any {
	var out []any
	if !onLost {
		sets, evicted := s.Live.added(n)
		for i, live := range sets {
			t := s
			t.Live, t.Lost = live, s.Lost&^evicted[i]
			out = append(out, t)
		}
		return out
	}
	if lost, ev := s.Lost.added(n); ev[0] == 0 {
		t := s
		t.Lost = lost[0]
		out = append(out, t)
	}
	return out
}

// tried is every state a create of n whose answer was never learnt leaves s in: nothing, or
// n added to either copy with any eviction there (unconfirmed: the other copy keeps it).
func (s evictState) tried(n int) []any {
	out := []any{s}
	sets, _ := s.Live.added(n)
	for _, live := range sets {
		t := s
		t.Live = live
		out = append(out, t)
	}
	if s.Fork != 0 {
		sets, _ = s.Lost.added(n)
		for _, lost := range sets {
			t := s
			t.Lost = lost
			out = append(out, t)
		}
	}
	return out
}

// before is every state s may be in just before an operation of cut k (0: none): outside a
// cut, or in another one, a lost copy is gone; within one the copies may fork (the lost one a
// copy of the surviving one) at any moment.
func (s evictState) before(k int) []evictState {
	if s.Fork == k {
		return []evictState{s}
	}
	one := evictState{Live: s.Live}
	if k == 0 {
		return []evictState{one}
	}
	return []evictState{one, {Live: s.Live, Lost: s.Live, Fork: k}}
}

// on is every copy gateway g may serve from in s (forked), with the state that records it:
// where it was, or, once per move allowed, the other.
func (s evictState) on(g int) (states []evictState, onLost []bool) {
	bit := uint8(1) << g
	if s.Placed&bit == 0 {
		for _, lost := range []bool{false, true} {
			t := s
			t.Placed |= bit
			if lost {
				t.OnLost |= bit
			}
			states, onLost = append(states, t), append(onLost, lost)
		}
		return states, onLost
	}
	states, onLost = []evictState{s}, []bool{s.OnLost&bit != 0}
	if s.Moves[g] < copyMoves {
		t := s
		t.OnLost ^= bit
		t.Moves[g]++
		states, onLost = append(states, t), append(onLost, t.OnLost&bit != 0)
	}
	return states, onLost
}

var evictModel = porcupine.NondeterministicModel{
	Partition: partitionByKey,
	Init:      func() []any { return []any{evictState{}} },
	Step: func(state, input, output any) []any {
		in, out := input.(evictIn), output.(evictOut)
		s := state.(evictState)
		switch {
		case in.Op == evictCreate && out.Unknown:
			// Its effect may come at any time after its call, on either copy: it moves no
			// gateway and discards no fork, but may come after one.
			next := s.tried(in.N)
			if in.Cut != 0 && s.Fork == 0 {
				next = append(next, evictState{Live: s.Live, Lost: s.Live, Fork: in.Cut}.tried(in.N)...)
			}
			return next
		case in.Op == evictCreate && !out.OK, in.Op == evictAuthorize && !out.OK:
			return []any{s} // refusals are always accepted and change nothing
		}
		var next []any
		for _, s := range s.before(in.Cut) {
			states, onLost := []evictState{s}, []bool{false}
			if s.Fork != 0 {
				states, onLost = s.on(in.G)
			}
			for i, t := range states {
				switch {
				case in.Op == evictCreate:
					next = append(next, t.created(in.N, onLost[i])...)
				case onLost[i] && t.Lost&(1<<in.N) != 0, !onLost[i] && t.Live&(1<<in.N) != 0:
					next = append(next, t)
				}
			}
		}
		return next
	},
	Equal: func(a, b any) bool { return a.(evictState) == b.(evictState) },
	DescribeOperation: func(input, output any) string {
		in, out := input.(evictIn), output.(evictOut)
		cut := ""
		if in.Cut != 0 {
			cut = fmt.Sprintf(" (during cut %d)", in.Cut)
		}
		return fmt.Sprintf("%s(session %d) → %s via %s%s", in.Op, in.N, outcome(out.Unknown, out.OK), in.Via, cut)
	},
	DescribeState: func(state any) string {
		s := state.(evictState)
		if s.Fork == 0 {
			return fmt.Sprintf("live %b", uint64(s.Live))
		}
		return fmt.Sprintf("live %b, on the copy to be lost %b (gateways there: %b)", uint64(s.Live), uint64(s.Lost), s.OnLost&s.Placed)
	},
}

// cutMarked is an input that the check marks when it ran during a cut.
type cutMarked interface{ duringCut(k int) any }

// markCuts marks the inputs of ops (those that take a mark) whose call or return falls within
// a cut, its start moved forkLead earlier (ns from start, as the history records them), with
// the first such cut.
func markCuts(ops []porcupine.Operation, start time.Time, cuts [][2]time.Time) []porcupine.Operation {
	for i, op := range ops {
		in, ok := op.Input.(cutMarked)
		for k, c := range cuts {
			from, to := c[0].Add(-forkLead).Sub(start).Nanoseconds(), c[1].Sub(start).Nanoseconds()
			if ok && op.Return >= from && op.Call <= to {
				ops[i].Input = in.duringCut(k + 1)
				break
			}
		}
	}
	return ops
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
	in.G, in.Via = slices.Index(w.gws, g), g.url
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
// session authorizing after its replacement was seen, and the legal neighbours; then the
// cuts': the Sentinel split's shape (each side's creates below the cap there, each side
// authorizing its own: legal only during a cut), an acknowledged eviction during a cut that
// the other copy ignores, the durability-off control's shape (evictions acknowledged on the
// cut-off copy, undone by the failover), and a create in flight at the cut applied on the
// cut-off copy alone.
func evictHistories() []knownHistory {
	create := func(n int) evictIn { return evictIn{Op: evictCreate, User: "u", N: n} }
	auth := func(n int) evictIn { return evictIn{Op: evictAuthorize, User: "u", N: n} }
	cut := func(in evictIn) evictIn { in.Cut = 1; return in }
	via := func(in evictIn, g int) evictIn { in.G, in.Via = g, string(rune('a'+g)); return in }
	ok, refused, lost := evictOut{OK: true}, evictOut{}, evictOut{Unknown: true}
	m := evictModel.ToModel()
	three := []porcupine.Operation{op(0, 0, 10, create(0), ok), op(0, 20, 30, create(1), ok), op(0, 40, 50, create(2), ok)}
	with := func(ops ...porcupine.Operation) []porcupine.Operation { return append(three[:3:3], ops...) }
	two := func(ops ...porcupine.Operation) []porcupine.Operation {
		return append([]porcupine.Operation{op(0, 0, 10, create(0), ok), op(0, 20, 30, create(1), ok)}, ops...)
	}
	// split is finding 12's shape: gateway a on the cut-off primary, b on the promoted one.
	split := func(mark func(evictIn) evictIn) []porcupine.Operation {
		a, b := func(in evictIn) evictIn { return mark(via(in, 0)) }, func(in evictIn) evictIn { return mark(via(in, 1)) }
		return []porcupine.Operation{
			op(0, 0, 10, a(create(0)), ok), op(1, 5, 15, b(create(2)), ok), op(0, 20, 30, a(create(1)), ok),
			op(1, 25, 35, b(create(3)), ok), op(0, 40, 50, a(auth(0)), ok), op(1, 45, 55, b(auth(2)), ok),
			op(0, 60, 70, a(auth(1)), ok), op(1, 65, 75, b(auth(3)), ok),
			op(0, 100, 110, auth(0), refused), op(0, 120, 130, auth(2), ok), op(1, 140, 150, auth(3), ok)}
	}
	same := func(in evictIn) evictIn { return in }
	// alternating: during a cut, create 2 and its authorization only on the surviving copy
	// (it evicted), create 3 and its only on the lost one (room there after 0 left both);
	// one gateway would have to change copy three times, two need not.
	alternating := func(g, h int) []porcupine.Operation {
		return two(op(1, 40, 50, cut(via(create(2), g)), ok), op(1, 60, 70, cut(via(create(3), h)), ok),
			op(1, 80, 90, cut(via(auth(2), g)), ok), op(1, 100, 110, cut(via(auth(3), h)), ok),
			op(1, 200, 210, auth(1), ok), op(1, 220, 230, auth(2), ok), op(1, 240, 250, auth(3), refused))
	}
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
		{"a split: each side's creates evict nothing there and each side authorizes its own", m, split(cut), true},
		{"the split's history with no cut: four sessions authorized for a cap of two", m, split(same), false},
		{"an evicted session authorized again during a cut", m, with(
			op(1, 60, 70, auth(1), ok), op(1, 80, 90, auth(2), ok), op(1, 100, 110, cut(auth(0)), ok)), false},
		{"an eviction acknowledged during a cut, the evicted session authorized on the other copy", m, two(
			op(1, 40, 50, cut(create(2)), ok), op(1, 60, 70, cut(auth(0)), ok), op(1, 80, 90, cut(auth(1)), ok)), false},
		{"evictions acknowledged during a cut, undone after it (durability off)", m, two(
			op(1, 40, 50, cut(create(2)), ok), op(1, 60, 70, cut(create(3)), ok), op(1, 80, 90, cut(auth(2)), ok),
			op(1, 100, 110, cut(auth(3)), ok), op(1, 200, 210, auth(0), ok), op(1, 220, 230, auth(1), ok)), false},
		{"a create in flight at a cut, applied on the cut-off copy alone and read there", m, two(
			op(1, 40, -1, cut(create(2)), lost), op(1, 60, 70, cut(auth(2)), ok), op(1, 80, 90, cut(auth(0)), refused),
			op(1, 200, 210, auth(0), ok), op(1, 220, 230, auth(1), ok), op(1, 240, 250, auth(2), refused)), true},
		{"during a cut, each gateway on a copy of its own", m, alternating(0, 1), true},
		{"during a cut, one gateway changing copy three times", m, alternating(0, 0), false},
		{"the same with no cut", m, two(
			op(1, 40, -1, create(2), lost), op(1, 60, 70, auth(2), ok), op(1, 80, 90, auth(0), refused),
			op(1, 200, 210, auth(0), ok), op(1, 220, 230, auth(1), ok), op(1, 240, 250, auth(2), refused)), false},
	}
}

// TestMarkCuts: an eviction operation within a cut, or within forkLead before it, or whose
// answer was never learnt (it may take effect in the cut), is marked; one answered well before
// the cut or starting after it is not; other models' inputs are left as they were.
func TestMarkCuts(t *testing.T) {
	start := time.Unix(0, 0)
	at := func(d time.Duration) int64 { return int64(d) }
	cuts := [][2]time.Time{{start.Add(10 * time.Second), start.Add(20 * time.Second)}}
	in := evictIn{Op: evictAuthorize, User: "u"}
	ops := markCuts([]porcupine.Operation{
		op(0, at(time.Second), at(2*time.Second), in, evictOut{}),
		op(0, at(9*time.Second+500*time.Millisecond), at(9*time.Second+600*time.Millisecond), in, evictOut{}),
		op(0, at(15*time.Second), at(16*time.Second), in, evictOut{}),
		op(0, at(time.Second), -1, in, evictOut{Unknown: true}),
		op(0, at(21*time.Second), at(22*time.Second), in, evictOut{}),
		op(0, at(15*time.Second), at(16*time.Second), quoteIn{Op: opRead, Quote: "q"}, quoteOut{}),
	}, start, cuts)
	for i, want := range []bool{false, true, true, true, false} {
		if got := ops[i].Input.(evictIn).Cut == 1; got != want {
			t.Errorf("operation %d: marked %v, want %v", i, got, want)
		}
	}
	if _, ok := ops[5].Input.(quoteIn); !ok {
		t.Errorf("a quote read became %T", ops[5].Input)
	}
}

// oneCopyViolations counts the users whose history the evictions model refuses with no
// operation marked as during a cut (one copy throughout): the split brains the cuts' second
// copy explains (finding 12), reported beside the check's verdict.
func oneCopyViolations(h *history) int {
	m := evictModel.ToModel()
	n := 0
	for _, part := range m.Partition(h.operations()) {
		if porcupine.CheckOperationsTimeout(m, part, checkTimeout) == porcupine.Illegal {
			n++
		}
	}
	return n
}
