package robustness

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/anishathalye/porcupine"
)

// The models. Each input names its object (Key), and each model is partitioned by object:
// a history is linearizable when every object's is. An output with Unknown set is an
// operation whose result the client never learned: the model applies its effect when its
// precondition holds and accepts it either way (history.go places it last).
//
// The credential models check safety, the property a caller relies on: a success (an
// authorization, and the authentication inside a logout or a self-revocation answered 2xx)
// must be explained by a linearization in which the credential was live. A refusal (401, 404) is always accepted:
// it is an availability question (a write that was refused with 503 yet took effect on a
// primary that then died, say), not a safety one.

// keyed is an input that names its object.
type keyed interface{ key() string }

// partitionByKey splits a history by object.
func partitionByKey(history []porcupine.Operation) [][]porcupine.Operation {
	idx := map[string]int{}
	var out [][]porcupine.Operation
	for _, op := range history {
		k := op.Input.(keyed).key()
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], op)
	}
	return out
}

// Sessions: each session holds one live token at a time; revoke (DELETE /v1/sessions/{id}),
// logout (DELETE /v1/session), rotation (POST .../rotate, which hands out a new token) and an
// MFA step-up's verify (POST .../mfa/verify after a challenge: a new token too, the same id)
// end the old one.

type sessionOp string

const (
	opAuthorize sessionOp = "authorize"
	opRevoke    sessionOp = "revoke"
	opLogout    sessionOp = "logout"
	opRotate    sessionOp = "rotate"
	opVerify    sessionOp = "verify" // a step-up's verify: to the token, a rotation
)

type sessionIn struct {
	Op      sessionOp
	Session string // the id the create returned: the object
	// Token is the token sent (authorize, logout); Initial: it is the one the create returned.
	Token   string
	Initial bool
	// ID is the id sent (revoke, rotate); FirstID: it is the one the create returned.
	ID      string
	FirstID bool
	// LoginMFA: the session was created with mfaRequired, so its token authorizes only once a
	// verify completed the login (false on a logout's authentication: a logout accepts it).
	LoginMFA bool
}

func (in sessionIn) key() string { return "session " + in.Session }

type sessionOut struct {
	Unknown bool
	OK      bool   // 200/204
	Token   string // rotate, verify: the new token
	ID      string // rotate, verify: the id it answered
}

// sessionState: Token and ID are the live token and id ("" = the ones the create returned,
// "?" = ones a rotation or verify whose answer was lost handed out); Ended: revoked or logged
// out; Verified: a verify took effect (for a session created with mfaRequired, its login is
// complete; a rotation keeps it as it was).
type sessionState struct {
	Token, ID string
	Ended     bool
	Verified  bool
}

func (s sessionState) live(in sessionIn) bool {
	return !s.Ended && (!in.LoginMFA || s.Verified) && (s.Token == "" && in.Initial || s.Token != "" && s.Token == in.Token)
}

// names reports whether in's id names the session now. With stableIDs (the brief's contract:
// "the id is stable for the session's life", the default) the session's id names it for life;
// without, only the latest id a rotation answered does.
func (s sessionState) names(in sessionIn, stableIDs bool) bool {
	return stableIDs || s.ID == "" && in.FirstID || s.ID != "" && s.ID == in.ID
}

// newSessionModel is the sessions model; see sessionState.names for stableIDs.
func newSessionModel(stableIDs bool) porcupine.Model {
	return porcupine.Model{
		Partition: partitionByKey,
		Init:      func() any { return sessionState{} },
		Step: func(state, input, output any) (bool, any) {
			s, in, out := state.(sessionState), input.(sessionIn), output.(sessionOut)
			switch in.Op {
			case opAuthorize:
				return !out.OK || s.live(in), s
			case opLogout:
				switch {
				case out.Unknown:
					s.Ended = s.Ended || s.live(in)
					return true, s
				case out.OK:
					// The token's authentication is the authorize the workload records with
					// the same interval (authenticatedWrite); here only the effect.
					if s.live(in) {
						s.Ended = true
					}
					return true, s
				}
				return true, s
			case opRevoke:
				if (out.OK || out.Unknown) && s.names(in, stableIDs) {
					s.Ended = true
				}
				return true, s
			case opRotate, opVerify:
				switch {
				case out.Unknown:
					if !s.Ended && s.names(in, stableIDs) {
						s.Token, s.ID = "?", "?"
						s.Verified = s.Verified || in.Op == opVerify
					}
					return true, s
				case out.OK:
					// With stable ids a rotation must answer the session's own id.
					kept := !stableIDs || out.ID == in.Session
					return !s.Ended && s.names(in, stableIDs) && kept, sessionState{Token: out.Token, ID: out.ID, Verified: s.Verified || in.Op == opVerify}
				}
				return true, s
			}
			return false, s
		},
		DescribeOperation: func(input, output any) string {
			in, out := input.(sessionIn), output.(sessionOut)
			login := ""
			if in.LoginMFA {
				login = " (login MFA)"
			}
			switch in.Op {
			case opRevoke:
				return fmt.Sprintf("revoke(%s)%s → %s", short(in.ID), login, outcome(out.Unknown, out.OK))
			case opRotate, opVerify:
				return fmt.Sprintf("%s(%s)%s → %s %s %s", in.Op, short(in.ID), login, outcome(out.Unknown, out.OK), short(out.ID), short(out.Token))
			}
			return fmt.Sprintf("%s(%s)%s → %s", in.Op, short(in.Token), login, outcome(out.Unknown, out.OK))
		},
		DescribeState: func(state any) string {
			s := state.(sessionState)
			return fmt.Sprintf("id %s token %s ended=%v verified=%v", short(s.ID), short(s.Token), s.Ended, s.Verified)
		},
	}
}

// Tokens: a family is a root token minted over HTTP and children it minted; revoking a token
// revokes it and, for the root, every child (the cascade). Each token revokes itself
// (DELETE /v1/tokens/{own id}); authorize is GET /v1/authorize with the token as bearer.

type tokenIn struct {
	Op     sessionOp // opAuthorize or opRevoke
	Family string
	Node   int // 0 the root, 1.. its children
}

func (in tokenIn) key() string { return "family " + in.Family }

type tokenOut struct {
	Unknown bool
	OK      bool
}

// tokenState is the set of revoked nodes (bit i: node i).
type tokenState uint32

func (s tokenState) revoked(node int) bool { return s&(1<<node) != 0 }

// revoke is the state after node revoked itself: the root takes every child with it.
func (s tokenState) revoke(node int) tokenState {
	if node == 0 {
		return ^tokenState(0)
	}
	return s | 1<<node
}

var tokenModel = porcupine.Model{
	Partition: partitionByKey,
	Init:      func() any { return tokenState(0) },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(tokenState), input.(tokenIn), output.(tokenOut)
		switch {
		case in.Op == opAuthorize:
			return !out.OK || !s.revoked(in.Node), s
		case out.Unknown:
			return true, s.revoke(in.Node)
		case out.OK:
			// Its authentication is checked by the authorize recorded with it.
			return true, s.revoke(in.Node)
		}
		return true, s
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(tokenIn), output.(tokenOut)
		return fmt.Sprintf("%s(node %d) → %s", in.Op, in.Node, outcome(out.Unknown, out.OK))
	},
	DescribeState: func(state any) string { return fmt.Sprintf("revoked %03b", uint32(state.(tokenState))&7) },
}

// Quote drafts: a register (customerId) with a version (stateVersion, the ETag) and a status;
// a patch or submit with If-Match succeeds only at the current version, bumps it by one, and
// a submitted draft takes neither again. This model is two-sided: every answer is checked.

type quoteOp string

const (
	opRead   quoteOp = "read"
	opPatch  quoteOp = "patch"
	opSubmit quoteOp = "submit"
)

type quoteIn struct {
	Op       quoteOp
	Quote    string
	IfMatch  int64
	Customer string // patch: the new customerId
}

func (in quoteIn) key() string { return "quote " + in.Quote }
func (in quoteIn) reads() bool { return in.Op == opRead }

type quoteOut struct {
	Unknown bool
	Status  int // 200, 404, 409 (submitted), 412 (stale If-Match)
	// The draft as answered (200).
	Version   int64
	Customer  string
	Submitted bool
}

type quoteState struct {
	Version   int64
	Customer  string
	Submitted bool
}

// initialQuote is every draft as the workload creates it.
var initialQuote = quoteState{Version: 1, Customer: "c0"}

var quoteModel = porcupine.Model{
	Partition: partitionByKey,
	Init:      func() any { return initialQuote },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(quoteState), input.(quoteIn), output.(quoteOut)
		if in.Op == opRead {
			return out.Status == 200 && out.Version == s.Version && out.Customer == s.Customer && out.Submitted == s.Submitted, s
		}
		next := quoteState{Version: s.Version + 1, Customer: s.Customer, Submitted: true}
		if in.Op == opPatch {
			next = quoteState{Version: s.Version + 1, Customer: in.Customer}
		}
		applies := s.Version == in.IfMatch && !s.Submitted
		switch {
		case out.Unknown:
			if applies {
				return true, next
			}
			return true, s
		case out.Status == 200:
			return applies && out.Version == next.Version && out.Customer == next.Customer && out.Submitted == next.Submitted, next
		case out.Status == 412:
			return s.Version != in.IfMatch, s
		case out.Status == 409:
			return s.Version == in.IfMatch && s.Submitted, s
		}
		return false, s
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(quoteIn), output.(quoteOut)
		res := "?"
		if !out.Unknown {
			res = fmt.Sprintf("%d v%d %s submitted=%v", out.Status, out.Version, out.Customer, out.Submitted)
		}
		switch in.Op {
		case opPatch:
			return fmt.Sprintf("patch(If-Match %d, %s) → %s", in.IfMatch, in.Customer, res)
		case opSubmit:
			return fmt.Sprintf("submit(If-Match %d) → %s", in.IfMatch, res)
		}
		return "read → " + res
	},
	DescribeState: func(state any) string {
		s := state.(quoteState)
		return fmt.Sprintf("v%d %s submitted=%v", s.Version, s.Customer, s.Submitted)
	},
}

func outcome(unknown, ok bool) string {
	switch {
	case unknown:
		return "?"
	case ok:
		return "ok"
	}
	return "refused"
}

// short names a token by a hash prefix in what is written to files (never the credential).
func short(tok string) string {
	if len(tok) <= 1 {
		return tok
	}
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:4])
}
