package repo

import (
	"context"
	"maps"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// Metrics are the repository instruments every object type shares. A nil *Metrics is valid
// and records nothing.
type Metrics struct {
	// reads are counted in atomics and observed at collection: a read is counted on every
	// authorization, and an atomic add costs a fraction of a synchronous counter's. The
	// counters are found in a plain map replaced whole (under readsMu) when one is added: a
	// lookup in it costs less than a sync.Map's, and the set is a few outcomes per object.
	reads       atomic.Pointer[map[readKey]*atomic.Int64]
	readsMu     sync.Mutex
	payload     metric.Int64Histogram
	scriptErrs  metric.Int64Counter
	transitions metric.Int64Counter
	events      metric.Int64Counter
	size        atomic.Int64
	sets        sync.Map // attrKey → metric.MeasurementOption
	payloadOpts sync.Map // object type → []metric.RecordOption (Payload's, one per type)
}

// attrKey names one attribute combination: up to three (name, value) pairs.
type attrKey struct{ k1, v1, k2, v2, k3, v3 string }

// readKey names one read counter: the key hashes two strings, not attrKey's six (a read is
// counted on every authorization).
type readKey struct {
	obj string
	o   Outcome
}

// maxAttrSets bounds the attribute sets kept. Every attribute value the repository records is
// a fixed name (object types, outcomes, events, scripts), so the bound is never reached in
// practice; past it, sets are built per call instead of kept.
const maxAttrSets = 4096

// attrs returns the measurement option for the attributes in k, built once: an attribute set
// per call (a sort and a few allocations) costs more than the count it labels on the hot path.
func (x *Metrics) attrs(k attrKey) metric.MeasurementOption {
	if o, ok := x.sets.Load(k); ok {
		return o.(metric.MeasurementOption)
	}
	kv := make([]attribute.KeyValue, 0, 3)
	for _, p := range [][2]string{{k.k1, k.v1}, {k.k2, k.v2}, {k.k3, k.v3}} {
		if p[0] != "" {
			kv = append(kv, attribute.String(p[0], p[1]))
		}
	}
	o := metric.WithAttributeSet(attribute.NewSet(kv...))
	if x.size.Add(1) <= maxAttrSets {
		x.sets.Store(k, o)
	}
	return o
}

// NewMetrics creates the instruments on m (a no-op meter when nil).
func NewMetrics(m metric.Meter) *Metrics {
	if m == nil {
		m = noop.NewMeterProvider().Meter("repo")
	}
	x := &Metrics{}
	x.reads.Store(&map[readKey]*atomic.Int64{})
	if reads, err := m.Int64ObservableCounter("hashgate_repo_reads", metric.WithDescription("Object reads by type and outcome (found, missing, corrupt, old_schema, expired_challenge).")); err == nil {
		_, _ = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
			for r, n := range *x.reads.Load() {
				o.ObserveInt64(reads, n.Load(), x.attrs(attrKey{k1: "object", v1: r.obj, k2: "outcome", v2: string(r.o)}))
			}
			return nil
		}, reads)
	}
	x.payload, _ = m.Int64Histogram("hashgate_repo_payload_bytes", metric.WithUnit("By"),
		metric.WithDescription("Bytes of hash payload read per object."),
		metric.WithExplicitBucketBoundaries(64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384))
	x.scriptErrs, _ = m.Int64Counter("hashgate_repo_script_errors", metric.WithDescription("Lua transition errors by script."))
	x.transitions, _ = m.Int64Counter("hashgate_repo_transitions", metric.WithDescription("State transitions by object, transition and outcome."))
	x.events, _ = m.Int64Counter("hashgate_repo_events", metric.WithDescription("Repository events by object and event (ttl_refresh, cas_conflict, idempotent_replay, ...)."))
	return x
}

// Read counts one read of objType with its outcome.
func (x *Metrics) Read(ctx context.Context, objType string, o Outcome) {
	if x == nil {
		return
	}
	k := readKey{objType, o}
	c, ok := (*x.reads.Load())[k]
	if !ok {
		c = x.readCounter(k)
	}
	c.Add(1)
}

// readCounter is k's counter, added if there is none.
func (x *Metrics) readCounter(k readKey) *atomic.Int64 {
	x.readsMu.Lock()
	defer x.readsMu.Unlock()
	if c, ok := (*x.reads.Load())[k]; ok {
		return c
	}
	next := maps.Clone(*x.reads.Load())
	c := new(atomic.Int64)
	next[k] = c
	x.reads.Store(&next)
	return c
}

// Payload records the bytes of one object read.
func (x *Metrics) Payload(ctx context.Context, objType string, n int) {
	if x == nil {
		return
	}
	opts, ok := x.payloadOpts.Load(objType)
	if !ok { // kept under the bound of the attribute sets (object types are a few constants)
		opts = []metric.RecordOption{x.attrs(attrKey{k1: "object", v1: objType})}
		if x.size.Add(1) <= maxAttrSets {
			opts, _ = x.payloadOpts.LoadOrStore(objType, opts)
		}
	}
	x.payload.Record(ctx, int64(n), opts.([]metric.RecordOption)...)
}

// ScriptError counts an unexpected error from a script.
func (x *Metrics) ScriptError(ctx context.Context, scriptName string) {
	if x == nil {
		return
	}
	x.scriptErrs.Add(ctx, 1, x.attrs(attrKey{k1: "script", v1: scriptName}))
}

// Transition counts a state transition attempt.
func (x *Metrics) Transition(ctx context.Context, objType, transition, outcome string) {
	if x == nil {
		return
	}
	x.transitions.Add(ctx, 1, x.attrs(attrKey{k1: "object", v1: objType, k2: "transition", v2: transition, k3: "outcome", v3: outcome}))
}

// Event counts a named repository event.
func (x *Metrics) Event(ctx context.Context, objType, event string) {
	if x == nil {
		return
	}
	x.events.Add(ctx, 1, x.attrs(attrKey{k1: "object", v1: objType, k2: "event", v2: event}))
}
