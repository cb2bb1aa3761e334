package sessionstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/ratelimit"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// sessEnv is one session repository under test with its instruments.
type sessEnv struct {
	storedForm // the session as the layout under test stores it
	t          testing.TB
	s          *store.Store
	r          *Sessions
	prefix     string
	reader     *sdkmetric.ManualReader
	logs       *sessLogBuffer
	count      *testredis.Recorder // every command sent, kept
}

type sessLogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *sessLogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *sessLogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func sessDefaultOptions() SessionOptions {
	return SessionOptions{RefreshFraction: 0.25, MaxPerUser: 50, Outbox: events.SessionEventsAll,
		MFA: ratelimit.Policy{Name: MFAPolicyName, Limit: 5, Window: 10 * time.Minute}}
}

func newSessEnv(t testing.TB, s *store.Store, prefix string, tweak func(*SessionOptions)) *sessEnv {
	t.Helper()
	ctx := context.Background()
	if err := s.LoadScripts(ctx, repo.ScriptBodies()...); err != nil {
		t.Fatal(err)
	}
	e := &sessEnv{t: t, prefix: prefix, reader: sdkmetric.NewManualReader(), logs: &sessLogBuffer{}}
	e.count = testredis.NewRecorder(s.Client)
	counted := *s
	counted.Client = e.count
	e.s = &counted
	o := sessDefaultOptions()
	o.Metrics = repo.NewMetrics(sdkmetric.NewMeterProvider(sdkmetric.WithReader(e.reader)).Meter("test"))
	o.Logger = slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if Hosts(s.Caps, LayoutPerUser) != nil {
		o.Layout = LayoutPerSession
	}
	if tweak != nil {
		tweak(&o)
	}
	r, err := NewSessions(e.s, repo.Keys{Prefix: prefix}, o)
	if err != nil {
		t.Fatal(err)
	}
	e.r = r
	e.storedForm = newStoredForm(e)
	return e
}

// sessPart is a random id part of the production length.
func sessPart(t testing.TB) string { return sessRand(t, 14)[:session.PartLen] }

func sessRand(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func sessRef(t testing.TB, tag string) session.Ref {
	if tag == "" {
		tag = sessRand(t, 9)
	}
	return session.Ref{Tag: tag, Part: sessPart(t)}
}

// create makes a session for user of tenant under tag; it returns its ref.
func (e *sessEnv) create(tag, tenant, user string, idle, abs time.Duration) session.Ref {
	e.t.Helper()
	ref := sessRef(e.t, tag)
	_, err := e.r.Create(context.Background(), session.Record{VerifierMAC: testMAC, Ref: ref, UserID: user, TenantID: tenant,
		Status: session.Active, AuthLevel: session.LevelBasic, DeviceLabel: "laptop", IPHash: sessRand(e.t, 16),
		UserAgentHash: sessRand(e.t, 16), Idle: idle, Absolute: abs})
	if err != nil {
		e.t.Fatalf("create: %v", err)
	}
	return ref
}

func (e *sessEnv) do(cmd rueidis.Completed) rueidis.RedisResult {
	return e.s.Client.Do(context.Background(), cmd)
}

func (e *sessEnv) pttl(key string) int64 {
	e.t.Helper()
	n, err := e.do(e.s.Client.B().Pttl().Key(key).Build()).AsInt64()
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

func (e *sessEnv) hget(key, field string) string {
	e.t.Helper()
	v, err := e.do(e.s.Client.B().Hget().Key(key).Field(field).Build()).ToString()
	if err != nil && !rueidis.IsRedisNil(err) {
		e.t.Fatal(err)
	}
	return v
}

func (e *sessEnv) serverMs() int64 {
	e.t.Helper()
	t, err := e.do(e.s.Client.B().Time().Build()).AsStrSlice()
	if err != nil || len(t) != 2 {
		e.t.Fatal(err, t)
	}
	sec, _ := strconv.ParseInt(t[0], 10, 64)
	usec, _ := strconv.ParseInt(t[1], 10, 64)
	return sec*1000 + usec/1000
}

// keys lists every key under the test prefix on every node.
func (e *sessEnv) keys() []string {
	e.t.Helper()
	ctx := context.Background()
	var out []string
	for _, n := range e.s.Client.Nodes() {
		var cursor uint64
		for {
			se, err := n.Do(ctx, n.B().Scan().Cursor(cursor).Match(e.prefix+":*").Count(500).Build()).AsScanEntry()
			if err != nil {
				e.t.Fatal(err)
			}
			out = append(out, se.Elements...)
			if cursor = se.Cursor; cursor == 0 {
				break
			}
		}
	}
	return out
}

// sessionKeys is keys without the users' event outbox streams and the user hashes that hold
// nothing but pending events (the relay's to empty, tested in internal/repo/eventstore): the
// keys of the sessions themselves.
func (e *sessEnv) sessionKeys() []string {
	e.t.Helper()
	outboxes := e.r.keys.EventOutbox("")
	outboxes = outboxes[:len(outboxes)-1]
	return slices.DeleteFunc(e.keys(), func(k string) bool { return strings.HasPrefix(k, outboxes) || e.eventsOnly(k) })
}

// eventsOnly is whether k is a user's hash (per-user layout) that holds no session field, only
// the user's fields and pending events.
func (e *sessEnv) eventsOnly(k string) bool {
	e.t.Helper()
	if typ, _ := e.do(e.s.Client.B().Type().Key(k).Build()).ToString(); typ != "hash" {
		return false
	}
	names, err := e.do(e.s.Client.B().Hkeys().Key(k).Build()).AsStrSlice()
	if err != nil {
		e.t.Fatal(err)
	}
	pending := false
	for _, n := range names {
		if strings.Contains(n, ":") {
			return false
		}
		pending = pending || strings.HasPrefix(n, "ev.")
	}
	return pending
}

// everyKeyHasTTL fails when a key under the prefix has no TTL.
func (e *sessEnv) everyKeyHasTTL() {
	e.t.Helper()
	for _, k := range e.keys() {
		if p := e.pttl(k); p <= 0 && p != -2 {
			e.t.Errorf("key %s has no TTL (%d)", k, p)
		}
	}
}

// metric sums the counter name's points whose attributes include want.
func (e *sessEnv) metric(name string, want ...attribute.KeyValue) int64 {
	e.t.Helper()
	var rm metricdata.ResourceMetrics
	if err := e.reader.Collect(context.Background(), &rm); err != nil {
		e.t.Fatal(err)
	}
	var sum int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			data, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				continue
			}
			for _, dp := range data.DataPoints {
				match := true
				for _, kv := range want {
					if v, ok := dp.Attributes.Value(kv.Key); !ok || v != kv.Value {
						match = false
					}
				}
				if match {
					sum += dp.Value
				}
			}
		}
	}
	return sum
}

// histogram returns the observation count and sum of an int64 histogram for the session object.
func (e *sessEnv) histogram(name string) (count uint64, sum int64) {
	e.t.Helper()
	var rm metricdata.ResourceMetrics
	if err := e.reader.Collect(context.Background(), &rm); err != nil {
		e.t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			data, ok := m.Data.(metricdata.Histogram[int64])
			if m.Name != name || !ok {
				continue
			}
			for _, dp := range data.DataPoints {
				if v, ok := dp.Attributes.Value("object"); ok && v.AsString() == sessObject {
					count += dp.Count
					sum += dp.Sum
				}
			}
		}
	}
	return count, sum
}

func sessAttr(k, v string) attribute.KeyValue { return attribute.String(k, v) }

// layoutIn is the layout r keeps sessions in, for the tests of the layout's choice.
func (r *Sessions) layoutIn() SessionLayout {
	if _, ok := r.layout.(perUserLayout); ok {
		return LayoutPerUser
	}
	return LayoutPerSession
}

// testMAC is the verifier MAC the tests' sessions are created with (the store compares MACs,
// it does not make them: internal/sessions does).
const testMAC = "dGVzdC12ZXJpZmllci1tYWM"

// macOf is a verifier MAC made of name (distinct names, distinct MACs).
func macOf(name string) string { return base64.RawURLEncoding.EncodeToString([]byte("mac-" + name)) }
