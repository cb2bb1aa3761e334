package repo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/apperr"
)

// How the quote, case and idempotency repositories call their scripts (reply.go's one reply
// type): each script's replies declared in a replyShapes table, the refusals their scripts
// share (a compare-and-set refused: STALE; a hash with malformed fields: CORRUPT), the outcome
// labels of their transition metrics.

// RunScript runs l and decodes its reply. Every failure is counted as an error of script
// name: a driver failure comes back classified (redisErr: unavailable → 503) under op; a
// reply that breaks the convention comes back as it is (it wraps ErrReply).
func RunScript(ctx context.Context, c rueidis.Client, m *Metrics, name, op string, l *rueidis.Lua, keys, args []string) (Reply, error) {
	rep, err := callScript(ctx, c, name, l, keys, args)
	return scriptOutcome(ctx, m, name, op, rep, err)
}

// scriptOutcome is RunScript's answer for script name's decoded reply: a failure counted and,
// unless the reply itself is bad, wrapped as a command error of op.
func scriptOutcome(ctx context.Context, m *Metrics, name, op string, rep Reply, err error) (Reply, error) {
	if err != nil {
		m.ScriptError(ctx, name)
		if errors.Is(err, ErrReply) {
			return Reply{}, err
		}
		return Reply{}, CommandError(op, err)
	}
	return rep, nil
}

// BadReply counts err, a reply its caller cannot accept (it wraps ErrReply), as an error of
// script name.
func BadReply(ctx context.Context, m *Metrics, name string, err error) error {
	m.ScriptError(ctx, name)
	return err
}

// ReplyShapes declares a script's reply: each code it answers and how many values its
// payload holds. A refusal's payload is at most one string (a status, a field, a version).
type ReplyShapes map[Code]int

// Check refuses a reply that is not one of the declared ones (its code, its payload's length).
func (s ReplyShapes) Check(rep Reply) error {
	n, ok := s[rep.Code()]
	if !ok {
		return rep.Unexpected()
	}
	return rep.Want(n)
}

// Read is check for a script whose replies are {'OK', ...} or a refusal: it returns the
// refusal's one string (empty for OK and for a refusal without one).
func (s ReplyShapes) Read(rep Reply) (string, error) {
	if err := s.Check(rep); err != nil || rep.Code() == CodeOK || rep.Len() == 0 {
		return "", err
	}
	return rep.Str(0)
}

// StaleError is the 412 answer to {'STALE', current}, carrying the current ETag so the caller
// can re-read (left out when the stored version is not an integer).
func StaleError(current string) error {
	e := apperr.New(apperr.PreconditionFailed, "The object changed since the If-Match ETag was read.")
	if n, err := strconv.ParseInt(current, 10, 64); err == nil {
		e = e.With("currentETag", strconv.Quote(strconv.FormatInt(n, 10)))
	}
	return e
}

// CorruptError is the answer to {'CORRUPT', field}: counted, logged by key pattern and field
// name (never a value), refused with ErrCorrupt.
func CorruptError(ctx context.Context, m *Metrics, log *slog.Logger, name, objType, keyPattern, field string) error {
	m.Read(ctx, objType, Corrupt)
	log.ErrorContext(ctx, "corrupt object", "key", keyPattern, "script", name, "fields", []string{field})
	return fmt.Errorf("%w: %s hash has malformed fields [%s]", ErrCorrupt, objType, field)
}

// CreateOutcome labels a create: a new object, or the one an idempotent retry planned.
func CreateOutcome(c Code) string {
	if c == CodeExists {
		return "existing"
	}
	return "ok"
}

// OutcomeOf labels a transition by its reply code.
func OutcomeOf(c Code) string {
	switch c {
	case CodeOK:
		return "ok"
	case CodeStale:
		return "stale"
	case CodeNotFound, CodeItemNotFound:
		return "not_found"
	case CodeInvalidStatus:
		return "invalid_status"
	case CodeMaxEscalation:
		return "max_escalation"
	case CodeBound, CodeOverflow, CodeDiscount:
		return "refused_bound"
	case CodeCorrupt:
		return "corrupt"
	}
	return "error"
}
