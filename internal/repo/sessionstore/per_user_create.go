package sessionstore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/sessions/session"
)

var scriptPerUserCreate = script("session_u_create")

// create is Create in the per-user layout (session_u_create.lua): the session's fields go into
// the user's hash with the session's idle window as their field TTL, in one script on one key.
// At the cap under LimitEvictOldest the first call answers RETRY without writing and a second
// one, a durable write (it ends the evicted sessions' credentials), evicts the least recently
// used sessions and writes the new one; under LimitRefuse the create is refused
// (apperr.SessionLimit). own holds the session's own field, value pairs (sessOwnFields); the
// verifier MAC goes into the live marker.
func (r perUserLayout) create(ctx context.Context, n session.Record, own []string) (*session.Created, error) {
	policy := "evict"
	if r.o.LimitPolicy == LimitRefuse {
		policy = "refuse"
	}
	keys := []string{r.userKey(n.Ref.Tag)}
	args := func(mayEvict string) []string {
		return append([]string{strconv.Itoa(r.o.MaxPerUser), strconv.FormatInt(n.Idle.Milliseconds(), 10),
			strconv.FormatInt(n.Absolute.Milliseconds(), 10), n.Ref.Part, policy, mayEvict,
			n.UserID, n.TenantID, strconv.Itoa(repo.SchemaVersion), r.idleMs, n.VerifierMAC}, own...)
	}
	rep, err := r.runEvents(ctx, r.client, "session_u_create", scriptPerUserCreate, r.eventWrite(ctx, n.TenantID, n.Ref, false), keys, args("0"))
	if err == nil && rep.Code() == repo.CodeRetry { // at the cap: evict, confirmed as a durable write
		w := r.eventWrite(ctx, n.TenantID, n.Ref, true)
		err = r.dur.Run(ctx, r.client, func(c rueidis.Client) (bool, error) {
			var err error
			rep, err = r.runEvents(ctx, c, "session_u_create", scriptPerUserCreate, w, keys, args("1"))
			return err == nil && rep.Code() == repo.CodeOK && rep.Len() > 3, err // {'OK', now, ttl, abs, evicted...}
		})
	}
	if err != nil {
		return nil, err
	}
	switch rep.Code() {
	case repo.CodeOK: // {'OK', nowMs, ttlMs, absoluteExpiresAtMs, <evicted idPart>...}
		return r.created(ctx, "session_u_create", n, rep)
	case repo.CodeBound: // {'BOUND', live sessions}: the refuse policy
		return nil, r.bound(ctx, "session_u_create", rep)
	case repo.CodeRetry: // the second call may evict: it never answers RETRY
		r.metrics.Transition(ctx, sessObject, "create", "contended")
		return nil, r.badReply(ctx, "session_u_create", rep.Unexpected())
	case repo.CodeExists:
		r.metrics.Transition(ctx, sessObject, "create", "exists")
		return nil, fmt.Errorf("session create %s: id collision: %w", n.Ref.ID(), rep.Err(""))
	case repo.CodeCorrupt:
		r.metrics.Read(ctx, sessObject, repo.Corrupt)
		r.log.WarnContext(ctx, "user's session hash holds another user; create refused", "key_pattern", r.userKeyPattern())
		return nil, fmt.Errorf("session create %s: %w", n.Ref.ID(), rep.Err(""))
	}
	return nil, r.badReply(ctx, "session_u_create", rep.Unexpected())
}
