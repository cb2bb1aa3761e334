package sessionstore

import (
	"context"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/sessions/session"
)

// Replacing a session's groups (session_groups.lua, session_u_groups.lua).

var (
	scriptSessionGroups = script("session_groups")
	scriptPerUserGroups = script("session_u_groups")
)

// SetGroups replaces the groups of the session ref of tenant in one script on the session's
// key, keeping its TTL (and in the per-user layout its fields' TTL), and returns the session's
// view, confirmed by a replica as credential-ending writes are. Redis pushes the write's invalidation to every gateway's kept copy, as for a
// revocation. A missing session, or another tenant's, is apperr.NotFound (left untouched).
func (r *Sessions) SetGroups(ctx context.Context, ref session.Ref, tenant string, groups []string) (*session.Session, error) {
	if err := checkGroups(groups); err != nil {
		return nil, err
	}
	joined := session.JoinGroups(groups)
	// Durable like a revocation: taking a group away ends an access, which a failover to a
	// replica that missed the write must not give back.
	if _, err := r.transition(ctx, ref, "groups", "session_groups", func(c rueidis.Client) (repo.Reply, error) {
		return r.layout.setGroups(ctx, c, ref, tenant, joined)
	}); err != nil {
		return nil, err
	}
	r.metrics.Transition(ctx, sessObject, "groups", "ok")
	return r.Get(ctx, ref, tenant)
}

func (r perSessionLayout) setGroups(ctx context.Context, c rueidis.Client, ref session.Ref, tenant, joined string) (repo.Reply, error) {
	return r.runOn(ctx, c, "session_groups", scriptSessionGroups, []string{r.sessionKey(ref)}, []string{tenant, joined})
}

func (r perUserLayout) setGroups(ctx context.Context, c rueidis.Client, ref session.Ref, tenant, joined string) (repo.Reply, error) {
	return r.runOn(ctx, c, "session_u_groups", scriptPerUserGroups, []string{r.userKey(ref.Tag)}, []string{tenant, ref.Part, joined})
}
