package sessionstore

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/sessions/session"
)

// Creating a session: the hash, its TTL and its device-index entry in one script, making room
// at the per-user cap (session_create.lua).

// Create writes the session hash (with its TTL: the shorter of the idle timeout and the
// absolute timeout) and adds it to the user's device index, in one script (session_create.lua)
// that touches only those two keys under the cap. At the cap (MaxPerUser index members) the
// script answers with the index's members, and Create runs it again with every member's keys
// declared: in that one atomic step it drops members whose session is gone, then evicts the
// least recently used sessions (LimitEvictOldest, the default) or refuses with
// apperr.SessionLimit (LimitRefuse). An evicted session is deleted as a revocation deletes it
// (every replica's cached copy is invalidated by Redis's push; Created.Evicted names them, for the service's read-your-writes marks),
// and counted (hashgate_repo_transitions{transition="evict"}). When the index changes between
// the read and the script (concurrent logins of the user), the script writes nothing and
// answers the new members; after sessCreateAttempts rounds Create gives up (apperr.Unavailable).
func (r *Sessions) Create(ctx context.Context, n session.Record) (*session.Created, error) {
	if err := checkRecord(n); err != nil {
		return nil, err
	}
	defer r.absent.created(n.Ref.Tag) // (once written: a miss remembered for n.Ref no longer counts)
	n.Status, n.AuthLevel = cmp.Or(n.Status, session.Active), cmp.Or(n.AuthLevel, session.LevelBasic)
	own, err := sessOwnFields(n)
	if err != nil {
		return nil, err
	}
	return r.layout.create(ctx, n, own)
}

// create writes n in the per-session layout (session_create.lua), within the cap.
func (r perSessionLayout) create(ctx context.Context, n session.Record, own []string) (*session.Created, error) {
	fields := append([]string{fieldUserID, n.UserID, fieldTenantID, n.TenantID, fieldSchemaVersion, strconv.Itoa(repo.SchemaVersion),
		fieldVerifierMAC, n.VerifierMAC}, own...)
	policy := "evict"
	if r.o.LimitPolicy == LimitRefuse {
		policy = "refuse"
	}
	withChallenges := "0"
	if r.challengeKeys {
		withChallenges = "1"
	}
	head := []string{strconv.Itoa(r.o.MaxPerUser), strconv.FormatInt(n.Idle.Milliseconds(), 10),
		strconv.FormatInt(n.Absolute.Milliseconds(), 10), n.Ref.Part, policy}
	var candidates []string // the index's members, once the create found the cap reached
	for range sessCreateAttempts {
		keys := make([]string, 0, 3+2*len(candidates))
		keys = append(keys, r.sessionKey(n.Ref), r.devicesKey(n.Ref.Tag))
		for _, p := range candidates {
			keys = append(keys, r.sessionKey(session.Ref{Tag: n.Ref.Tag, Part: p}))
		}
		if withChallenges == "1" {
			for _, p := range candidates {
				keys = append(keys, r.challengeKey(session.Ref{Tag: n.Ref.Tag, Part: p}))
			}
		}
		args := make([]string, 0, len(head)+3+len(candidates)+len(fields))
		args = append(append(append(append(args, head...), strconv.Itoa(len(candidates)), withChallenges), candidates...), fields...)
		rep, err := r.createRound(ctx, r.eventWrite(ctx, n.TenantID, n.Ref, len(candidates) > 0), keys, args, len(candidates) > 0)
		if err != nil {
			return nil, err
		}
		switch rep.Code() {
		case repo.CodeOK: // {'OK', nowMs, ttlMs, absoluteExpiresAtMs, <evicted idPart>...}
			return r.created(ctx, "session_create", n, rep)
		case repo.CodeRetry: // {'RETRY', members, <idPart>...}: at the cap, call again naming them
			if _, err := rep.Int(0); err != nil {
				return nil, r.badReply(ctx, "session_create", err)
			}
			if candidates, err = rep.Strs(1); err != nil {
				return nil, r.badReply(ctx, "session_create", err)
			}
			if len(candidates) == 0 { // a full index answers its members; anything else is a bug
				return nil, r.badReply(ctx, "session_create", rep.Unexpected())
			}
		case repo.CodeBound: // {'BOUND', live members}: the refuse policy
			return nil, r.bound(ctx, "session_create", rep)
		case repo.CodeExists:
			r.metrics.Transition(ctx, sessObject, "create", "exists")
			return nil, fmt.Errorf("session create %s: id collision: %w", n.Ref.ID(), rep.Err(""))
		default:
			return nil, r.badReply(ctx, "session_create", rep.Unexpected())
		}
	}
	r.metrics.Transition(ctx, sessObject, "create", "contended")
	return nil, apperr.New(apperr.Unavailable, "The user's sessions kept changing while a new one was being made room for; retry shortly.")
}

// bound reads script's {'BOUND', live sessions} (the refuse policy at the cap): the 422 naming
// the cap, counted as "bound".
func (r *Sessions) bound(ctx context.Context, script string, rep repo.Reply) error {
	live, err := rep.Int(0)
	if err = cmp.Or(rep.Want(1), err); err != nil {
		return r.badReply(ctx, script, err)
	}
	r.metrics.Transition(ctx, sessObject, "create", "bound")
	return apperr.Newf(apperr.SessionLimit,
		"The user already has %d live sessions, the maximum (GATEWAY_SESSION_MAX_PER_USER); revoke one first.", live)
}

// createRound runs session_create.lua once. A round that names candidates may evict some
// (ending their credentials): it runs as a durable write, confirmed when it evicted.
func (r *Sessions) createRound(ctx context.Context, w eventWrite, keys, args []string, mayEvict bool) (repo.Reply, error) {
	if !mayEvict {
		return r.runEvents(ctx, r.client, "session_create", scriptSessionCreate, w, keys, args)
	}
	var rep repo.Reply
	err := r.dur.Run(ctx, r.client, func(c rueidis.Client) (bool, error) {
		var err error
		rep, err = r.runEvents(ctx, c, "session_create", scriptSessionCreate, w, keys, args)
		return err == nil && rep.Code() == repo.CodeOK && rep.Len() > 3, err // {'OK', now, ttl, abs, evicted...}
	})
	return rep, err
}

// created decodes a create's OK reply, {'OK', nowMs, ttlMs, absoluteExpiresAtMs, <evicted
// idPart>...} (session_create.lua and session_u_create.lua alike), and counts the create and
// its evictions.
func (r *Sessions) created(ctx context.Context, script string, n session.Record, rep repo.Reply) (*session.Created, error) {
	d := rep.Reader()
	now, ttl, abs := d.Int(0), d.Int(1), d.Int(2)
	if err := d.Err(); err != nil {
		return nil, r.badReply(ctx, script, err)
	}
	evicted, err := rep.Strs(3)
	if err != nil {
		return nil, r.badReply(ctx, script, err)
	}
	gone := r.evicted(ctx, n.Ref.Tag, evicted)
	r.metrics.Transition(ctx, sessObject, "create", "ok")
	return &session.Created{Evicted: gone, Session: session.Session{Ref: n.Ref, UserID: n.UserID, TenantID: n.TenantID, Status: n.Status, AuthLevel: n.AuthLevel,
		LoginPending: n.LoginPending, DeviceLabel: n.DeviceLabel, Groups: n.Groups, CreatedAt: sessTime(now), UpdatedAt: sessTime(now), LastSeenAt: sessTime(now),
		LastRotatedAt: sessTime(now), IdleExpiresAt: sessTime(now + ttl), AbsoluteExpiresAt: sessTime(abs),
		SchemaVersion: repo.SchemaVersion}}, nil
}

// sessCreateAttempts bounds Create's rounds at the cap: each reads the index's members (in the
// script's reply) and runs the script with their keys; logins of the same user racing for the
// last places can make a round's candidates stale, and the next round reads them again.
const sessCreateAttempts = 8

// evicted counts the sessions a create evicted (their id parts, from its reply) and returns
// their references.
func (r *Sessions) evicted(ctx context.Context, tag string, parts []string) []session.Ref {
	var refs []session.Ref
	for _, p := range parts {
		refs = append(refs, session.Ref{Tag: tag, Part: p})
		r.metrics.Transition(ctx, sessObject, "evict", "lru")
	}
	return refs
}

// sessOwnFields are the field, value pairs of n's own (unprefixed names) that a create writes
// besides userId, tenantId, schemaVersion, the verifier MAC and the timestamps: only those that
// differ from their default. It refuses a session over SessionMaxFields or SessionMaxBytes.
func sessOwnFields(n session.Record) ([]string, error) {
	pairs := [][2]string{{fieldDeviceLabel, n.DeviceLabel}, {fieldIPHash, n.IPHash}, {fieldUserAgentHash, n.UserAgentHash}}
	// Readers take an absent status for ACTIVE and an absent authLevel for BASIC.
	if n.Status != session.Active {
		pairs = append(pairs, [2]string{fieldStatus, n.Status})
	}
	if n.AuthLevel != session.LevelBasic {
		pairs = append(pairs, [2]string{fieldAuthLevel, n.AuthLevel})
	}
	if n.LoginPending {
		pairs = append(pairs, [2]string{fieldLoginPending, "1"})
	}
	if len(n.Groups) > 0 {
		pairs = append(pairs, [2]string{fieldGroups, session.JoinGroups(n.Groups)})
	}
	if n.Idle != ImplicitIdle { // readers fall back to ImplicitIdle
		pairs = append(pairs, [2]string{fieldIdleTimeout, strconv.FormatInt(n.Idle.Milliseconds(), 10)})
	}
	var fields []string
	// userId, tenantId, schemaVersion and verifierMac, then three timestamp fields added by the
	// script, each at most 40 bytes.
	size := len(fieldUserID) + len(n.UserID) + len(fieldTenantID) + len(n.TenantID) + len(fieldSchemaVersion) + len(strconv.Itoa(repo.SchemaVersion)) +
		len(fieldVerifierMAC) + len(n.VerifierMAC) + 3*40
	for _, p := range pairs {
		if p[1] == "" {
			continue
		}
		fields = append(fields, p[0], p[1])
		size += len(p[0]) + len(p[1])
	}
	if nf := len(fields)/2 + 7; nf > SessionMaxFields || size > SessionMaxBytes {
		return nil, apperr.Newf(apperr.BoundExceeded, "A session holds at most %d fields and %d bytes.", SessionMaxFields, SessionMaxBytes)
	}
	return fields, nil
}

// checkRecord refuses a record the store would not keep (bounds checked again at the write).
func checkRecord(n session.Record) error {
	bad := func(what string) error {
		return apperr.Newf(apperr.BoundExceeded, "The session's %s exceeds its bound.", what)
	}
	switch {
	case n.UserID == "" || n.TenantID == "" || !session.B64URL(n.Ref.Tag) || !session.B64URL(n.Ref.Part) || !validMAC(n.VerifierMAC):
		return apperr.New(apperr.Validation, "A session needs a user, a tenant and a token.")
	case len(n.UserID) > session.MaxUserIDBytes:
		return bad("userId")
	case len(n.TenantID) > session.MaxTenantBytes:
		return bad("tenant")
	case len(n.DeviceLabel) > session.MaxDeviceLabelBytes:
		return bad("device label")
	case len(n.IPHash) > MaxDeviceHashBytes || len(n.UserAgentHash) > MaxDeviceHashBytes:
		return bad("device hash")
	case checkGroups(n.Groups) != nil:
		return checkGroups(n.Groups)
	case n.Idle < time.Second || n.Absolute < n.Idle:
		return apperr.New(apperr.Validation, "The idle timeout must be at least 1s and at most the absolute timeout.")
	case n.LoginPending && n.Status != session.MFARequired:
		return apperr.New(apperr.Validation, "A session whose login waits for MFA starts in MFA_REQUIRED.")
	}
	return nil
}

// checkGroups refuses groups over their bounds (session.MaxGroups, session.ValidGroup).
func checkGroups(groups []string) error {
	if len(groups) > session.MaxGroups {
		return apperr.Newf(apperr.BoundExceeded, "A session holds at most %d groups.", session.MaxGroups)
	}
	for _, g := range groups {
		if !session.ValidGroup(g) {
			return apperr.Newf(apperr.Validation, "A group is 1 to %d characters of A-Z a-z 0-9 . _ : @ / + -.", session.MaxGroupBytes)
		}
	}
	return nil
}
