package webhooks

import (
	"context"
	"time"

	"github.com/hashgate/hashgate/internal/events"
)

// Store keeps webhooks and their delivery state (*webhookstore.Store implements it). Every
// key of a webhook is under its tenant's tag, beside the tenant's event stream, so one script
// can create a webhook with its consumer group, and acknowledge an event with its record.
type Store interface {
	// Create stores w (its id fresh) and its consumer group on the tenant's event stream,
	// starting after the stream's last event; over the tenant's quota it refuses with
	// apperr.QuotaExceeded.
	Create(ctx context.Context, w *Webhook, ttl time.Duration) (*Webhook, error)
	Get(ctx context.Context, tenant, id string) (*Webhook, error)
	List(ctx context.Context, tenant string) ([]*Webhook, error)
	// Delete removes the webhook, its group and its records; idempotent.
	Delete(ctx context.Context, tenant, id string) error
	// Deliveries are the webhook's most recent delivery records, newest first.
	Deliveries(ctx context.Context, tenant, id string) ([]Delivery, error)
	// Record keeps d as the webhook's record of message d.MessageID (a ping's).
	Record(ctx context.Context, tenant, id string, d Delivery) error

	Queue
}

// Queue is what the deliverer needs: which webhooks exist, a lease per webhook, and the
// webhook's consumer group on its tenant's event stream.
type Queue interface {
	// TenantTags are the tags of the tenants that have (or recently had) webhooks.
	TenantTags(ctx context.Context) ([]string, error)
	// ListTag is List by the tenant's tag.
	ListTag(ctx context.Context, tenantTag string) ([]*Webhook, error)
	// Lease takes or renews the webhook's lease for holder; false when another holds it.
	Lease(ctx context.Context, w *Webhook, holder string, ttl time.Duration) (bool, error)
	// Release gives the lease up when holder has it.
	Release(ctx context.Context, w *Webhook, holder string) error
	// Pending claims for consumer the group's entries that were read and not acknowledged
	// (by any consumer: a dead replica's too), from cursor on ("0-0" first), at most count, in
	// stream order. next is "0-0" when the list is done; gone are ids no longer in the stream.
	Pending(ctx context.Context, w *Webhook, consumer, cursor string, count int) (entries []Entry, next string, gone []string, err error)
	// ReadNew reads up to count entries the group has not read yet, for consumer.
	ReadNew(ctx context.Context, w *Webhook, consumer string, count int) ([]Entry, error)
	// States are the records of the entries named, where kept (by stream id).
	States(ctx context.Context, w *Webhook, streamIDs []string) (map[string]Delivery, error)
	// Settle records d for the entry streamID, and when d is final (delivered or failed)
	// acknowledges it, if holder still holds the webhook's lease (else ErrLeaseLost).
	Settle(ctx context.Context, w *Webhook, holder, streamID string, d Delivery) error
	// Skip acknowledges entries the webhook does not subscribe to, without a record.
	Skip(ctx context.Context, w *Webhook, streamIDs []string) error
}

// Entry is one event read from the tenant's stream.
type Entry struct {
	StreamID string
	Event    events.Event // its ID is StreamID
}
