package sessionstore

import (
	"context"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/ratelimit"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/sessions/session"
)

// The per-user layout's MFA and rotation scripts (session_u_challenge.lua, session_u_verify.lua,
// session_u_rotate.lua). Their replies have the per-session scripts' shapes, so StartChallenge,
// Verify and Rotate decode both the same way.

var (
	scriptPerUserChallenge = script("session_u_challenge")
	scriptPerUserVerify    = script("session_u_verify")
	scriptPerUserRotate    = script("session_u_rotate")
)

// challenge stores c's challenge in the user's hash: its fields' TTL is secs, never past the
// session's idle window.
func (r perUserLayout) challenge(ctx context.Context, c session.MFAChallenge, secs int64) (repo.Reply, error) {
	return r.runEvents(ctx, r.client, "session_u_challenge", scriptPerUserChallenge, r.eventWrite(ctx, c.Tenant, c.Ref, false), []string{r.userKey(c.Ref.Tag)},
		[]string{c.Tenant, c.Ref.Part, c.ID, c.CodeMAC, strconv.FormatInt(secs*1000, 10)})
}

// verify runs one verify attempt on c (the pinned connection of the durable write).
func (r perUserLayout) verify(ctx context.Context, c rueidis.Client, v session.MFAVerification) (repo.Reply, error) {
	p := r.o.MFA
	return r.runEvents(ctx, c, "session_u_verify", scriptPerUserVerify, r.eventWrite(ctx, v.Tenant, v.Ref, false),
		[]string{r.userKey(v.Ref.Tag), ratelimit.Key(r.keys.Prefix, v.Ref.Tag, p.Name)},
		[]string{v.Tenant, v.ChallengeID, v.CodeMAC, strconv.Itoa(p.Limit), strconv.FormatInt(p.Window.Milliseconds(), 10),
			strconv.FormatInt(p.Buffer().Milliseconds(), 10), v.Ref.Part, v.VerifierMAC})
}

// rotate replaces the session's verifier MAC within the user's hash, on c.
func (r perUserLayout) rotate(ctx context.Context, c rueidis.Client, ref session.Ref, tenant, mac string) (repo.Reply, error) {
	return r.runEvents(ctx, c, "session_u_rotate", scriptPerUserRotate, r.eventWrite(ctx, tenant, ref, false), []string{r.userKey(ref.Tag)},
		[]string{tenant, ref.Part, mac})
}
