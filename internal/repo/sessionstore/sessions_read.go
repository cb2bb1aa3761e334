package sessionstore

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/sessions/session"
)

// Reading one session's full view (Get) and classifying what was read.

// Get reads the full view of one session of tenant (another tenant's answers NotFound) in one
// round trip: HMGET of the view fields and PTTL (plus the challenge key's existence in the
// fallback mode).
func (r *Sessions) Get(ctx context.Context, ref session.Ref, tenant string) (*session.Session, error) {
	return r.layout.get(ctx, ref, tenant)
}

func (r perSessionLayout) get(ctx context.Context, ref session.Ref, tenant string) (*session.Session, error) {
	key := r.sessionKey(ref)
	cmds := rueidis.Commands{
		r.client.B().Hmget().Key(key).Field(sessViewFields...).Build(),
		r.client.B().Pttl().Key(key).Build(),
	}
	if r.challengeKeys {
		cmds = append(cmds, r.client.B().Exists().Key(r.challengeKey(ref)).Build())
	}
	res := r.client.DoMulti(ctx, cmds...)
	for _, x := range res {
		if err := x.Error(); err != nil {
			return nil, repo.CommandError("session get", err)
		}
	}
	vals, err := res[0].ToArray()
	if err != nil {
		return nil, repo.CommandError("session get", err)
	}
	pttl, err := res[1].AsInt64()
	if err != nil {
		return nil, repo.CommandError("session get", err)
	}
	m, size, err := repo.HMGetFields(vals, sessViewFields)
	if err != nil {
		return nil, fmt.Errorf("session get: %w", err)
	}
	if len(m) == 0 || pttl == -2 {
		r.metrics.Read(ctx, sessObject, repo.Missing)
		return nil, fmt.Errorf("session %s: %w", ref.ID(), apperr.NotFound)
	}
	r.metrics.Payload(ctx, sessObject, size)
	s, err := r.parseView(ctx, ref, m, time.Now().UnixMilli(), pttl)
	if err != nil {
		return nil, err
	}
	if s.TenantID != tenant {
		return nil, fmt.Errorf("session %s: %w", ref.ID(), apperr.NotFound)
	}
	if r.challengeKeys {
		n, _ := res[2].AsInt64()
		s.ChallengeLive = n == 1
	}
	r.classifyChallenge(ctx, s, m)
	return s, nil
}

// parseView maps view fields to a Session, classifying (and counting) old schema and corrupt.
func (r *Sessions) parseView(ctx context.Context, ref session.Ref, m map[string]string, now, pttl int64) (*session.Session, error) {
	f := repo.NewFields(m)
	s, _ := decodeView(f, ref)
	outcome := f.Schema()
	if err := f.Err(sessObject); err != nil {
		return nil, r.corrupt(ctx, ref, f, err)
	}
	s.SchemaVersion = sessSchema(outcome)
	s.IdleExpiresAt = s.AbsoluteExpiresAt
	if pttl >= 0 {
		s.IdleExpiresAt = sessIdleEnd(now, pttl, s.AbsoluteExpiresAt)
	}
	r.metrics.Read(ctx, sessObject, outcome)
	return &s, nil
}

// classifyChallenge counts a session waiting in MFA_REQUIRED whose challenge has expired.
func (r *Sessions) classifyChallenge(ctx context.Context, s *session.Session, m map[string]string) {
	if s.Status == session.MFARequired && !s.ChallengeLive && m[fieldChallengeAt] != "" {
		r.metrics.Read(ctx, sessObject, ExpiredChallenge)
	}
}

// corrupt counts and logs a corrupt session (key pattern and field names, never values).
func (r *Sessions) corrupt(ctx context.Context, ref session.Ref, f *repo.Fields, err error) error {
	r.metrics.Read(ctx, sessObject, repo.Corrupt)
	r.log.WarnContext(ctx, "corrupt session hash refused", "key_pattern", r.keyPattern(), "fields", f.BadNames())
	return fmt.Errorf("session %s: %w", ref.ID(), err)
}
