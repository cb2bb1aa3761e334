package webhookstore

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/keyaudit"
	"github.com/hashgate/hashgate/internal/repo/storetest"

	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
	"github.com/hashgate/hashgate/internal/webhooks"
)

// TestDeliveryEverySignatureVerified: events written to the tenant's stream after the webhook
// was created reach a real receiver, each signed so the specification's check accepts it,
// each subject in order; the event written before the webhook is not sent.
func TestDeliveryEverySignatureVerified(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		f := newFixture(t, s, prefix)
		ids := f.emitMany(30, 3)
		f.deliverer(f.st, "g1", webhooks.DeliverOptions{})
		eventually(t, 20*time.Second, "every event delivered", func() bool { return f.rcv.distinct() >= len(ids) })
		f.rcv.check(ids)
		if n := f.rcv.distinct(); n != len(ids) {
			t.Errorf("%d distinct events delivered, want %d (the one before the webhook must not be)", n, len(ids))
		}
		wantNoPending(t, f)
		ds, err := f.st.Deliveries(context.Background(), "acme", f.w.ID)
		if err != nil || len(ds) != len(ids) || ds[0].Status != webhooks.StatusDelivered {
			t.Fatalf("deliveries: %d records, first %+v, err %v", len(ds), first(ds), err)
		}
		wantNewestFirst(t, ds, ids)
	})
}

// wantNewestFirst checks that ds are the records of ids, each once, newest first (records
// settled in one millisecond tie, in either order).
func wantNewestFirst(t *testing.T, ds []webhooks.Delivery, ids []string) {
	t.Helper()
	seen := make(map[string]bool, len(ds))
	for i, d := range ds {
		seen[d.MessageID] = true
		if i > 0 && d.UpdatedAt.After(ds[i-1].UpdatedAt) {
			t.Fatalf("record %d (%s, %v) is newer than the one before it (%v)", i, d.MessageID, d.UpdatedAt, ds[i-1].UpdatedAt)
		}
	}
	for _, id := range ids {
		if !seen[id] {
			t.Fatalf("no record of message %s among %d", id, len(ds))
		}
	}
}

// TestDeliveryStreamAfterWebhook: a tenant with no event stream yet registers a webhook; the
// stream's first events (written after it) get the webhook's group and are all delivered.
func TestDeliveryStreamAfterWebhook(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		f := newFixtureStream(t, s, prefix, false)
		f.deliverer(f.st, "g1", webhooks.DeliverOptions{})
		time.Sleep(100 * time.Millisecond) // a pass or two on no stream
		ids := f.emitMany(10, 2)
		eventually(t, 20*time.Second, "every event delivered", func() bool { return f.rcv.distinct() >= len(ids) })
		f.rcv.check(ids)
		wantNoPending(t, f)
	})
}

// TestReceiverDownThenBack: the receiver answers 503 for a while, then comes back refusing
// every third request: every event is delivered, none lost, each subject in order (a later
// event of a subject never overtakes a refused one), and the records show the retries.
func TestReceiverDownThenBack(t *testing.T) {
	t.Parallel()
	s := testredis.Open(t, testredis.Named(t, "redis8"))
	f := newFixture(t, s, testredis.Prefix(t))
	f.rcv.set(func(r *receiver) { r.failing = true })
	f.deliverer(f.st, "g1", webhooks.DeliverOptions{})
	ids := f.emitMany(40, 4)
	eventually(t, 10*time.Second, "attempts while down", func() bool {
		f.rcv.mu.Lock()
		defer f.rcv.mu.Unlock()
		return f.rcv.requests >= 12
	})
	ds, err := f.st.Deliveries(context.Background(), "acme", f.w.ID)
	if err != nil || len(ds) == 0 || ds[0].Status != webhooks.StatusPending || ds[0].LastError != "HTTP 503" || ds[0].NextAttemptAt.IsZero() {
		t.Fatalf("while down: %+v %v", first(ds), err)
	}
	more := f.emitMany(20, 4)
	f.rcv.set(func(r *receiver) { r.failing, r.flaky = false, 3 })
	all := append(ids, more...)
	eventually(t, 20*time.Second, "every event delivered once the receiver is back", func() bool { return f.rcv.distinct() >= len(all) })
	f.rcv.check(all)
	wantNoPending(t, f)
}

// TestTwoGatewaysEachEventOnce: two deliverers (two gateways, each its own connection) work
// on the same webhook: every event is accepted once by its webhook-id, in order per subject.
func TestTwoGatewaysEachEventOnce(t *testing.T) {
	t.Parallel()
	b := testredis.Named(t, "redis8")
	s := testredis.Open(t, b)
	f := newFixture(t, s, testredis.Prefix(t))
	other := newTestStore(t, testredis.Open(t, b), f.prefix)
	f.deliverer(f.st, "g1", webhooks.DeliverOptions{})
	f.deliverer(other, "g2", webhooks.DeliverOptions{})
	ids := f.emitMany(200, 10)
	eventually(t, 30*time.Second, "every event delivered", func() bool { return f.rcv.distinct() >= len(ids) })
	f.rcv.check(ids)
	f.rcv.mu.Lock()
	dups := f.rcv.requests - len(f.rcv.accepted)
	f.rcv.mu.Unlock()
	t.Logf("%d events, %d requests (%d sent again)", len(ids), len(ids)+dups, dups)
	wantNoPending(t, f)
}

// TestStoppedGatewayPendingClaimed: a gateway dies while its request is in flight (its Redis
// connection gone, its lease left to run out); the other gateway claims its pending entries
// (XAUTOCLAIM) and delivers every event.
func TestStoppedGatewayPendingClaimed(t *testing.T) {
	t.Parallel()
	b := testredis.Named(t, "redis8")
	s := testredis.Open(t, b)
	f := newFixture(t, s, testredis.Prefix(t))
	dying := testredis.Open(t, b)
	hang := make(chan struct{})
	f.rcv.set(func(r *receiver) { r.hang = hang })
	ids := f.emitMany(10, 2)
	stopA := f.deliverer(newTestStore(t, dying, f.prefix), "dying", webhooks.DeliverOptions{LeaseTTL: time.Second, Timeout: 500 * time.Millisecond})
	<-f.rcv.arrived // A's first request is in flight
	dying.Close()   // A loses Redis: it can neither acknowledge nor release its lease
	stopA()
	pending := pendingOf(t, f, "dying")
	if pending == 0 {
		t.Fatal("the stopped gateway left no pending entries: the test proves nothing")
	}
	f.rcv.set(func(r *receiver) { r.hang = nil })
	close(hang)
	f.deliverer(f.st, "g2", webhooks.DeliverOptions{LeaseTTL: time.Second, Timeout: 500 * time.Millisecond})
	eventually(t, 20*time.Second, "every event delivered by the other gateway", func() bool { return f.rcv.distinct() >= len(ids) })
	f.rcv.check(ids)
	wantNoPending(t, f)
	t.Logf("the stopped gateway left %d pending entries; the other delivered them", pending)
}

// TestRetryWindowEndsFailed: an event the receiver refuses for its whole retry window is
// marked failed, acknowledged (no longer pending) and listed so; the next event of the same
// subject then goes out.
func TestRetryWindowEndsFailed(t *testing.T) {
	t.Parallel()
	s := testredis.Open(t, testredis.Named(t, "redis8"))
	f := newFixture(t, s, testredis.Prefix(t))
	f.rcv.set(func(r *receiver) { r.failing = true })
	f.deliverer(f.st, "g1", webhooks.DeliverOptions{RetryWindow: 2 * time.Second})
	id := f.emit("session.revoked", "s_1")
	eventually(t, 10*time.Second, "the event marked failed", func() bool {
		ds, _ := f.st.Deliveries(context.Background(), "acme", f.w.ID)
		return len(ds) > 0 && ds[0].Status == webhooks.StatusFailed
	})
	ds, _ := f.st.Deliveries(context.Background(), "acme", f.w.ID)
	if ds[0].MessageID != id || ds[0].Attempts < 2 || ds[0].LastError != "HTTP 503" {
		t.Fatalf("failed record: %+v", ds[0])
	}
	ms, _ := strconv.ParseInt(strings.SplitN(id, "-", 2)[0], 10, 64)
	if span := ds[0].UpdatedAt.Sub(time.UnixMilli(ms)); span < 2*time.Second {
		t.Fatalf("given up %v after the event, before the 2s retry window ended", span)
	}
	wantNoPending(t, f)
	f.rcv.set(func(r *receiver) { r.failing = false })
	next := f.emit("session.revoked", "s_1")
	eventually(t, 10*time.Second, "the next event delivered", func() bool { return f.rcv.distinct() == 1 })
	f.rcv.check([]string{next})
}

func first(ds []webhooks.Delivery) webhooks.Delivery {
	if len(ds) == 0 {
		return webhooks.Delivery{}
	}
	return ds[0]
}

// pendingOf is how many entries the webhook's group holds pending for consumer ("" any).
func pendingOf(t *testing.T, f *fixture, consumer string) int64 {
	t.Helper()
	c := f.s.Client
	key := f.st.streamKey(f.st.Hasher.TenantTag("acme"))
	cmd := c.B().Xpending().Key(key).Group(f.w.ID).Start("-").End("+").Count(10000).Build()
	if consumer != "" {
		cmd = c.B().Xpending().Key(key).Group(f.w.ID).Start("-").End("+").Count(10000).Consumer(consumer).Build()
	}
	arr, err := c.Do(context.Background(), cmd).ToArray()
	if err != nil {
		t.Fatal(err)
	}
	return int64(len(arr))
}

func wantNoPending(t *testing.T, f *fixture) {
	t.Helper()
	eventually(t, 5*time.Second, "no entry left pending", func() bool { return pendingOf(t, f, "") == 0 })
}

// TestWebhookKeysAudited: after creates, deliveries, a ping's record and a delete, every key
// under the test's prefix has a TTL and matches a pattern docs/KEYS.md declares, within bounds.
func TestWebhookKeysAudited(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		f := newFixture(t, s, prefix)
		ids := f.emitMany(5, 2)
		f.deliverer(f.st, "g1", webhooks.DeliverOptions{})
		eventually(t, 20*time.Second, "every event delivered", func() bool { return f.rcv.distinct() >= len(ids) })
		ctx := context.Background()
		if err := f.st.Record(ctx, "acme", f.w.ID, webhooks.Delivery{MessageID: "ping_1", EventType: string(webhooks.PingType), Status: webhooks.StatusDelivered, Attempts: 1}); err != nil {
			t.Fatal(err)
		}
		gone, err := f.st.Create(ctx, &webhooks.Webhook{ID: webhooks.NewID(), Tenant: "acme", URL: "https://x.example/h", Events: []string{"*"}}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.st.Delete(ctx, "acme", gone.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.Get(ctx, "acme", gone.ID); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("deleted webhook: %v", err)
		}
		storetest.RequireTTLs(t, s, prefix)
		auditKeys(t, s, prefix)
	})
}

// auditKeys runs the keyspace audit (docs/KEYS.md's declarations) over the test's keys.
func auditKeys(t *testing.T, s *store.Store, prefix string) {
	t.Helper()
	doc, err := os.Open("../../../docs/KEYS.md")
	if err != nil {
		t.Fatal(err)
	}
	defer doc.Close()
	decls, err := keyaudit.ParseDecls(doc)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := (&keyaudit.Auditor{Client: s.Client, Decls: decls, Match: prefix + ":*"}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range rep.Violations {
		t.Errorf("keyaudit: %s", v)
	}
	if rep.Keys == 0 {
		t.Fatal("the audit saw no key")
	}
}
