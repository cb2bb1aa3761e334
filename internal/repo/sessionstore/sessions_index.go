package sessionstore

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
)

// The device index and the operations that walk it (List, RevokeAll; Create at the cap, in
// sessions.go, declares the members' keys the same way). Every script here declares every key it touches in KEYS, never a key
// built inside the script: on a cluster whose slot is being migrated, Redis then either runs a
// script with all its keys on one node or refuses the whole call (TRYAGAIN, or ASK leading to
// TRYAGAIN), which the caller answers with 503 — never a script that sees part of the user's
// keys as missing. Reads of single sessions are single-key commands, which rueidis follows
// through ASK/MOVED, so a session in transit is never taken for missing.

// List returns the live sessions of the user with tag: the device index (at most
// MaxSessionsPerUser members), then one pipeline of single-key reads per member (HMGET of the
// view fields and PTTL, plus the challenge key's existence in the fallback mode). Members whose
// session is confirmed gone are dropped from the index by session_prune.lua, best effort (a
// refusal, e.g. during a slot migration, leaves them for a later list or create). Sessions of
// another tenant (impossible unless corrupt: the tag covers the tenant) and corrupt ones are
// left out (and counted).
func (r *Sessions) List(ctx context.Context, tag, tenant string) ([]session.Session, error) {
	return r.layout.list(ctx, tag, tenant)
}

func (r perSessionLayout) list(ctx context.Context, tag, tenant string) ([]session.Session, error) {
	parts, err := r.members(ctx, tag, MaxSessionsPerUser)
	if err != nil {
		return nil, err
	}
	per := 2
	if r.challengeKeys {
		per = 3
	}
	cmds := make(rueidis.Commands, 0, per*len(parts))
	for _, p := range parts {
		ref := session.Ref{Tag: tag, Part: p}
		key := r.sessionKey(ref)
		cmds = append(cmds, r.client.B().Hmget().Key(key).Field(sessViewFields...).Build(), r.client.B().Pttl().Key(key).Build())
		if per == 3 {
			cmds = append(cmds, r.client.B().Exists().Key(r.challengeKey(ref)).Build())
		}
	}
	res := r.client.DoMulti(ctx, cmds...)
	now := time.Now().UnixMilli()
	out := make([]session.Session, 0, len(parts))
	var gone []string
	for i, p := range parts {
		s, missing, err := r.listed(ctx, session.Ref{Tag: tag, Part: p}, res[i*per:(i+1)*per], now)
		switch {
		case err != nil:
			return nil, err
		case missing:
			gone = append(gone, p)
		case s != nil && s.TenantID == tenant:
			out = append(out, *s)
		}
	}
	if len(gone) > 0 {
		if _, err := r.prune(ctx, tag, gone); err != nil {
			r.log.DebugContext(ctx, "device index prune deferred", "key_pattern", r.devicesKeyPattern(),
				"unavailable", store.IsUnavailable(err))
		}
	}
	return out, nil
}

// listed decodes one member's replies (HMGET, PTTL[, EXISTS challenge]): missing when the
// session is gone; a nil session (no error) when it is corrupt (counted and logged, left out).
func (r *Sessions) listed(ctx context.Context, ref session.Ref, res []rueidis.RedisResult, now int64) (*session.Session, bool, error) {
	for _, x := range res {
		if err := x.Error(); err != nil {
			if re, ok := rueidis.IsRedisErr(err); ok && strings.HasPrefix(re.Error(), "WRONGTYPE") {
				_ = r.readErr(ctx, "session list", err) // counts and logs the corrupt session
				return nil, false, nil
			}
			return nil, false, repo.CommandError("session list", err)
		}
	}
	vals, err := res[0].ToArray()
	if err != nil {
		return nil, false, repo.CommandError("session list", err)
	}
	pttl, err := res[1].AsInt64()
	if err != nil {
		return nil, false, repo.CommandError("session list", err)
	}
	m, size, err := repo.HMGetFields(vals, sessViewFields)
	if err != nil {
		return nil, false, fmt.Errorf("session list: %w", err)
	}
	if len(m) == 0 || pttl == -2 {
		return nil, true, nil
	}
	r.metrics.Payload(ctx, sessObject, size)
	s, err := r.parseView(ctx, ref, m, now, pttl)
	if err != nil {
		return nil, false, nil // corrupt: counted and logged by parseView
	}
	if len(res) == 3 {
		n, _ := res[2].AsInt64()
		s.ChallengeLive = n == 1
	}
	r.classifyChallenge(ctx, s, m)
	return s, false, nil
}

// RevokeAll deletes every session of the user with tag except the one whose id part is
// exceptPart ("" for none), in one atomic script, and returns how many live sessions it
// deleted. It reads the device index, then runs session_revoke_all.lua with every member's
// session key (and, in the fallback mode, challenge key) declared in KEYS. A session created
// after the read may stay (it is concurrent); rotation and step-up keep a session's member, so
// when it returns without error no other earlier session of the user exists.
func (r *Sessions) RevokeAll(ctx context.Context, tag, exceptPart string) (int, error) {
	return r.layout.revokeAll(ctx, tag, exceptPart)
}

func (r perSessionLayout) revokeAll(ctx context.Context, tag, exceptPart string) (int, error) {
	withChallenges := r.challengeKeys
	flag := "0"
	if withChallenges {
		flag = "1"
	}
	revoked := -1
	err := r.dur.Run(ctx, r.client, func(c rueidis.Client) (bool, error) {
		n, err := r.revokeAllOn(ctx, c, tag, exceptPart, flag, withChallenges)
		if err != nil {
			return false, err
		}
		revoked = n
		if n > 0 {
			return true, nil
		}
		// Nothing left: maybe revoked by an earlier attempt whose confirmation timed out.
		return repo.DurableMarker(ctx, c, r.keys, tag)
	})
	return max(revoked, 0), err
}

// revokeAllOn reads the index and runs session_revoke_all.lua over its members, on c.
func (r perSessionLayout) revokeAllOn(ctx context.Context, c rueidis.Client, tag, exceptPart, flag string, withChallenges bool) (int, error) {
	parts, err := r.membersOn(ctx, c, tag, -1)
	if err != nil {
		return 0, err
	}
	revoke := make([]string, 0, len(parts))
	for _, p := range parts {
		if p != exceptPart {
			revoke = append(revoke, p)
		}
	}
	keys := make([]string, 0, 2+2*len(revoke))
	keys = append(keys, r.devicesKey(tag))
	for _, p := range revoke {
		keys = append(keys, r.sessionKey(session.Ref{Tag: tag, Part: p}))
	}
	if withChallenges {
		for _, p := range revoke {
			keys = append(keys, r.challengeKey(session.Ref{Tag: tag, Part: p}))
		}
	}
	rep, err := r.runEvents(ctx, c, "session_revoke_all", scriptSessionRevokeAll, r.eventWrite(ctx, "", session.Ref{Tag: tag}, true).ending(), keys,
		append([]string{exceptPart, flag}, revoke...))
	if err != nil {
		return 0, err
	}
	// {'OK', live sessions deleted}
	n, err := rep.Int(0)
	if err = cmp.Or(rep.Want(1), err); err != nil {
		return 0, r.badReply(ctx, "session_revoke_all", err)
	}
	if rep.Code() != repo.CodeOK {
		return 0, r.badReply(ctx, "session_revoke_all", rep.Unexpected())
	}
	r.metrics.Transition(ctx, sessObject, "revoke_all", "ok")
	return int(n), nil
}

// prune runs session_prune.lua over the members found gone: it removes those whose session
// key (declared in KEYS) still does not exist, and returns how many members it removed.
func (r *Sessions) prune(ctx context.Context, tag string, gone []string) (int, error) {
	keys := make([]string, 0, 1+len(gone))
	keys = append(keys, r.devicesKey(tag))
	for _, p := range gone {
		keys = append(keys, r.sessionKey(session.Ref{Tag: tag, Part: p}))
	}
	rep, err := r.run(ctx, "session_prune", scriptSessionPrune, keys, gone)
	if err != nil {
		return 0, err
	}
	n, err := rep.Int(0) // {'OK', members removed}
	if err = cmp.Or(rep.Want(1), err); err != nil || rep.Code() != repo.CodeOK {
		return 0, r.badReply(ctx, "session_prune", cmp.Or(err, rep.Unexpected()))
	}
	if n > 0 {
		r.metrics.Transition(ctx, sessObject, "index_prune", "ok")
	}
	return int(n), nil
}

// members reads the user's device index (idParts, soonest deadline first): at most limit
// members, or all with limit -1.
func (r *Sessions) members(ctx context.Context, tag string, limit int64) ([]string, error) {
	return r.membersOn(ctx, r.client, tag, limit)
}

func (r *Sessions) membersOn(ctx context.Context, c rueidis.Client, tag string, limit int64) ([]string, error) {
	stop := limit - 1
	if limit < 0 {
		stop = -1
	}
	parts, err := c.Do(ctx, c.B().Zrange().Key(r.devicesKey(tag)).Min("0").Max(strconv.FormatInt(stop, 10)).Build()).AsStrSlice()
	if err != nil {
		return nil, repo.CommandError("session index read", err)
	}
	return parts, nil
}
