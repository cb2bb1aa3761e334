package webhooks

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/hashgate/hashgate/internal/keyhash"
)

// How events reach the webhooks, whichever gateway replicas run:
//
//   - Each webhook has a consumer group of its own on its tenant's event stream (created with
//     the webhook, starting after the stream's last event). The group's pending list is the
//     durable record of what is read and not yet settled.
//   - One replica at a time delivers to a webhook: the holder of its lease (a key under the
//     tenant's tag, LeaseTTL, renewed before each attempt). Every replica polls the webhooks
//     and takes the leases that are free, so the work spreads and a dead replica's webhooks
//     are taken over once its lease runs out.
//   - The holder first claims the group's whole pending list for itself (XAUTOCLAIM from 0-0:
//     its own entries and a dead replica's), then reads new entries (XREADGROUP >), and goes
//     through them in stream order. An entry whose subject has an earlier entry still unsettled
//     waits: events of one subject are delivered in order. Each attempt is recorded (status,
//     attempts, last error, next attempt) and only a final outcome — delivered, or failed
//     once the retry window since the event has passed — acknowledges the entry, in the same
//     script that checks the lease is still the caller's.
//   - So an event is delivered at least once: a replica that dies after the receiver's 2xx and
//     before its acknowledgement leaves the entry pending, and the next holder sends it again
//     under the same webhook-id, which receivers deduplicate on.

// Defaults of the deliverer.
const (
	DefaultRetryBase    = 5 * time.Second
	DefaultRetryMax     = time.Hour
	DefaultRetryWindow  = 24 * time.Hour
	DefaultPollInterval = time.Second
	DefaultLeaseTTL     = 30 * time.Second
	// maxScan bounds the pending entries one pass looks at; maxBatch one read.
	maxScan  = 1000
	maxBatch = 100
	// maxParallel bounds the webhooks one replica delivers to at once.
	maxParallel = 8
	// maxConsumerBytes bounds a consumer name (the lease's value, docs/KEYS.md).
	maxConsumerBytes = 100
)

// DeliverOptions configure a Deliverer.
type DeliverOptions struct {
	RetryBase    time.Duration // first retry delay; doubles per attempt (GATEWAY_WEBHOOK_RETRY_BASE)
	RetryMax     time.Duration // longest delay between attempts
	RetryWindow  time.Duration // an event is retried this long after it happened, then failed
	PollInterval time.Duration // how often the webhooks are looked at
	LeaseTTL     time.Duration // how long a silent holder keeps a webhook
	Timeout      time.Duration // one attempt
	AllowPrivate bool
	Consumer     string // this replica's consumer name; default host-pid-random
	Logger       *slog.Logger
	Meter        metric.Meter // the delivery metrics (metrics.go); nil: none
}

// Deliverer delivers the tenants' events to their webhooks (Run, one per replica).
type Deliverer struct {
	q      Queue
	hasher *keyhash.Hasher
	client *http.Client
	o      DeliverOptions
	log    *slog.Logger
	m      *metrics

	mu      sync.Mutex
	running map[string]bool // webhook ids with a pass under way on this replica
}

// NewDeliverer returns a deliverer over q; h derives the signing secrets.
func NewDeliverer(q Queue, h *keyhash.Hasher, o DeliverOptions) (*Deliverer, error) {
	if q == nil || h == nil {
		return nil, ErrConfig
	}
	o.RetryBase = cmp.Or(o.RetryBase, DefaultRetryBase)
	o.RetryMax = max(cmp.Or(o.RetryMax, DefaultRetryMax), o.RetryBase)
	o.RetryWindow = cmp.Or(o.RetryWindow, DefaultRetryWindow)
	o.PollInterval = cmp.Or(o.PollInterval, DefaultPollInterval)
	o.LeaseTTL = cmp.Or(o.LeaseTTL, DefaultLeaseTTL)
	o.Timeout = cmp.Or(o.Timeout, DefaultTimeout)
	if o.LeaseTTL < 2*o.Timeout {
		o.LeaseTTL = 2 * o.Timeout // an attempt never outlasts the lease it was made under
	}
	if o.Consumer == "" {
		o.Consumer = consumerName()
	}
	if len(o.Consumer) > maxConsumerBytes {
		o.Consumer = o.Consumer[len(o.Consumer)-maxConsumerBytes:] // the pid and random part are at the end
	}
	m, err := newMetrics(o.Meter)
	if err != nil {
		return nil, err
	}
	return &Deliverer{q: q, hasher: h, client: NewClient(o.Timeout, o.AllowPrivate), o: o, m: m,
		log: cmp.Or(o.Logger, slog.New(slog.DiscardHandler)), running: map[string]bool{}}, nil
}

// consumerName names this replica in the consumer groups.
func consumerName() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = crand.Read(b[:])
	return strings.NewReplacer(" ", "_").Replace(host) + "-" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b[:])
}

// Run polls until ctx ends, then gives up the leases it holds (so another replica takes over
// at once) after the passes under way end.
func (d *Deliverer) Run(ctx context.Context) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxParallel)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-t.C:
		}
		for _, w := range d.webhooks(ctx) {
			if !d.start(w.ID) {
				continue
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				d.done(w.ID)
				continue
			}
			wg.Add(1)
			go func() {
				defer func() { <-sem; d.done(w.ID); wg.Done() }()
				d.Pass(ctx, w)
			}()
		}
		t.Reset(jitter(d.o.PollInterval))
	}
}

func (d *Deliverer) start(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.running[id] {
		return false
	}
	d.running[id] = true
	return true
}

func (d *Deliverer) done(id string) {
	d.mu.Lock()
	delete(d.running, id)
	d.mu.Unlock()
}

// webhooks are every tenant's webhooks (errors logged: the next poll tries again).
func (d *Deliverer) webhooks(ctx context.Context) []*Webhook {
	tags, err := d.q.TenantTags(ctx)
	if err != nil {
		d.logErr(ctx, "webhook tenants", err)
		return nil
	}
	var out []*Webhook
	for _, tag := range tags {
		ws, err := d.q.ListTag(ctx, tag)
		if err != nil {
			d.logErr(ctx, "webhooks of a tenant", err)
			continue
		}
		out = append(out, ws...)
	}
	return out
}

func (d *Deliverer) logErr(ctx context.Context, what string, err error) {
	if ctx.Err() == nil {
		d.log.WarnContext(ctx, "webhook delivery", "step", what, "err", err)
	}
}

// Pass delivers what is due to w, if this replica holds (or takes) its lease, and releases
// the lease when ctx has ended.
func (d *Deliverer) Pass(ctx context.Context, w *Webhook) {
	ok, err := d.q.Lease(ctx, w, d.o.Consumer, d.o.LeaseTTL)
	if err != nil || !ok {
		if err != nil {
			d.logErr(ctx, "lease", err)
		}
		return
	}
	defer func() {
		if ctx.Err() != nil {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			_ = d.q.Release(rctx, w, d.o.Consumer)
			cancel()
		}
	}()
	entries, err := d.collect(ctx, w)
	if err != nil {
		d.logErr(ctx, "read", err)
		return
	}
	if err := d.deliver(ctx, w, entries); err != nil && !errors.Is(err, ErrLeaseLost) {
		d.logErr(ctx, "settle", err)
	}
}

// collect claims the group's pending entries and, when all of them fit in one pass, reads the
// new ones after them: in stream order, never a newer entry ahead of an older pending one.
func (d *Deliverer) collect(ctx context.Context, w *Webhook) ([]Entry, error) {
	var out []Entry
	cursor := "0-0"
	for {
		es, next, gone, err := d.q.Pending(ctx, w, d.o.Consumer, cursor, maxBatch)
		if err != nil {
			return nil, err
		}
		for _, id := range gone {
			// Trimmed from the stream (its retention) before it could be delivered.
			f := Delivery{MessageID: id, Status: StatusFailed, LastError: "the event left the event stream (retention) before it was delivered"}
			if err := d.q.Settle(ctx, w, d.o.Consumer, id, f); err != nil {
				return nil, err
			}
			d.m.settledAs(ctx, StatusFailed, eventTime(id))
		}
		out = append(out, es...)
		if next == "0-0" || next == "" {
			break
		}
		if len(out) >= maxScan {
			return out, nil
		}
		cursor = next
	}
	fresh, err := d.q.ReadNew(ctx, w, d.o.Consumer, maxBatch)
	if err != nil {
		return nil, err
	}
	return append(out, fresh...), nil
}

// deliver goes through entries in order: each subject's first unsettled entry is attempted
// when due; later entries of a subject wait behind it.
func (d *Deliverer) deliver(ctx context.Context, w *Webhook, entries []Entry) error {
	var skip []string
	ids := make([]string, 0, len(entries))
	for _, e := range entries {
		ids = append(ids, e.StreamID)
	}
	states, err := d.q.States(ctx, w, ids)
	if err != nil {
		return err
	}
	blocked := map[string]bool{}
	secret := Secret(d.hasher, w.Tenant, w.ID)
	for _, e := range entries {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !w.Wants(string(e.Event.Type)) {
			skip = append(skip, e.StreamID)
			continue
		}
		if blocked[e.Event.Subject] {
			continue
		}
		st, seen := states[e.StreamID]
		now := time.Now()
		if seen && st.NextAttemptAt.After(now) {
			blocked[e.Event.Subject] = true
			continue
		}
		if ok, err := d.q.Lease(ctx, w, d.o.Consumer, d.o.LeaseTTL); err != nil || !ok {
			return cmp.Or(err, ErrLeaseLost)
		}
		start := time.Now()
		res := send(ctx, d.client, w.URL, secret, e.Event.ID, Body(e.Event))
		if ctx.Err() != nil {
			return ctx.Err() // stopping: the entry stays pending for the next holder
		}
		d.m.attempted(ctx, res, time.Since(start))
		rec := Delivery{MessageID: e.Event.ID, EventType: string(e.Event.Type), Attempts: st.Attempts + 1,
			StatusCode: res.status, LastError: res.err, Status: StatusDelivered}
		if !res.ok() {
			// Retried until an attempt fails after the window has passed: attempts span at
			// least the whole window.
			rec.Status, rec.NextAttemptAt = StatusPending, time.Now().Add(max(d.backoff(rec.Attempts), res.retryAfter))
			if time.Now().After(eventTime(e.StreamID).Add(d.o.RetryWindow)) {
				rec.Status, rec.NextAttemptAt = StatusFailed, time.Time{}
			}
		}
		if err := d.q.Settle(ctx, w, d.o.Consumer, e.StreamID, rec); err != nil {
			return err
		}
		d.m.settledAs(ctx, rec.Status, eventTime(e.StreamID))
		if rec.Status == StatusPending {
			blocked[e.Event.Subject] = true
		}
	}
	if len(skip) > 0 {
		return d.q.Skip(ctx, w, skip)
	}
	return nil
}

// backoff is the delay before attempt n+1: RetryBase doubled per attempt up to RetryMax, with
// full jitter over its upper half.
func (d *Deliverer) backoff(attempts int) time.Duration {
	b := d.o.RetryBase
	for i := 1; i < attempts && b < d.o.RetryMax; i++ {
		b *= 2
	}
	b = min(b, d.o.RetryMax)
	return b/2 + rand.N(b/2+1)
}

// jitter is d ±10%, so replicas do not poll in step.
func jitter(d time.Duration) time.Duration {
	return d - d/10 + rand.N(d/5+1)
}

// eventTime is when the entry was written: a stream id's milliseconds (Redis time).
func eventTime(streamID string) time.Time {
	ms, _, _ := strings.Cut(streamID, "-")
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return time.Now()
	}
	return time.UnixMilli(n)
}
