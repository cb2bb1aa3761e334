package webhookstore

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/repo/storetest"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/webhooks"
)

// receiver is a webhook endpoint on loopback that checks every request as the Standard Webhooks
// specification tells a consumer to (the signature over id.timestamp.body with the secret's
// base64-decoded bytes, compared in constant time; the timestamp within 5 minutes), and
// accepts each webhook-id once.
type receiver struct {
	t      *testing.T
	secret []byte
	srv    *httptest.Server

	mu       sync.Mutex
	failing  bool               // answer 503 to everything
	flaky    int                // when > 0, answer 500 to every flaky-th request
	hang     chan struct{}      // when set, requests wait for it to close
	requests int                // every request that arrived
	accepted map[string]int     // webhook-id → times accepted (a receiver deduplicating counts 1)
	bySubj   map[string][]int64 // subject → sequence numbers, in acceptance order
	badSig   int
	arrived  chan string // each request's webhook-id, as it arrives
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{t: t, accepted: map[string]int{}, bySubj: map[string][]int64{}, arrived: make(chan string, 10000)}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

// verify is the specification's consumer check, written from the specification.
func verify(secret []byte, h http.Header, body []byte) bool {
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if id == "" || err != nil || sigs == "" {
		return false
	}
	if d := time.Since(time.Unix(sec, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return false
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(id + "." + ts + "." + string(body)))
	want := base64.StdEncoding.EncodeToString(m.Sum(nil))
	for _, s := range strings.Split(sigs, " ") {
		v, sig, ok := strings.Cut(s, ",")
		if ok && v == "v1" && hmac.Equal([]byte(sig), []byte(want)) {
			return true
		}
	}
	return false
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	id := req.Header.Get("webhook-id")
	r.mu.Lock()
	r.requests++
	hang, failing, secret := r.hang, r.failing || (r.flaky > 0 && r.requests%r.flaky == 0), r.secret
	r.mu.Unlock()
	r.arrived <- id
	if hang != nil {
		select {
		case <-hang:
		case <-req.Context().Done():
			return
		}
	}
	if failing {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !verify(secret, req.Header, body) {
		r.badSig++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	r.accepted[id]++
	if r.accepted[id] == 1 {
		var ev struct {
			Subject string `json:"subject"`
			Data    struct {
				Seq int64 `json:"seq"`
			} `json:"data"`
		}
		_ = json.Unmarshal(body, &ev)
		r.bySubj[ev.Subject] = append(r.bySubj[ev.Subject], ev.Data.Seq)
	}
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) set(f func(r *receiver)) {
	r.mu.Lock()
	f(r)
	r.mu.Unlock()
}

// distinct is how many webhook-ids were accepted.
func (r *receiver) distinct() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.accepted)
}

// check fails unless every id in ids was accepted, every signature verified, and each
// subject's events were accepted in the order written.
func (r *receiver) check(ids []string) {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.badSig > 0 {
		r.t.Errorf("%d requests with a signature the specification's check refuses", r.badSig)
	}
	for _, id := range ids {
		if r.accepted[id] == 0 {
			r.t.Errorf("event %s never delivered", id)
		}
	}
	for subj, seqs := range r.bySubj {
		for i := 1; i < len(seqs); i++ {
			if seqs[i] < seqs[i-1] {
				r.t.Errorf("subject %s: events accepted out of order: %v", subj, seqs)
				break
			}
		}
	}
}

// fixture is a tenant with one webhook to the receiver, a store and a writer of events in the
// format of the tenant's stream.
type fixture struct {
	t      *testing.T
	s      *store.Store
	prefix string
	st     *Store
	w      *webhooks.Webhook
	rcv    *receiver
	seq    int64
}

func newFixture(t *testing.T, s *store.Store, prefix string) *fixture {
	return newFixtureStream(t, s, prefix, true)
}

// newFixtureStream is newFixture; with streamFirst false the tenant has no stream yet when its
// webhook is created.
func newFixtureStream(t *testing.T, s *store.Store, prefix string, streamFirst bool) *fixture {
	t.Helper()
	f := &fixture{t: t, s: s, prefix: prefix, st: newTestStore(t, s, prefix), rcv: newReceiver(t)}
	if streamFirst {
		// A first event makes the stream, as the gateway's first change of the tenant would.
		f.emit("token.issued", "tok_first")
	}
	w, err := f.st.Create(context.Background(), &webhooks.Webhook{ID: webhooks.NewID(), Tenant: "acme",
		URL: f.rcv.srv.URL + "/hook", Events: []string{"*"}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	f.w = w
	f.rcv.secret = webhooks.Secret(storetest.Hasher(t), "acme", w.ID)
	return f
}

func newTestStore(t *testing.T, s *store.Store, prefix string) *Store {
	t.Helper()
	st, err := New(s, Options{Prefix: prefix, Hasher: storetest.Hasher(t), Metrics: repo.NewMetrics(nil)})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// emit appends an event to the tenant's stream with the fields the stores' event_append writes
// (internal/events' field names; with the stream's TTL), and returns its id.
func (f *fixture) emit(typ, subject string) string {
	f.t.Helper()
	f.seq++
	c := f.s.Client
	key := repo.Keys{Prefix: f.prefix}.Key("events", storetest.Hasher(f.t).TenantTag("acme"))
	data, _ := json.Marshal(map[string]int64{"seq": f.seq})
	id, err := c.Do(context.Background(), c.B().Xadd().Key(key).Id("*").FieldValue().
		FieldValue(events.FieldType, typ).FieldValue(events.FieldTime, strconv.FormatInt(time.Now().UnixMilli(), 10)).
		FieldValue(events.FieldTenant, "acme").FieldValue(events.FieldSubject, subject).FieldValue(events.FieldActor, "system").
		FieldValue(events.FieldData, string(data)).Build()).ToString()
	if err != nil {
		f.t.Fatal(err)
	}
	if err := c.Do(context.Background(), c.B().Pexpire().Key(key).Milliseconds(int64(time.Hour/time.Millisecond)).Build()).Error(); err != nil {
		f.t.Fatal(err)
	}
	return id
}

// emitMany writes n events over subjects, returning their ids.
func (f *fixture) emitMany(n, subjects int) []string {
	ids := make([]string, 0, n)
	for i := range n {
		ids = append(ids, f.emit("session.revoked", "s_"+strconv.Itoa(i%subjects)))
	}
	return ids
}

// deliverer runs a deliverer with fast test timings over st until the test ends or stop.
func (f *fixture) deliverer(st *Store, name string, o webhooks.DeliverOptions) (stop func()) {
	f.t.Helper()
	o.AllowPrivate, o.Consumer = true, name
	o.PollInterval = cmpOr(o.PollInterval, 50*time.Millisecond)
	o.RetryBase = cmpOr(o.RetryBase, 50*time.Millisecond)
	o.RetryMax = cmpOr(o.RetryMax, 200*time.Millisecond)
	o.Timeout = cmpOr(o.Timeout, 2*time.Second)
	d, err := webhooks.NewDeliverer(st, storetest.Hasher(f.t), o)
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	f.t.Cleanup(stop)
	return stop
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(within)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("after %v: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
