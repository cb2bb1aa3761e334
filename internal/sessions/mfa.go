package sessions

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"math/big"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/ratelimit"
	"github.com/hashgate/hashgate/internal/sessions/session"
)

// MFA on a session: a step-up challenge and its verification (which steps up and rotates).

// StartChallenge starts an MFA step-up: a fresh 6-digit code whose HMAC is stored with its own
// TTL. A new challenge replaces a live one.
func (s *Service) StartChallenge(ctx context.Context, tenant, id string) (*Challenge, error) {
	r, err := ref(id)
	if err != nil {
		return nil, err
	}
	n, err := rand.Int(rand.Reader, big.NewInt(1_000_000))
	if err != nil {
		return nil, fmt.Errorf("sessions: random code: %w", err)
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("sessions: random challenge id: %w", err)
	}
	c := &Challenge{ID: base64.RawURLEncoding.EncodeToString(b[:]), Code: fmt.Sprintf("%06d", n.Int64())}
	s.wrote(r)
	c.ExpiresAt, err = s.store.StartChallenge(ctx, session.MFAChallenge{Ref: r, Tenant: tenant, ID: c.ID,
		CodeMAC: s.codeMAC(r.Tag, c.ID, c.Code), TTL: s.cfg.ChallengeTTL})
	if err != nil {
		return nil, err
	}
	s.audit(ctx, events.SessionMFAChallenged, tenant, r)
	return c, nil
}

// Verify checks an MFA code. Success steps the session up and replaces its token (the returned
// one, same session id, replaces the old). A wrong code is 422 with attemptsLeft; past the per-user limit, 429
// with Retry-After and RateLimit headers; no live challenge with that id (expired, or used: a
// replayed verify), 410.
func (s *Service) Verify(ctx context.Context, tenant, id, challengeID, code string) (*Issued, error) {
	if err := checkChallengeID(challengeID); err != nil {
		return nil, err
	}
	if err := checkCode(code); err != nil {
		return nil, err
	}
	r, token, mac, err := s.newVerifier(id)
	if err != nil {
		return nil, err
	}
	res, err := s.store.Verify(ctx, session.MFAVerification{Ref: r, Tenant: tenant, ChallengeID: challengeID,
		CodeMAC: s.codeMAC(r.Tag, challengeID, code), VerifierMAC: mac})
	if err != nil {
		return nil, err
	}
	limit := ratelimit.Decision{Policy: s.store.MFAPolicy(), Allowed: res.Attempts.Allowed, Count: res.Attempts.Count,
		Reset: res.Attempts.Reset}
	ratelimit.Record(ctx, s.m.limits, limit)
	s.auditVerify(ctx, tenant, r, res.Outcome, limit.Remaining())
	switch res.Outcome {
	case session.VerifyOK:
		return &Issued{Session: *res.Session, Token: token}, nil
	case session.VerifyLimited:
		return nil, limit.Err()
	case session.VerifyNoChallenge:
		return nil, withHeaders(apperr.New(apperr.Gone, "No live MFA challenge with this id; start a new one."), limit.Headers())
	default:
		left := limit.Remaining()
		return nil, withHeaders(apperr.Newf(apperr.WrongCode, "The code is not valid; %d attempts left in this window.", left), limit.Headers()).
			With("attemptsLeft", left)
	}
}

func withHeaders(e *apperr.Error, h map[string]string) *apperr.Error {
	for k, v := range h {
		e.WithHeader(k, v)
	}
	return e
}
