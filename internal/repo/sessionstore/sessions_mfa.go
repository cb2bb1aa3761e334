package sessionstore

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/ratelimit"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/sessions/session"
)

// MFA on a session: starting a challenge (session_challenge.lua) and verifying a code with its
// attempt counter, step-up and the token's new verifier (session_verify.lua).

// StartChallenge stores c with its own TTL (per the server's field-expiry mode) and sets the
// session MFA_REQUIRED; it returns when the challenge expires.
func (r *Sessions) StartChallenge(ctx context.Context, c session.MFAChallenge) (time.Time, error) {
	secs := int64((c.TTL + time.Second - 1) / time.Second)
	if secs < 1 || !session.B64URL(c.ID) || c.CodeMAC == "" {
		return time.Time{}, apperr.New(apperr.Validation, "A challenge needs an id, a code MAC and a TTL of at least 1s.")
	}
	rep, err := r.layout.challenge(ctx, c, secs)
	if err != nil {
		return time.Time{}, err
	}
	switch rep.Code() {
	case repo.CodeOK: // {'OK', nowMs, expiresAtMs}
		exp, err := rep.Int(1)
		if err = cmp.Or(rep.Want(2), err); err != nil {
			return time.Time{}, r.badReply(ctx, "session_challenge", err)
		}
		r.metrics.Transition(ctx, sessObject, "mfa_challenge", "ok")
		return sessTime(exp), nil
	case repo.CodeNotFound:
		r.metrics.Transition(ctx, sessObject, "mfa_challenge", "missing")
		return time.Time{}, fmt.Errorf("session %s: %w", c.Ref.ID(), apperr.NotFound)
	}
	return time.Time{}, r.badReply(ctx, "session_challenge", rep.Unexpected())
}

// Verify runs one attempt in one script: count it in the user's fixed-window counter, compare
// the code's MAC with the live challenge's, and on success step up, delete the challenge and
// replace the token's verifier MAC with v.VerifierMAC (the session keeps its id). A missing session (or another tenant's) is apperr.NotFound and is not counted.
func (r *Sessions) Verify(ctx context.Context, v session.MFAVerification) (*session.VerifyResult, error) {
	if !validMAC(v.VerifierMAC) {
		return nil, fmt.Errorf("session verify %s: %w", v.Ref.ID(), apperr.New(apperr.Validation, "A verification needs the new token's verifier MAC."))
	}
	var rep repo.Reply
	err := r.dur.Run(ctx, r.client, func(c rueidis.Client) (bool, error) {
		var err error
		rep, err = r.layout.verify(ctx, c, v)
		// A step-up replaces the verifier: the old token is dead. Other outcomes end nothing.
		return err == nil && rep.Code() == repo.CodeOK, err
	})
	if err != nil {
		return nil, err
	}
	switch rep.Code() {
	case repo.CodeNotFound:
		r.metrics.Transition(ctx, sessObject, "mfa_verify", "missing")
		return nil, fmt.Errorf("session %s: %w", v.Ref.ID(), apperr.NotFound)
	case repo.CodeLimited, repo.CodeNoChallenge, repo.CodeWrongCode, repo.CodeOK:
	default:
		return nil, r.badReply(ctx, "session_verify", rep.Unexpected())
	}
	// Every attempt that reached the counter answers its count and reset first:
	// {'LIMITED', count, resetMs} | {'NO_CHALLENGE', count, resetMs, hadChallenge} |
	// {'WRONG_CODE', count, resetMs, failedMfaAttempts} | {'OK', count, resetMs, nowMs, pttlMs, absMs, groups}
	d := rep.Reader()
	count, reset := d.Int(0), d.Int(1)
	var arg int64 // hadChallenge, failedMfaAttempts
	want := 2
	switch rep.Code() {
	case repo.CodeNoChallenge, repo.CodeWrongCode:
		arg, want = d.Int(2), 3
	case repo.CodeOK:
		want = 6
	}
	if err := cmp.Or(rep.Want(want), d.Err()); err != nil {
		return nil, r.badReply(ctx, "session_verify", err)
	}
	res := &session.VerifyResult{Attempts: session.Attempts{Allowed: rep.Code() != repo.CodeLimited, Count: int(count),
		Reset: time.Duration(reset) * time.Millisecond}}
	switch rep.Code() {
	case repo.CodeLimited:
		res.Outcome = session.VerifyLimited
	case repo.CodeNoChallenge:
		res.Outcome = session.VerifyNoChallenge
		if arg == 1 {
			r.metrics.Read(ctx, sessObject, ExpiredChallenge)
		}
	case repo.CodeWrongCode:
		res.Outcome, res.FailedAttempts = session.VerifyWrongCode, arg
	case repo.CodeOK:
		now, pttl, abs := d.Int(2), d.Int(3), d.Int(4)
		groups, hasGroups := d.OptStr(5)
		if err := d.Err(); err != nil {
			return nil, r.badReply(ctx, "session_verify", err)
		}
		res.Outcome = session.VerifyOK
		res.Session = &session.Session{Ref: v.Ref, TenantID: v.Tenant, Status: session.MFAVerified, AuthLevel: session.LevelMFA,
			MFAVerifiedAt: sessTime(now), UpdatedAt: sessTime(now), LastRotatedAt: sessTime(now),
			AbsoluteExpiresAt: sessTime(abs), IdleExpiresAt: sessTime(abs), Groups: replyGroups(groups, hasGroups), SchemaVersion: repo.SchemaVersion}
		if pttl >= 0 {
			res.Session.IdleExpiresAt = sessIdleEnd(now, pttl, res.Session.AbsoluteExpiresAt)
		}
	}
	r.metrics.Transition(ctx, sessObject, "mfa_verify", string(res.Outcome))
	return res, nil
}

// MFAPolicy is the attempt policy Verify counts under (SessionOptions.MFA).
func (r *Sessions) MFAPolicy() ratelimit.Policy { return r.o.MFA }

// challenge stores c in the per-session layout (session_challenge.lua): in fields with their
// own TTL, or in a key of its own (challengeKeys).
func (r perSessionLayout) challenge(ctx context.Context, c session.MFAChallenge, secs int64) (repo.Reply, error) {
	return r.runEvents(ctx, r.client, "session_challenge", scriptSessionChallenge, r.eventWrite(ctx, c.Tenant, c.Ref, false),
		[]string{r.sessionKey(c.Ref), r.challengeKey(c.Ref)},
		[]string{c.Tenant, string(r.mode), c.ID, c.CodeMAC, strconv.FormatInt(secs, 10), strconv.Itoa(repo.SchemaVersion)})
}

// verify runs one attempt in the per-session layout (session_verify.lua) on c.
func (r perSessionLayout) verify(ctx context.Context, c rueidis.Client, v session.MFAVerification) (repo.Reply, error) {
	where := "field"
	if r.challengeKeys {
		where = "key"
	}
	p := r.o.MFA
	keys := []string{r.sessionKey(v.Ref), ratelimit.Key(r.keys.Prefix, v.Ref.Tag, p.Name), r.challengeKey(v.Ref)}
	args := []string{v.Tenant, where, v.ChallengeID, v.CodeMAC, strconv.Itoa(p.Limit),
		strconv.FormatInt(p.Window.Milliseconds(), 10), strconv.FormatInt(p.Buffer().Milliseconds(), 10), v.VerifierMAC}
	return r.runEvents(ctx, c, "session_verify", scriptSessionVerify, r.eventWrite(ctx, v.Tenant, v.Ref, false), keys, args)
}
