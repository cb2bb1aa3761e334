package idemstore

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/idempotency"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/store/storeerr"
)

// The key guards: an operation, a request hash and a resource id reach keys and the marker's
// JSON only in these shapes (the claim script writes them unescaped).
var (
	operationPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,31}$`)
	tokenPattern     = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
)

// Claim claims sc for a request with requestHash that would create resourceID. It answers a
// claim to proceed, a stored response to replay, or a refusal: IdempotencyMismatch (422) for
// another request under the same key, InFlight (409) while the first request's lease lasts.
func (r *Store) Claim(ctx context.Context, sc idempotency.Scope, requestHash, resourceID string) (*idempotency.Claim, error) {
	if err := checkScope(sc, requestHash, resourceID); err != nil {
		return nil, err
	}
	key, owner := r.markerKey(sc), newOwner()
	set, member := r.quotaOf(key)
	expected, created, tookOver := "", "", false
	for range 3 {
		rep, err := r.writes.Script(ctx, "idem_claim", "idempotency claim", scriptClaim, []string{key, set},
			[]string{owner, requestHash, resourceID, repo.FormatMs(r.lease.Milliseconds()), repo.FormatMs(r.ttl.Milliseconds()),
				strconv.Itoa(repo.SchemaVersion), expected, created, strconv.Itoa(r.quota.Limit), member})
		if err != nil {
			if errors.Is(err, storeerr.ErrUnavailable) {
				r.abandon(ctx, key, owner)
			}
			return nil, err
		}
		if err := claimReplies.Check(rep); err != nil {
			return nil, repo.BadReply(ctx, r.Metrics, "idem_claim", err)
		}
		if rep.Code() == repo.CodeQuota {
			r.Metrics.Event(ctx, "idempotency", "quota")
			return nil, repo.QuotaRefusal(ctx, r.Metrics, "idem_claim", rep, r.quota)
		}
		// {'CLAIMED', value, nowMs} | {'EXISTS', current value or '', nowMs}
		d := rep.Reader()
		cur, now := d.Str(0), d.Int(1)
		if err := d.Err(); err != nil {
			return nil, repo.BadReply(ctx, r.Metrics, "idem_claim", err)
		}
		if rep.Code() == repo.CodeClaimed {
			env, _ := decodeEnvelope(cur)
			return &idempotency.Claim{ResourceID: resourceID, TookOver: tookOver,
				Lease: idempotency.Lease{Marker: key, Held: cur, RequestHash: requestHash, CreatedAtMs: env.CreatedAtMs}}, nil
		}
		if cur == "" { // expired between the two steps: claim afresh
			expected, created, tookOver = "", "", false
			continue
		}
		env, outcome, err := r.read(ctx, cur)
		if err != nil {
			return nil, err
		}
		switch {
		case env.RequestHash != requestHash:
			r.Metrics.Event(ctx, "idempotency", "mismatch")
			return nil, apperr.New(apperr.IdempotencyMismatch, "This Idempotency-Key was used with a different request body.")
		case env.State == stateDone:
			r.Metrics.Event(ctx, "idempotency", "replay")
			body := []byte(*env.Body)
			return &idempotency.Claim{Replay: &idempotency.Response{Status: env.Status, Body: body, Location: env.Location, ETag: env.ETag}}, nil
		case r.leaseUntil(env, outcome) > now:
			r.Metrics.Event(ctx, "idempotency", "in_flight")
			e := apperr.New(apperr.InFlight, "A request with this Idempotency-Key is still being processed; retry shortly.")
			e.RetryAfter = time.Duration(r.leaseUntil(env, outcome)-now) * time.Millisecond
			return nil, e
		}
		// The first request's lease passed: take over its claim and its planned id.
		r.Metrics.Event(ctx, "idempotency", "takeover")
		expected, created, tookOver = cur, repo.FormatMs(env.CreatedAtMs), true
		if tokenPattern.MatchString(env.ResourceID) {
			resourceID = env.ResourceID
		}
	}
	return nil, apperr.New(apperr.InFlight, "The Idempotency-Key is contended; retry shortly.")
}

// Complete stores resp as the key's response, keeping the marker's TTL. A claim taken over by
// a later request (lease passed) is not overwritten.
func (r *Store) Complete(ctx context.Context, cl *idempotency.Claim, resp idempotency.Response) error {
	if cl == nil || cl.Lease.Held == "" {
		return nil
	}
	if len(resp.Body) > MaxBodyBytes {
		_ = r.Release(ctx, cl)
		return apperr.Newf(apperr.BoundExceeded, "The response is over %d bytes and cannot be stored for replay.", MaxBodyBytes)
	}
	body := string(resp.Body)
	env := envelope{SchemaVersion: repo.SchemaVersion, State: stateDone, RequestHash: cl.Lease.RequestHash, ResourceID: cl.ResourceID,
		Status: resp.Status, Location: resp.Location, ETag: resp.ETag, Body: &body,
		CreatedAtMs: cl.Lease.CreatedAtMs, UpdatedAtMs: time.Now().UnixMilli()}
	raw, err := json.Marshal(env)
	if err != nil {
		return fmt.Errorf("idempotency complete: %w", err)
	}
	rep, err := r.runHeld(ctx, true, "idem_complete", "idempotency complete", scriptComplete, []string{cl.Lease.Marker}, []string{cl.Lease.Held, string(raw)})
	if err != nil {
		return err
	}
	if rep.Code() == repo.CodeStale {
		r.Metrics.Event(ctx, "idempotency", "lost_lease")
		r.Log.WarnContext(ctx, "idempotency marker was taken over before completion", "key", "idem:{*}")
	}
	return nil
}

// Release drops the claim after a refused or failed request. A marker that is no longer this
// request's (taken over or expired) is left alone.
func (r *Store) Release(ctx context.Context, cl *idempotency.Claim) error {
	if cl == nil || cl.Lease.Held == "" {
		return nil
	}
	set, member := r.quotaOf(cl.Lease.Marker)
	_, err := r.runHeld(ctx, false, "idem_release", "idempotency release", scriptRelease, []string{cl.Lease.Marker, set}, []string{cl.Lease.Held, member})
	return err
}

// abandon drops owner's claim on key after the claim call failed without a reply (Redis
// stalled or the connection broke): the claim may have run, or may run once Redis answers,
// and would then hold the key against the client's retry for a whole lease (409). Sent after
// the claim, it runs after it; best effort (a failure leaves the lease to pass).
func (r *Store) abandon(ctx context.Context, key, owner string) {
	set, member := r.quotaOf(key)
	rep, err := r.runHeld(context.WithoutCancel(ctx), false, "idem_abandon", "idempotency abandon", scriptAbandon, []string{key, set}, []string{owner, member})
	if err != nil {
		r.Log.WarnContext(ctx, "idempotency abandon failed; a lost claim holds the key until its lease passes", "err", err)
		return
	}
	if rep.Code() == repo.CodeOK {
		r.Metrics.Event(ctx, "idempotency", "abandoned")
	}
}

// runHeld runs one of the scripts that act on a claim the caller holds: {'OK'} done |
// {'STALE'} the marker no longer holds it. confirmed: through r.writes (the completion, which
// a replay answers from). A release or an abandon follows a failure and is not confirmed: if a
// failover loses it, the key waits for its lease to pass, as after a crash.
func (r *Store) runHeld(ctx context.Context, confirmed bool, name, op string, l *rueidis.Lua, keys, args []string) (repo.Reply, error) {
	var (
		rep repo.Reply
		err error
	)
	if confirmed {
		rep, err = r.writes.Script(ctx, name, op, l, keys, args)
	} else {
		rep, err = repo.RunScript(ctx, r.Client, r.Metrics, name, op, l, keys, args)
	}
	if err != nil {
		return repo.Reply{}, err
	}
	if err := heldReplies.Check(rep); err != nil {
		return repo.Reply{}, repo.BadReply(ctx, r.Metrics, name, err)
	}
	return rep, nil
}

func checkScope(sc idempotency.Scope, requestHash, resourceID string) error {
	switch {
	case sc.Tenant == "":
		return apperr.New(apperr.Unauthenticated, "The caller has no tenant.")
	case sc.Key == "" || len(sc.Key) > MaxKeyBytes:
		return apperr.Newf(apperr.Validation, "Idempotency-Key must be 1..%d characters.", MaxKeyBytes)
	case !operationPattern.MatchString(sc.Operation) || !tokenPattern.MatchString(requestHash) || !tokenPattern.MatchString(resourceID):
		return fmt.Errorf("idempotency claim: malformed operation, request hash or resource id")
	}
	return nil
}

// newOwner is a claim's random owner, which a lost claim's abandon names.
func newOwner() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
