package robustness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/rueidis"
)

// Idempotent creates: clients send the same POST /v1/cases or POST /v1/quotes with the same
// Idempotency-Key (and body) at once, through different replicas, and read the object an
// answer named. The model: at most one object per key, and every acknowledged answer (201,
// first or replayed) names that one object, which a later read finds. After the run the keys'
// objects are also counted in Redis (objectsPerKey): at most one hash per key.

const (
	idemPool     = 4 // keys in use at once: several clients send each
	idemAttempts = 8 // sends of one key before a fresh key replaces it
)

// idemKey is one Idempotency-Key as the clients use it.
type idemKey struct {
	key, kind, ref string // kind "case" or "quote"; ref: the object's subjectRef or customerId
	body           map[string]any
	attempts       int
	id             string // the id an answer named ("" until one did)
}

func (w *world) newIdemKey() *idemKey {
	n := w.seq.Add(1)
	w.idemKeys.Add(1)
	k := &idemKey{key: fmt.Sprintf("robustness-key-%d", n), ref: fmt.Sprintf("idem-%d", n), kind: "case"}
	if n%2 == 0 {
		k.kind = "quote"
		k.body = map[string]any{"customerId": k.ref, "salesChannel": "web", "currency": "EUR"}
	} else {
		k.body = map[string]any{"subjectRef": k.ref, "assignedTeam": "t0", "dueAt": time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339), "reason": "created"}
	}
	return k
}

type idemOp string

const (
	idemCreate idemOp = "create"
	idemRead   idemOp = "read"
)

type idemIn struct {
	Op  idemOp
	Key string
	ID  string // read: the id read
}

func (in idemIn) key() string { return "key " + in.Key }
func (in idemIn) reads() bool { return in.Op == idemRead }

type idemOut struct {
	Unknown bool
	Code    int
	ID      string // create answered 201: the id it named
	Problem string // an error answer's problem type (its last segment), for the saved history
}

// idemState is the key's object: "" none yet, "?" made by a create whose answer was lost.
type idemState string

var idemModel = porcupine.Model{
	Partition: partitionByKey,
	Init:      func() any { return idemState("") },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(idemState), input.(idemIn), output.(idemOut)
		named := func(id string) bool { return s == "" || s == "?" || string(s) == id }
		switch {
		case in.Op == idemCreate && out.Unknown:
			if s == "" {
				return true, idemState("?")
			}
			return true, s
		case in.Op == idemCreate && out.Code == http.StatusCreated:
			return named(out.ID), idemState(out.ID)
		case in.Op == idemCreate && out.Code == http.StatusConflict:
			return true, s // the key is in flight
		case in.Op == idemRead && out.Code == http.StatusOK:
			return s != "" && named(in.ID), idemState(in.ID)
		}
		return false, s // a read answered 404 after the create it names was acknowledged; a 422
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(idemIn), output.(idemOut)
		res := "?"
		if !out.Unknown {
			res = strings.TrimSpace(fmt.Sprintf("%d %s%s", out.Code, out.ID, out.Problem))
		}
		if in.Op == idemRead {
			return fmt.Sprintf("read(%s) → %s", in.ID, res)
		}
		return "create → " + res
	},
	DescribeState: func(state any) string { return fmt.Sprintf("object %q", string(state.(idemState))) },
}

// idemStep sends one keyed create, or reads the object a create's answer named.
func (w *world) idemStep(c int, rng *rand.Rand, g *gateway) {
	w.mu.Lock()
	i := rng.IntN(len(w.idem))
	k := w.idem[i]
	id := k.id
	op := idemCreate
	if id != "" && rng.IntN(3) == 0 {
		op = idemRead
	} else {
		k.attempts++
		if k.attempts >= idemAttempts {
			w.idem[i] = w.newIdemKey() // this send is the key's last
		}
	}
	w.mu.Unlock()
	in := idemIn{Op: op, Key: k.key}
	path := "/v1/" + k.kind + "s"
	call := time.Now()
	var r reply
	if op == idemRead {
		in.ID = id
		r = g.do("GET", path+"/"+id, nil, "Authorization", w.admin)
	} else {
		r = g.do("POST", path, k.body, "Authorization", w.admin, "Idempotency-Key", k.key)
	}
	ret := time.Now()
	out := idemOut{Unknown: unknown(r.status), Code: r.status}
	if out.Unknown {
		if op == idemRead {
			return
		}
		out.Code = 0
	}
	if r.status >= 400 {
		out.Problem = problemSlug(r)
	}
	if r.status == http.StatusCreated {
		var v struct{ CaseID, QuoteID string }
		_ = r.decode(&v)
		out.ID = v.CaseID + v.QuoteID
		w.mu.Lock()
		if k.id == "" {
			k.id = out.ID
		}
		w.mu.Unlock()
	}
	// Not w.record: a create whose answer was lost leaves its key in use, since sending it
	// again is what a key is for (and the model's state is one id, so the checker stays fast).
	w.h["creates"].add(c, in, out, call, ret, out.Unknown)
}

// objectsPerKey counts, on the primaries (nodes: one, or a cluster's masters), the case and
// quote hashes each key's create made (by their subjectRef or customerId): a key with more
// than one is a violation. The result is a row: operations = keys sent, objects = hashes
// found.
func (w *world) objectsPerKey(r result, nodes ...rueidis.Client) (result, error) {
	refs := map[string]int{}
	for _, c := range nodes {
		if err := w.countObjects(c, refs, &r); err != nil {
			return r, err
		}
	}
	r.Model, r.Ops = "creates-objects", int(w.idemKeys.Load())
	for ref, n := range refs {
		if n > 1 {
			r.Violations++
			r.Notes = append(r.Notes, fmt.Sprintf("%s: %d objects", ref, n))
		}
	}
	return r, nil
}

// countObjects adds the case and quote hashes of the node c holds to refs, by key.
func (w *world) countObjects(c rueidis.Client, refs map[string]int, r *result) error {
	for _, typ := range []string{"case", "quote"} {
		cursor := uint64(0)
		for {
			e, err := c.Do(context.Background(), c.B().Scan().Cursor(cursor).Match(w.prefix+":v1:"+typ+":*").Count(1000).Type("hash").Build()).AsScanEntry()
			if err != nil {
				return err
			}
			for _, key := range e.Elements {
				vals, err := c.Do(context.Background(), c.B().Hmget().Key(key).Field("subjectRef", "customerId").Build()).ToArray()
				if err != nil {
					return err
				}
				for _, v := range vals {
					if s, err := v.ToString(); err == nil && strings.HasPrefix(s, "idem-") {
						refs[s]++
						r.Objects++
					}
				}
			}
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
	return nil
}
