package robustness

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

// The models on small hand-written histories (no Redis): each refuses the history that breaks
// its property and accepts its close, legal neighbour, so a run's 0 is the checker's verdict,
// not a model that accepts everything.

// op is an operation from call to ret (ret < 0: the result was never learned).
func op(client int, call, ret int64, in, out any) porcupine.Operation {
	if ret < 0 {
		ret = 1 << 40
	}
	return porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call, Return: ret}
}

func TestModelsOnKnownHistories(t *testing.T) {
	authorize := func(tok string, initial bool) sessionIn {
		return sessionIn{Op: opAuthorize, Session: "s", Token: tok, Initial: initial}
	}
	revoke := sessionIn{Op: opRevoke, Session: "s", ID: "s", FirstID: true}
	rotate := sessionIn{Op: opRotate, Session: "s", ID: "s", FirstID: true}
	logout := sessionIn{Op: opLogout, Session: "s", Token: "t0", Initial: true}
	ok, refused, lost := sessionOut{OK: true}, sessionOut{}, sessionOut{Unknown: true}
	patch := func(ifMatch int64, c string) quoteIn {
		return quoteIn{Op: opPatch, Quote: "q", IfMatch: ifMatch, Customer: c}
	}
	read := quoteIn{Op: opRead, Quote: "q"}
	cases := []struct {
		name  string
		model porcupine.Model
		ops   []porcupine.Operation
		legal bool
	}{
		{"session authorized after an acknowledged revoke", newSessionModel(false), []porcupine.Operation{
			op(0, 0, 10, revoke, ok), op(1, 20, 30, authorize("t0", true), ok)}, false},
		{"session authorized concurrently with a revoke", newSessionModel(false), []porcupine.Operation{
			op(0, 0, 10, revoke, ok), op(1, 5, 30, authorize("t0", true), ok)}, true},
		{"session revoke whose answer was lost, then authorized", newSessionModel(false), []porcupine.Operation{
			op(0, 0, -1, revoke, lost), op(1, 20, 30, authorize("t0", true), ok)}, true},
		{"old token authorized after an acknowledged rotation", newSessionModel(false), []porcupine.Operation{
			op(0, 0, 10, rotate, sessionOut{OK: true, Token: "t1", ID: "s1"}), op(1, 20, 30, authorize("t0", true), ok)}, false},
		{"new token authorized after rotation, old refused", newSessionModel(false), []porcupine.Operation{
			op(0, 0, 10, rotate, sessionOut{OK: true, Token: "t1", ID: "s1"}), op(1, 20, 30, authorize("t1", false), ok),
			op(1, 40, 50, authorize("t0", true), refused)}, true},
		{"revoke by the id before a rotation ends the session only under stable ids", newSessionModel(true), []porcupine.Operation{
			op(0, 0, 10, rotate, sessionOut{OK: true, Token: "t1", ID: "s1"}), op(0, 20, 30, revoke, ok),
			op(1, 40, 50, authorize("t1", false), ok)}, false},
		// A logout answered 204 is recorded as its authentication and its effect over one interval.
		{"two logouts with one token at once both answered", newSessionModel(false), []porcupine.Operation{
			op(0, 0, 10, authorize("t0", true), ok), op(0, 0, 10, logout, ok),
			op(1, 1, 11, authorize("t0", true), ok), op(1, 1, 11, logout, ok),
			op(1, 20, 30, authorize("t0", true), refused)}, true},
		{"a logout answered after another logout was", newSessionModel(false), []porcupine.Operation{
			op(0, 0, 10, authorize("t0", true), ok), op(0, 0, 10, logout, ok),
			op(1, 20, 30, authorize("t0", true), ok), op(1, 20, 30, logout, ok)}, false},
		{"two self-revocations of a root at once both answered", tokenModel, []porcupine.Operation{
			op(0, 0, 10, tokenIn{Op: opAuthorize, Family: "f", Node: 0}, tokenOut{OK: true}),
			op(0, 0, 10, tokenIn{Op: opRevoke, Family: "f", Node: 0}, tokenOut{OK: true}),
			op(1, 1, 11, tokenIn{Op: opAuthorize, Family: "f", Node: 0}, tokenOut{OK: true}),
			op(1, 1, 11, tokenIn{Op: opRevoke, Family: "f", Node: 0}, tokenOut{OK: true})}, true},
		{"token child authorized after its root's acknowledged revocation", tokenModel, []porcupine.Operation{
			op(0, 0, 10, tokenIn{Op: opRevoke, Family: "f", Node: 0}, tokenOut{OK: true}),
			op(1, 20, 30, tokenIn{Op: opAuthorize, Family: "f", Node: 2}, tokenOut{OK: true})}, false},
		{"token sibling authorized after a child's revocation", tokenModel, []porcupine.Operation{
			op(0, 0, 10, tokenIn{Op: opRevoke, Family: "f", Node: 1}, tokenOut{OK: true}),
			op(1, 20, 30, tokenIn{Op: opAuthorize, Family: "f", Node: 2}, tokenOut{OK: true})}, true},
		{"quote write acknowledged then lost", quoteModel, []porcupine.Operation{
			op(0, 0, 10, patch(1, "c1"), quoteOut{Status: 200, Version: 2, Customer: "c1"}),
			op(1, 20, 30, read, quoteOut{Status: 200, Version: 1, Customer: "c0"})}, false},
		{"quote compare-and-set: one of two writers at the same version wins", quoteModel, []porcupine.Operation{
			op(0, 0, 10, patch(1, "c1"), quoteOut{Status: 200, Version: 2, Customer: "c1"}),
			op(1, 0, 10, patch(1, "c2"), quoteOut{Status: 412}),
			op(1, 20, 30, read, quoteOut{Status: 200, Version: 2, Customer: "c1"})}, true},
		{"quote: both writers at the same version win", quoteModel, []porcupine.Operation{
			op(0, 0, 10, patch(1, "c1"), quoteOut{Status: 200, Version: 2, Customer: "c1"}),
			op(1, 0, 10, patch(1, "c2"), quoteOut{Status: 200, Version: 2, Customer: "c2"})}, false},
		{"quote submitted twice", quoteModel, []porcupine.Operation{
			op(0, 0, 10, quoteIn{Op: opSubmit, Quote: "q", IfMatch: 1}, quoteOut{Status: 200, Version: 2, Customer: "c0", Submitted: true}),
			op(1, 20, 30, quoteIn{Op: opSubmit, Quote: "q", IfMatch: 2}, quoteOut{Status: 200, Version: 3, Customer: "c0", Submitted: true})}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := porcupine.CheckOperations(c.model, c.ops); got != c.legal {
				t.Errorf("linearizable = %v, want %v", got, c.legal)
			}
		})
	}
}
