// Package webhooks delivers a tenant's events to the HTTP endpoints it registers, signed as
// the Standard Webhooks specification says (sign.go), at least once, in order per subject,
// retried with exponential backoff and jitter for the retry window (deliver.go), through a
// client guarded against server-side request forgery (client.go). The webhooks and their
// delivery state are kept by a Store (internal/repo/webhookstore implements it) beside the
// tenant's event stream, which the deliverers read with one consumer group per webhook.
package webhooks

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/keyhash"
)

// ErrConfig reports a bad New argument.
var ErrConfig = errors.New("webhooks: bad configuration")

// ErrLeaseLost: another deliverer holds the webhook's lease now; nothing was written.
var ErrLeaseLost = errors.New("webhooks: the webhook's lease is held by another deliverer")

// DefaultTTL is how long a webhook lives (GATEWAY_WEBHOOK_TTL).
const DefaultTTL = 365 * 24 * time.Hour

// Options configure the service.
type Options struct {
	TTL          time.Duration // a webhook's lifetime; default DefaultTTL
	AllowPrivate bool          // admit private and loopback addresses (GATEWAY_WEBHOOK_ALLOW_PRIVATE)
	Timeout      time.Duration // one attempt; default DefaultTimeout
	Logger       *slog.Logger
}

// Service registers webhooks and pings them. It is safe for concurrent use.
type Service struct {
	store  Store
	hasher *keyhash.Hasher
	client *http.Client
	o      Options
}

// New returns the service over store; h derives the signing secrets.
func New(store Store, h *keyhash.Hasher, o Options) (*Service, error) {
	if store == nil || h == nil {
		return nil, fmt.Errorf("%w: webhooks need a store and a hasher", ErrConfig)
	}
	o.TTL = cmp.Or(o.TTL, DefaultTTL)
	o.Logger = cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
	return &Service{store: store, hasher: h, client: NewClient(o.Timeout, o.AllowPrivate), o: o}, nil
}

// Created is a new webhook with its signing secret, shown once.
type Created struct {
	*Webhook
	Secret string
}

// Create registers a webhook for tenant.
func (s *Service) Create(ctx context.Context, tenant, url string, events []string) (Created, error) {
	if err := validateNew(url, events, s.o.AllowPrivate); err != nil {
		return Created{}, err
	}
	w, err := s.store.Create(ctx, &Webhook{ID: NewID(), Tenant: tenant, URL: url, Events: events}, s.o.TTL)
	if err != nil {
		return Created{}, err
	}
	return Created{Webhook: w, Secret: FormatSecret(Secret(s.hasher, tenant, w.ID))}, nil
}

// Get is the tenant's webhook id (apperr.NotFound for another tenant's).
func (s *Service) Get(ctx context.Context, tenant, id string) (*Webhook, error) {
	if !ValidID(id) {
		return nil, apperr.New(apperr.NotFound, "No such webhook.")
	}
	return s.store.Get(ctx, tenant, id)
}

// Delete removes the tenant's webhook; idempotent.
func (s *Service) Delete(ctx context.Context, tenant, id string) error {
	if !ValidID(id) {
		return nil
	}
	return s.store.Delete(ctx, tenant, id)
}

// PingType is the event type of a test ping (not in the events' catalogue: never in a stream).
const PingType events.Type = "webhook.ping"

// Ping sends the webhook a signed webhook.ping now, once, and answers what the receiver did
// (recorded among its deliveries too).
func (s *Service) Ping(ctx context.Context, tenant, id string) (Delivery, error) {
	w, err := s.Get(ctx, tenant, id)
	if err != nil {
		return Delivery{}, err
	}
	msgID := "ping_" + randomID()
	res := send(ctx, s.client, w.URL, Secret(s.hasher, w.Tenant, w.ID), msgID, Body(pingEvent(msgID, w.Tenant, w.ID, time.Now())))
	d := Delivery{MessageID: msgID, EventType: string(PingType), Attempts: 1, StatusCode: res.status, LastError: res.err, Status: StatusDelivered}
	if !res.ok() {
		d.Status = StatusFailed
	}
	if err := s.store.Record(ctx, tenant, id, d); err != nil {
		return Delivery{}, err
	}
	d.UpdatedAt = time.Now()
	return d, nil
}

func randomID() string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%x", b)
}
