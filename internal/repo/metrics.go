package repo

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// Metrics are the repository instruments every object type shares. A nil *Metrics is valid
// and records nothing.
type Metrics struct {
	reads       metric.Int64Counter
	payload     metric.Int64Histogram
	scriptErrs  metric.Int64Counter
	transitions metric.Int64Counter
	events      metric.Int64Counter
}

// NewMetrics creates the instruments on m (a no-op meter when nil).
func NewMetrics(m metric.Meter) *Metrics {
	if m == nil {
		m = noop.NewMeterProvider().Meter("repo")
	}
	x := &Metrics{}
	x.reads, _ = m.Int64Counter("hashgate_repo_reads", metric.WithDescription("Object reads by type and outcome (found, missing, corrupt, old_schema, expired_challenge)."))
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
	x.reads.Add(ctx, 1, metric.WithAttributes(attribute.String("object", objType), attribute.String("outcome", string(o))))
}

// Payload records the bytes of one object read.
func (x *Metrics) Payload(ctx context.Context, objType string, n int) {
	if x == nil {
		return
	}
	x.payload.Record(ctx, int64(n), metric.WithAttributes(attribute.String("object", objType)))
}

// ScriptError counts an unexpected error from a script.
func (x *Metrics) ScriptError(ctx context.Context, scriptName string) {
	if x == nil {
		return
	}
	x.scriptErrs.Add(ctx, 1, metric.WithAttributes(attribute.String("script", scriptName)))
}

// Transition counts a state transition attempt.
func (x *Metrics) Transition(ctx context.Context, objType, transition, outcome string) {
	if x == nil {
		return
	}
	x.transitions.Add(ctx, 1, metric.WithAttributes(attribute.String("object", objType),
		attribute.String("transition", transition), attribute.String("outcome", outcome)))
}

// Event counts a named repository event.
func (x *Metrics) Event(ctx context.Context, objType, event string) {
	if x == nil {
		return
	}
	x.events.Add(ctx, 1, metric.WithAttributes(attribute.String("object", objType), attribute.String("event", event)))
}
