package sessionstore

import (
	"cmp"
	"context"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/sessions/session"
)

// Transitions of one session: rotation to a new token (session_rotate.lua) and revocation
// (session_revoke.lua).

// Rotate replaces the session's verifier MAC with mac (the new token's) in one script: the old
// token stops working at once, the id, the TTL and the absolute deadline are kept.
func (r *Sessions) Rotate(ctx context.Context, ref session.Ref, tenant, mac string) (*session.Session, error) {
	if !validMAC(mac) {
		return nil, fmt.Errorf("session rotate %s: %w", ref.ID(), apperr.New(apperr.Validation, "A rotation needs the new token's verifier MAC."))
	}
	// The old token is dead once the write is durable; a retry writes the same MAC again.
	rep, err := r.transition(ctx, ref, "rotate", "session_rotate", func(c rueidis.Client) (repo.Reply, error) {
		return r.layout.rotate(ctx, c, ref, tenant, mac)
	})
	if err != nil {
		return nil, err
	}
	// {'OK', nowMs, pttlMs, status, authLevel, createdAtMs, absoluteExpiresAtMs, groups}
	d := rep.Reader()
	now, pttl := d.Int(0), d.Int(1)
	status, ok := d.OptStr(2)
	if !ok { // written only once it differs from its default
		status = session.Active
	}
	level, ok := d.OptStr(3)
	if !ok {
		level = session.LevelBasic
	}
	created, _ := d.OptStr(4)
	abs, _ := d.OptStr(5)
	groups, hasGroups := d.OptStr(6)
	if err := cmp.Or(rep.Want(7), d.Err()); err != nil {
		return nil, r.badReply(ctx, "session_rotate", err)
	}
	r.metrics.Transition(ctx, sessObject, "rotate", "ok")
	s := &session.Session{Ref: ref, TenantID: tenant, Status: status, AuthLevel: level, CreatedAt: sessTime(sessAtoi(created)),
		LastRotatedAt: sessTime(now), UpdatedAt: sessTime(now), AbsoluteExpiresAt: sessTime(sessAtoi(abs)), Groups: replyGroups(groups, hasGroups), SchemaVersion: repo.SchemaVersion}
	s.IdleExpiresAt = s.AbsoluteExpiresAt
	if pttl >= 0 {
		s.IdleExpiresAt = sessIdleEnd(now, pttl, s.AbsoluteExpiresAt)
	}
	return s, nil
}

// transition runs one session's transition through run, confirmed by a replica (r.dur: a
// retry writes the same again), and reads its code: the reply when 'OK'; apperr.NotFound,
// counted as "missing", for a missing session or another tenant's; a bad reply otherwise
// (script names the script, for metrics).
func (r *Sessions) transition(ctx context.Context, ref session.Ref, name, script string,
	run func(c rueidis.Client) (repo.Reply, error)) (repo.Reply, error) {
	var rep repo.Reply
	err := r.dur.Run(ctx, r.client, func(c rueidis.Client) (bool, error) {
		var err error
		rep, err = run(c)
		return err == nil && rep.Code() == repo.CodeOK, err
	})
	if err != nil {
		return rep, err
	}
	switch rep.Code() {
	case repo.CodeOK:
		return rep, nil
	case repo.CodeNotFound:
		r.metrics.Transition(ctx, sessObject, name, "missing")
		return rep, fmt.Errorf("session %s: %w", ref.ID(), apperr.NotFound)
	default:
		return rep, r.badReply(ctx, script, rep.Unexpected())
	}
}

// Revoke deletes one session of tenant with its challenge key and index entry. It reports
// whether a live session was deleted; another tenant's session is left alone (false).
func (r *Sessions) Revoke(ctx context.Context, ref session.Ref, tenant string) (bool, error) {
	var rep repo.Reply
	var name string // the script, for metrics
	err := r.dur.Run(ctx, r.client, func(c rueidis.Client) (bool, error) {
		var err error
		rep, name, err = r.layout.revoke(ctx, c, ref, tenant)
		switch n, _ := rep.Int(0); {
		case err != nil || rep.Code() != repo.CodeOK:
			return false, err // another tenant's session: nothing of the caller's ended
		case n == 1:
			return true, nil
		}
		// Already gone: maybe by an earlier attempt whose confirmation timed out.
		return repo.DurableMarker(ctx, c, r.keys, ref.Tag)
	})
	if err != nil {
		return false, err
	}
	outcome := "other_tenant"
	switch rep.Code() {
	case repo.CodeOK: // {'OK', 1} revoked | {'OK', 0} already gone
		n, err := rep.Int(0)
		if err = cmp.Or(rep.Want(1), err); err != nil || n != 0 && n != 1 {
			return false, r.badReply(ctx, name, cmp.Or(err, rep.Unexpected()))
		}
		outcome = map[int64]string{1: "ok", 0: "gone"}[n]
	case repo.CodeNotFound: // another tenant's session, untouched
	default:
		return false, r.badReply(ctx, name, rep.Unexpected())
	}
	r.metrics.Transition(ctx, sessObject, "revoke", outcome)
	return outcome == "ok", nil
}

// rotate replaces the session's verifier MAC in its hash (session_rotate.lua).
func (r perSessionLayout) rotate(ctx context.Context, c rueidis.Client, ref session.Ref, tenant, mac string) (repo.Reply, error) {
	return r.runEvents(ctx, c, "session_rotate", scriptSessionRotate, r.eventWrite(ctx, tenant, ref, false), []string{r.sessionKey(ref)}, []string{tenant, mac})
}

// revoke deletes the hash, its challenge key and its index member (session_revoke.lua).
func (r perSessionLayout) revoke(ctx context.Context, c rueidis.Client, ref session.Ref, tenant string) (repo.Reply, string, error) {
	rep, err := r.runEvents(ctx, c, "session_revoke", scriptSessionRevoke, r.eventWrite(ctx, tenant, ref, true).ending(),
		[]string{r.sessionKey(ref), r.devicesKey(ref.Tag), r.challengeKey(ref)}, []string{tenant, ref.Part})
	return rep, "session_revoke", err
}

// revoke takes the session's fields out of the user's hash (session_u_revoke.lua).
func (r perUserLayout) revoke(ctx context.Context, c rueidis.Client, ref session.Ref, tenant string) (repo.Reply, string, error) {
	rep, err := r.runEvents(ctx, c, "session_u_revoke", scriptPerUserRevoke, r.eventWrite(ctx, tenant, ref, true).ending(), []string{r.userKey(ref.Tag)}, []string{tenant, ref.Part})
	return rep, "session_u_revoke", err
}
