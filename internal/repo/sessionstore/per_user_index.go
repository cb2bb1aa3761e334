package sessionstore

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/sessions/session"
)

// The per-user layout's operations on all of a user's sessions (List, RevokeAll) and on one
// (Revoke): each is one script on the user's hash, so it sees one consistent state of every
// session of the user, on a cluster too (one key: a slot migration moves it whole). No index
// to walk, nothing to prune: an idle-expired session's fields are gone with their field TTL.

var (
	scriptPerUserList      = script("session_u_list")
	scriptPerUserRevoke    = script("session_u_revoke")
	scriptPerUserRevokeAll = script("session_u_revoke_all")
)

// list is List in the per-user layout: one read-only script (session_u_list.lua) answers the
// user's hash and every live session's remaining idle window and its end (the last use derives
// from it: perUserLastSeen); each session is decoded from it as the other readers decode
// (sessionView, parseView). Sessions of another tenant and corrupt ones are left out (corrupt ones counted
// and logged); at most MaxSessionsPerUser, soonest absolute deadline first (the device index's
// order).
func (r perUserLayout) list(ctx context.Context, tag, tenant string) ([]session.Session, error) {
	rep, err := r.run(ctx, "session_u_list", scriptPerUserList, []string{r.userKey(tag)}, nil)
	if errors.Is(err, repo.ErrCorrupt) { // the key holds another type: every session in it is corrupt
		return []session.Session{}, nil
	}
	if err != nil {
		return nil, err
	}
	if rep.Code() != repo.CodeOK {
		return nil, r.badReply(ctx, "session_u_list", rep.Unexpected())
	}
	// {'OK', {field, value, ...}, {idPart, pttlMs, ...}, {idPart, expireAtMs, ...}}
	user, err := rep.StrMap(0)
	if err != nil {
		return nil, r.badReply(ctx, "session_u_list", err)
	}
	ttls, err := rep.StrMap(1)
	if err != nil {
		return nil, r.badReply(ctx, "session_u_list", err)
	}
	exps, err := rep.StrMap(2)
	if err = cmp.Or(rep.Want(3), err); err != nil {
		return nil, r.badReply(ctx, "session_u_list", err)
	}
	parts := make([]string, 0, len(ttls))
	abs := make(map[string]int64, len(ttls))
	for p := range ttls {
		parts = append(parts, p)
		abs[p] = liveAbs(user, p)
	}
	slices.SortFunc(parts, func(a, b string) int { return cmp.Or(cmp.Compare(abs[a], abs[b]), cmp.Compare(a, b)) })
	if len(parts) > MaxSessionsPerUser {
		parts = parts[:MaxSessionsPerUser]
	}
	now := time.Now().UnixMilli()
	out := make([]session.Session, 0, len(parts))
	for _, p := range parts {
		pttl, err := strconv.ParseInt(ttls[p], 10, 64)
		exp, err2 := strconv.ParseInt(exps[p], 10, 64)
		if err != nil || err2 != nil {
			return nil, r.badReply(ctx, "session_u_list", rep.Malformed("the idle window of a session is not an integer"))
		}
		if pttl == -2 { // its fields expired at this very instant
			continue
		}
		ref := session.Ref{Tag: tag, Part: p}
		m := sessionView(user, p)
		perUserLastSeen(m, exp)
		size := 0
		for k, v := range m {
			size += len(k) + len(v)
		}
		r.metrics.Payload(ctx, sessObject, size)
		s, err := r.parseView(ctx, ref, m, now, pttl)
		if err != nil {
			continue // corrupt: counted and logged by parseView
		}
		if s.TenantID != tenant {
			continue
		}
		r.classifyChallenge(ctx, s, m)
		out = append(out, *s)
	}
	return out, nil
}

// revokeAll is RevokeAll in the per-user layout: one atomic script
// (session_u_revoke_all.lua) on the user's hash, confirmed as a durable write.
func (r perUserLayout) revokeAll(ctx context.Context, tag, exceptPart string) (int, error) {
	w := r.eventWrite(ctx, "", session.Ref{Tag: tag}, true).ending()
	revoked := 0
	err := r.dur.Run(ctx, r.client, func(c rueidis.Client) (bool, error) {
		rep, err := r.runEvents(ctx, c, "session_u_revoke_all", scriptPerUserRevokeAll, w, []string{r.userKey(tag)}, []string{exceptPart})
		if err != nil {
			return false, err
		}
		n, err := rep.Int(0) // {'OK', live sessions deleted}
		if err = cmp.Or(rep.Want(1), err); err != nil || rep.Code() != repo.CodeOK || n < 0 {
			return false, r.badReply(ctx, "session_u_revoke_all", cmp.Or(err, rep.Unexpected()))
		}
		revoked = int(n)
		if n > 0 {
			return true, nil
		}
		// Nothing left: maybe revoked by an earlier attempt whose confirmation timed out.
		return repo.DurableMarker(ctx, c, r.keys, tag)
	})
	if err != nil {
		return 0, err
	}
	r.metrics.Transition(ctx, sessObject, "revoke_all", "ok")
	return revoked, nil
}
