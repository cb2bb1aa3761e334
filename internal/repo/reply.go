package repo

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/apperr"
)

// One way to call a script and read its reply. Every script answers an array whose first
// element is a status code from the fixed set below, followed by that code's payload (named in
// the script's header comment). A reply of any other shape — not an array, empty, a code that
// is not a string or not in the set, a payload of the wrong length or with a value of the wrong
// type — is an error wrapping ErrReply, never a panic and never a silent default.
//
// Every store calls its scripts through RunScript (transitions.go), or callScript and
// decodeScript where a script goes in a pipeline; quotes, cases and idempotency also declare
// each script's replies in a ReplyShapes table.

// Code is a script reply's status: the first element of its array.
type Code string

// The reply codes. A script uses the ones that apply to it; each code's payload is the
// script's own (see its header).
const (
	// CodeOK: the transition happened (or the read found its object).
	CodeOK Code = "OK"
	// CodeNotFound: no such object for this caller (another tenant's included).
	CodeNotFound Code = "NOT_FOUND"
	// CodeExists: the new object's key is taken (ids are random: never expected).
	CodeExists Code = "EXISTS"
	// CodeStale: the caller's version is not the object's (If-Match).
	CodeStale Code = "STALE"
	// CodeInvalidStatus: the object's status does not allow the transition.
	CodeInvalidStatus Code = "INVALID_STATUS"
	// CodeCorrupt: the object is missing fields or holds malformed values.
	CodeCorrupt Code = "CORRUPT"
	// CodeBound: the transition would exceed a declared bound (payload names which).
	CodeBound Code = "BOUND"
	// CodeRetry: the keys the caller declared no longer cover what the script must touch
	// (they changed since the caller's read); nothing was written. The caller reads again.
	CodeRetry Code = "RETRY"
	// CodeLimited: an attempt counter refused the attempt.
	CodeLimited Code = "LIMITED"
	// CodeNoChallenge: no live MFA challenge with that id.
	CodeNoChallenge Code = "NO_CHALLENGE"
	// CodeWrongCode: the MFA code does not match.
	CodeWrongCode Code = "WRONG_CODE"
	// CodeAlready: the transition was made before (a revocation, an escalation); it stands and
	// nothing was written.
	CodeAlready Code = "ALREADY"
	// CodeExpired: the object's expiry is not in the future by the server's clock.
	CodeExpired Code = "EXPIRED"
	// CodeIssuerGone: the issuing token is not live, or its lineage changed since it was read.
	CodeIssuerGone Code = "ISSUER_GONE"
	// CodeOutlivesIssuer: the token would expire after its issuer.
	CodeOutlivesIssuer Code = "OUTLIVES_ISSUER"
	// CodeItemNotFound: the object exists, the item of it named does not.
	CodeItemNotFound Code = "ITEM_NOT_FOUND"
	// CodeOverflow: an amount would exceed its bound (payload names which).
	CodeOverflow Code = "OVERFLOW"
	// CodeDiscount: the discount would exceed the subtotal.
	CodeDiscount Code = "DISCOUNT"
	// CodeMaxEscalation: the case is at its highest escalation level.
	CodeMaxEscalation Code = "MAX_ESCALATION"
	// CodeGone: the object named by an index no longer exists (the index is cleaned).
	CodeGone Code = "GONE"
	// CodeNotOpen: the object is not open (an outcome for background transitions).
	CodeNotOpen Code = "NOT_OPEN"
	// CodeNotDue: the object's deadline has not come (an outcome for background transitions).
	CodeNotDue Code = "NOT_DUE"
	// CodeClaimed: the caller now holds the lease it asked for.
	CodeClaimed Code = "CLAIMED"
	// CodeQuota: the tenant's quota of live objects of the type is used up; nothing was
	// written. Payload: milliseconds until the earliest of them expires.
	CodeQuota Code = "QUOTA"
)

// ErrReply marks a script reply that does not have the shape its script declares.
var ErrReply = errors.New("unexpected script reply")

// errRetry is what a CodeRetry reply means; callers loop on it and give up with a 503.
var errRetry = errors.New("the keys changed since they were read")

// codeKinds is the one table from reply codes to error kinds: what a reply with that code means
// when its caller adds nothing more specific (a caller may answer with a narrower kind, e.g.
// apperr.SessionLimit for a session create's BOUND). Codes that are outcomes rather than
// refusals (OK, CLAIMED, NOT_DUE) map to nil. A code that is not a key here is not a reply
// code: such a reply is refused with ErrReply.
var codeKinds = map[Code]error{
	CodeOK:             nil,
	CodeNotFound:       apperr.NotFound,
	CodeExists:         ErrExists,
	CodeStale:          apperr.PreconditionFailed,
	CodeInvalidStatus:  apperr.InvalidStatus,
	CodeCorrupt:        ErrCorrupt,
	CodeBound:          apperr.BoundExceeded,
	CodeRetry:          errRetry,
	CodeLimited:        apperr.RateLimited,
	CodeNoChallenge:    apperr.Gone,
	CodeWrongCode:      apperr.WrongCode,
	CodeAlready:        ErrAlready,
	CodeExpired:        apperr.Unprocessable,
	CodeIssuerGone:     apperr.InvalidCredentials,
	CodeOutlivesIssuer: apperr.Unprocessable,
	CodeItemNotFound:   apperr.NotFound,
	CodeOverflow:       apperr.BoundExceeded,
	CodeDiscount:       apperr.Unprocessable,
	CodeMaxEscalation:  apperr.MaxEscalation,
	CodeGone:           apperr.NotFound,
	CodeNotOpen:        apperr.InvalidStatus,
	CodeNotDue:         nil, // an outcome, not a refusal
	CodeClaimed:        nil, // an outcome, like OK
	CodeQuota:          apperr.QuotaExceeded,
}

// ErrExists: a new object's key is taken already (ids are random: never expected).
var ErrExists = errors.New("object id already exists")

// ErrAlready: the transition was made before.
var ErrAlready = errors.New("the transition was made before")

// Reply is a script's decoded reply: its code and the payload after it, read through strict
// accessors (index i is the payload's, 0 being the element right after the code).
type Reply struct {
	script string
	code   Code
	vals   []rueidis.RedisMessage
}

// parseReply checks arr is a reply of the convention: non-empty, a string code from the set.
func parseReply(script string, arr []rueidis.RedisMessage) (Reply, error) {
	if len(arr) == 0 {
		return Reply{}, fmt.Errorf("%s: %w: empty", script, ErrReply)
	}
	if !arr[0].IsString() {
		return Reply{}, fmt.Errorf("%s: %w: the code is not a string", script, ErrReply)
	}
	s, _ := arr[0].ToString()
	c := Code(s)
	if _, ok := codeKinds[c]; !ok {
		return Reply{}, fmt.Errorf("%s: %w: unknown code %q", script, ErrReply, s)
	}
	return Reply{script: script, code: c, vals: arr[1:]}, nil
}

// callScript runs l and decodes its reply. Driver errors come back as they are (the caller
// classifies them); a reply that breaks the convention wraps ErrReply.
func callScript(ctx context.Context, c rueidis.Client, script string, l *rueidis.Lua, keys, args []string) (Reply, error) {
	return decodeScript(script, l.Exec(ctx, c, keys, args))
}

// decodeScript decodes the result of a script call as callScript does.
func decodeScript(script string, res rueidis.RedisResult) (Reply, error) {
	if err := res.Error(); err != nil {
		return Reply{}, err
	}
	arr, err := res.ToArray()
	if err != nil {
		return Reply{}, fmt.Errorf("%s: %w: not an array", script, ErrReply)
	}
	return parseReply(script, arr)
}

// Code is the reply's status code.
func (r Reply) Code() Code { return r.code }

// Len is the payload's length.
func (r Reply) Len() int { return len(r.vals) }

// Want checks the payload holds exactly n values.
func (r Reply) Want(n int) error {
	if len(r.vals) != n {
		return r.shape("%s with %d values, want %d", r.code, len(r.vals), n)
	}
	return nil
}

// WantAtLeast checks the payload holds at least n values.
func (r Reply) WantAtLeast(n int) error {
	if len(r.vals) < n {
		return r.shape("%s with %d values, want at least %d", r.code, len(r.vals), n)
	}
	return nil
}

// Int is payload value i, which must be an integer.
func (r Reply) Int(i int) (int64, error) {
	if i < 0 || i >= len(r.vals) {
		return 0, r.shape("%s has no value %d", r.code, i)
	}
	if !r.vals[i].IsInt64() {
		return 0, r.shape("%s value %d is not an integer", r.code, i)
	}
	return r.vals[i].AsInt64()
}

// Str is payload value i, which must be a string (not nil).
func (r Reply) Str(i int) (string, error) {
	s, ok, err := r.OptStr(i)
	if err == nil && !ok {
		err = r.shape("%s value %d is nil", r.code, i)
	}
	return s, err
}

// OptStr is payload value i, which must be a string or nil (ok false).
func (r Reply) OptStr(i int) (string, bool, error) {
	if i < 0 || i >= len(r.vals) {
		return "", false, r.shape("%s has no value %d", r.code, i)
	}
	m := &r.vals[i]
	switch {
	case m.IsNil():
		return "", false, nil
	case m.IsString():
		s, err := m.ToString()
		return s, err == nil, err
	}
	return "", false, r.shape("%s value %d is not a string", r.code, i)
}

// StrMap is payload value i as a map: an array of field, value strings (what HGETALL answers
// inside a script).
func (r Reply) StrMap(i int) (map[string]string, error) {
	if i < 0 || i >= len(r.vals) {
		return nil, r.shape("%s has no value %d", r.code, i)
	}
	arr, err := r.vals[i].ToArray()
	if err != nil || len(arr)%2 != 0 {
		return nil, r.shape("%s value %d is not an array of pairs", r.code, i)
	}
	m := make(map[string]string, len(arr)/2)
	for j := 0; j < len(arr); j += 2 {
		if !arr[j].IsString() || !arr[j+1].IsString() {
			return nil, r.shape("%s value %d holds a pair that is not two strings", r.code, i)
		}
		k, _ := arr[j].ToString()
		v, _ := arr[j+1].ToString()
		m[k] = v
	}
	return m, nil
}

// Strs is the payload from value i on, every one a string.
func (r Reply) Strs(from int) ([]string, error) {
	if from < 0 || from > len(r.vals) {
		return nil, r.shape("%s has no value %d", r.code, from)
	}
	out := make([]string, 0, len(r.vals)-from)
	for i := from; i < len(r.vals); i++ {
		s, err := r.Str(i)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Err is the error the code means (codeKinds), wrapped with the script's name and what (may be
// empty): nil for CodeOK.
func (r Reply) Err(what string) error {
	k := codeKinds[r.code]
	switch {
	case k == nil:
		return nil
	case what == "":
		return fmt.Errorf("%s: %w", r.script, k)
	}
	return fmt.Errorf("%s %s: %w", r.script, what, k)
}

// Bare checks that a reply with one of codes carries no payload.
func (r Reply) Bare(codes ...Code) error {
	for _, c := range codes {
		if r.code == c {
			return r.Want(0)
		}
	}
	return nil
}

// Unexpected is the error for a code the caller does not accept from this script.
func (r Reply) Unexpected() error { return r.shape("code %s", r.code) }

// Malformed is the error for a reply whose payload breaks its script's shape (wraps ErrReply).
func (r Reply) Malformed(format string, args ...any) error { return r.shape(format, args...) }

// Values is the raw payload from index from on (nil past the end), for a caller that decodes
// a run of hash values itself (PooledFields).
func (r Reply) Values(from int) []rueidis.RedisMessage {
	if from > len(r.vals) {
		return nil
	}
	return r.vals[from:]
}

func (r Reply) shape(format string, args ...any) error {
	return fmt.Errorf("%s: %w: %s", r.script, ErrReply, fmt.Sprintf(format, args...))
}

// Reader reads a reply's payload value by value and keeps the first error, so a caller reads
// every value it needs and checks once: d := rep.Reader(); a, b := d.Int(0), d.Str(1);
// if err := d.Err(); err != nil { ... }. Use it as a local variable (it stays on the stack).
type Reader struct {
	rep Reply
	err error
}

// Reader starts reading r's payload.
func (r Reply) Reader() Reader { return Reader{rep: r} }

// Int is Reply.Int, recording the first error.
func (d *Reader) Int(i int) int64 {
	v, err := d.rep.Int(i)
	d.keep(err)
	return v
}

// Str is Reply.Str, recording the first error.
func (d *Reader) Str(i int) string {
	v, err := d.rep.Str(i)
	d.keep(err)
	return v
}

// OptStr is Reply.OptStr, recording the first error.
func (d *Reader) OptStr(i int) (string, bool) {
	v, ok, err := d.rep.OptStr(i)
	d.keep(err)
	return v, ok
}

// Err is the first error met, nil when every value read had its declared type.
func (d *Reader) Err() error { return d.err }

func (d *Reader) keep(err error) {
	if d.err == nil {
		d.err = err
	}
}

// HMGET replies, read as strictly: one value per field asked, each a string or nil.

// HMGetFields maps names to vals (one HMGET value each: a string, or nil when the hash does
// not hold the field), skipping absent ones, and returns the bytes read. A value of another
// type, or a count other than len(names), wraps ErrReply.
func HMGetFields(vals []rueidis.RedisMessage, names []string) (map[string]string, int, error) {
	return fillFields(make(map[string]string, len(names)), vals, names)
}

// fieldMaps recycles the maps the hot paths (session authorize, token state) decode a hash
// into (one per request otherwise: a map of 16 strings is the largest allocation of an
// authorization).
var fieldMaps = sync.Pool{New: func() any { return make(map[string]string, pooledMapSize) }}

// pooledMapSize fits the largest hash a hot path reads (a session's view: 16 fields).
const pooledMapSize = 16

// PooledFields is hmgetFields with a recycled map; the caller hands it back with
// releaseFields once nothing refers to the map any more (the values themselves are the
// reply's strings). On error the map is already released.
func PooledFields(vals []rueidis.RedisMessage, names []string) (map[string]string, int, error) {
	m, size, err := fillFields(fieldMaps.Get().(map[string]string), vals, names)
	if err != nil {
		ReleaseFields(m)
		return nil, 0, err
	}
	return m, size, nil
}

func ReleaseFields(m map[string]string) {
	clear(m)
	fieldMaps.Put(m)
}

func fillFields(m map[string]string, vals []rueidis.RedisMessage, names []string) (map[string]string, int, error) {
	if len(vals) != len(names) {
		return m, 0, fmt.Errorf("%w: %d values for %d fields", ErrReply, len(vals), len(names))
	}
	size := 0
	for i, n := range names {
		v := &vals[i]
		switch {
		case v.IsNil():
		case v.IsString():
			s, _ := v.ToString()
			m[n] = s
			size += len(n) + len(s)
		default:
			return m, 0, fmt.Errorf("%w: field %s is not a string", ErrReply, n)
		}
	}
	return m, size, nil
}
