package repo

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/ratelimit"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
)

// MFA on a session: starting a challenge (session_challenge.lua) and verifying a code with its
// attempt counter, step-up and rotation (session_verify.lua).

// MFAChallenge is an MFA challenge to store: only the HMAC of its code.
type MFAChallenge struct {
	Ref     session.Ref
	Tenant  string
	ID      string
	CodeMAC string
	TTL     time.Duration
}

// StartChallenge stores c with its own TTL (per the server's field-expiry mode) and sets the
// session MFA_REQUIRED; it returns when the challenge expires.
func (r *Sessions) StartChallenge(ctx context.Context, c MFAChallenge) (time.Time, error) {
	secs := int64((c.TTL + time.Second - 1) / time.Second)
	if secs < 1 || !session.B64URL(c.ID) || c.CodeMAC == "" {
		return time.Time{}, apperr.New(apperr.Validation, "A challenge needs an id, a code MAC and a TTL of at least 1s.")
	}
	var rep Reply
	var err error
	if r.perUser {
		rep, err = r.uChallenge(ctx, c, secs)
	} else {
		rep, err = r.run(ctx, "session_challenge", scriptSessionChallenge, []string{r.sessionKey(c.Ref), r.challengeKey(c.Ref)},
			[]string{c.Tenant, string(r.mode), c.ID, c.CodeMAC, strconv.FormatInt(secs, 10), strconv.Itoa(SchemaVersion)})
	}
	if err != nil {
		return time.Time{}, err
	}
	switch rep.Code() {
	case CodeOK: // {'OK', nowMs, expiresAtMs}
		exp, err := rep.Int(1)
		if err = cmp.Or(rep.Want(2), err); err != nil {
			return time.Time{}, r.badReply(ctx, "session_challenge", err)
		}
		r.o.Metrics.Transition(ctx, sessObject, "mfa_challenge", "ok")
		return sessTime(exp), nil
	case CodeNotFound:
		r.o.Metrics.Transition(ctx, sessObject, "mfa_challenge", "missing")
		return time.Time{}, fmt.Errorf("session %s: %w", c.Ref.ID(), apperr.NotFound)
	}
	return time.Time{}, r.badReply(ctx, "session_challenge", rep.Unexpected())
}

// MFAVerification is one MFA verification attempt; on success the session moves to Next.
type MFAVerification struct {
	Ref         session.Ref
	Tenant      string
	ChallengeID string
	CodeMAC     string
	Next        session.Ref
}

// VerifyOutcome is how an attempt ended.
type VerifyOutcome string

const (
	VerifyOK          VerifyOutcome = "verified"
	VerifyWrongCode   VerifyOutcome = "wrong_code"
	VerifyLimited     VerifyOutcome = "rate_limited"
	VerifyNoChallenge VerifyOutcome = "no_challenge"
)

// VerifyResult is the outcome of Verify.
type VerifyResult struct {
	Outcome VerifyOutcome
	// Limit is the attempt counter's decision (every attempt counts, whatever its outcome).
	Limit          ratelimit.Decision
	FailedAttempts int64
	// Session is set on success: the stepped-up session under its new reference.
	Session *session.Session
}

// Verify runs one attempt in one script: count it in the user's fixed-window counter, compare
// the code's MAC with the live challenge's, and on success step up, delete the challenge and
// rotate. A missing session (or another tenant's) is apperr.NotFound and is not counted.
func (r *Sessions) Verify(ctx context.Context, v MFAVerification) (*VerifyResult, error) {
	if v.Next.Tag != v.Ref.Tag {
		return nil, fmt.Errorf("session verify %s: the new reference must keep the user's tag", v.Ref.ID())
	}
	where := "field"
	if r.mode == store.FieldExpiryFallback {
		where = "key"
	}
	p := r.o.MFA
	keys := []string{r.sessionKey(v.Ref), r.sessionKey(v.Next), r.devicesKey(v.Ref.Tag),
		ratelimit.Key(r.keys.Prefix, v.Ref.Tag, p.Name), r.challengeKey(v.Ref)}
	args := []string{v.Tenant, where, v.ChallengeID, v.CodeMAC, strconv.Itoa(p.Limit),
		strconv.FormatInt(p.Window.Milliseconds(), 10), strconv.FormatInt(p.Buffer().Milliseconds(), 10),
		v.Ref.Part, v.Next.Part}
	var rep Reply
	err := r.dur.Run(ctx, r.client, func(c rueidis.Client) (bool, error) {
		var err error
		if r.perUser {
			rep, err = r.uVerify(ctx, c, v)
		} else {
			rep, err = r.runOn(ctx, c, "session_verify", scriptSessionVerify, keys, args)
		}
		// A step-up rotates: the old token is dead. Other outcomes end nothing.
		return err == nil && rep.Code() == CodeOK, err
	})
	if err != nil {
		return nil, err
	}
	switch rep.Code() {
	case CodeNotFound:
		r.o.Metrics.Transition(ctx, sessObject, "mfa_verify", "missing")
		return nil, fmt.Errorf("session %s: %w", v.Ref.ID(), apperr.NotFound)
	case CodeExists:
		return nil, fmt.Errorf("session verify %s: id collision: %w", v.Ref.ID(), rep.Err(""))
	case CodeLimited, CodeNoChallenge, CodeWrongCode, CodeOK:
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
	case CodeNoChallenge, CodeWrongCode:
		arg, want = d.Int(2), 3
	case CodeOK:
		want = 6
	}
	if err := cmp.Or(rep.Want(want), d.Err()); err != nil {
		return nil, r.badReply(ctx, "session_verify", err)
	}
	res := &VerifyResult{Limit: ratelimit.Decision{Policy: p, Allowed: rep.Code() != CodeLimited, Count: int(count),
		Reset: time.Duration(reset) * time.Millisecond}}
	switch rep.Code() {
	case CodeLimited:
		res.Outcome = VerifyLimited
	case CodeNoChallenge:
		res.Outcome = VerifyNoChallenge
		if arg == 1 {
			r.o.Metrics.Read(ctx, sessObject, ExpiredChallenge)
		}
	case CodeWrongCode:
		res.Outcome, res.FailedAttempts = VerifyWrongCode, arg
	case CodeOK:
		now, pttl, abs := d.Int(2), d.Int(3), d.Int(4)
		groups, hasGroups := d.OptStr(5)
		if err := d.Err(); err != nil {
			return nil, r.badReply(ctx, "session_verify", err)
		}
		res.Outcome = VerifyOK
		res.Session = &session.Session{Ref: v.Next, TenantID: v.Tenant, Status: session.MFAVerified, AuthLevel: session.LevelMFA,
			MFAVerifiedAt: sessTime(now), UpdatedAt: sessTime(now), LastRotatedAt: sessTime(now),
			AbsoluteExpiresAt: sessTime(abs), IdleExpiresAt: sessTime(abs), Groups: replyGroups(groups, hasGroups), SchemaVersion: SchemaVersion}
		if pttl >= 0 {
			res.Session.IdleExpiresAt = sessIdleEnd(now, pttl, res.Session.AbsoluteExpiresAt)
		}
	}
	r.o.Metrics.Transition(ctx, sessObject, "mfa_verify", string(res.Outcome))
	return res, nil
}
