// Package idempotency runs a create at most once per Idempotency-Key: it claims the key for a
// hash of the request, replays the stored first response to a retry, refuses a key in flight
// or reused with another request, and releases the claim when the create fails. The store that
// keeps the claims (internal/repo/idemstore) implements Store.
//
// A keyed create's resource id is derived from the tenant, the operation, the key and the
// request (a keyed hash, internal/keyhash), never drawn at random: every attempt of one keyed
// request names the same object. A create that timed out (503) may still run once Redis
// answers again, after its claim was released; the retry then finds that object (the create
// scripts return an existing object under the id) instead of making a second one.
package idempotency

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/hashgate/hashgate/internal/keyhash"
)

// Scope names one use of an Idempotency-Key: the tenant, the operation and the raw header
// value (the store keeps only its hash).
type Scope struct {
	Tenant    string
	Operation string
	Key       string
}

// Response is a stored first response: what a retry replays, byte for byte.
type Response struct {
	Status   int
	Body     []byte
	Location string
	ETag     string
}

// Claim is the outcome of Store.Claim: a stored response to replay, or the right to proceed
// with ResourceID (the id the create must use).
type Claim struct {
	ResourceID string
	Replay     *Response
	// TookOver is true when an earlier request's lease had passed and this one took over.
	TookOver bool
	// Lease is the store's hold on the key, handed back to Complete or Release.
	Lease Lease
}

// Lease is the store's own record of a claim it granted. Its fields belong to the store; the
// service only hands them back.
type Lease struct {
	Marker      string // where the claim is kept
	Held        string // the exact claim written, compared before it is replaced or dropped
	RequestHash string
	CreatedAtMs int64
}

// Store keeps Idempotency-Key claims and the responses they produced (*idemstore.Store
// implements it). Claim answers a claim to proceed, a stored response to replay, or a
// refusal: apperr.IdempotencyMismatch for another request under the key, apperr.InFlight while
// the first request's lease lasts.
type Store interface {
	Claim(ctx context.Context, sc Scope, requestHash, resourceID string) (*Claim, error)
	Complete(ctx context.Context, cl *Claim, resp Response) error
	Release(ctx context.Context, cl *Claim) error
}

// Key is a create's Idempotency-Key (nil: none) and the request it came with, as the caller
// sent it; its JSON form is what a retry must repeat.
type Key struct {
	Value   *string
	Request any
}

// Result is a create's response and whether it is a replay of the first one.
type Result struct {
	Response
	Replayed bool
}

// IDs makes one resource type's ids: Fresh for a create without a key, Derived (from 16 bytes
// of a keyed hash) for a keyed one. Both must answer ids of the type's one shape.
type IDs struct {
	Fresh   func() string
	Derived func(sum [16]byte) string
}

// ErrNoHasher reports a keyed create on a service built without a hasher.
var ErrNoHasher = errors.New("idempotency: keyed create without a hasher")

// Service runs creates at most once per key. It is safe for concurrent use.
type Service struct {
	store Store
	h     *keyhash.Hasher
	log   *slog.Logger
}

// New returns the service over store; h derives keyed creates' ids; log may be nil.
func New(store Store, h *keyhash.Hasher, log *slog.Logger) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{store: store, h: h, log: log}
}

// resourcePurpose separates derived resource ids from the hasher's other uses.
const resourcePurpose = "idem-resource"

// DerivedID is the id a keyed create uses: ids.Derived of the first 16 bytes of
// HMAC(tenant, operation, key, request hash).
func (s *Service) DerivedID(ids IDs, op, tenant, key, requestHash string) (string, error) {
	if s.h == nil {
		return "", ErrNoHasher
	}
	return ids.Derived([16]byte(s.h.Sum(resourcePurpose, tenant, op, key, requestHash))), nil
}

// RequestHash is the hash a claim compares: SHA-256 over the operation and the canonical request.
func RequestHash(operation string, canonical []byte) string {
	s := sha256.New()
	s.Write([]byte(operation))
	s.Write([]byte{0})
	s.Write(canonical)
	return hex.EncodeToString(s.Sum(nil))
}

// Do runs create at most once per key. Without a key it just creates with ids.Fresh(). With
// one it claims the key (tenant + operation + the key) for a hash of the canonical request,
// planning the derived id (DerivedID); a completed key replays the stored response, a key in
// flight is 409, a key used with another request is 422. A refused or failed create releases
// the claim; a successful one stores its response (status, body, Location, ETag) under the key.
func (s *Service) Do(ctx context.Context, op, tenant string, key Key, ids IDs,
	create func(id string) (Response, error)) (Result, error) {
	if key.Value == nil {
		resp, err := create(ids.Fresh())
		return Result{Response: resp}, err
	}
	canonical, err := json.Marshal(key.Request)
	if err != nil {
		return Result{}, fmt.Errorf("%s: canonical request: %w", op, err)
	}
	reqHash := RequestHash(op, canonical)
	id, err := s.DerivedID(ids, op, tenant, *key.Value, reqHash)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", op, err)
	}
	cl, err := s.store.Claim(ctx, Scope{Tenant: tenant, Operation: op, Key: *key.Value}, reqHash, id)
	if err != nil {
		return Result{}, err
	}
	if cl.Replay != nil {
		return Result{Response: *cl.Replay, Replayed: true}, nil
	}
	resp, err := create(cl.ResourceID)
	if err != nil {
		if rerr := s.store.Release(context.WithoutCancel(ctx), cl); rerr != nil {
			s.log.WarnContext(ctx, "idempotency release failed; the key frees itself when its lease passes", "op", op, "err", rerr)
		}
		return Result{}, err
	}
	if err := s.store.Complete(context.WithoutCancel(ctx), cl, resp); err != nil {
		s.log.WarnContext(ctx, "idempotency completion failed; a retry after the lease recovers the same resource", "op", op, "err", err)
	}
	return Result{Response: resp}, nil
}
