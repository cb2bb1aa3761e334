// Package redistrace builds the gateway's Redis client instrumented with OpenTelemetry
// (rueidisotel) from a [telemetry.Telemetry]. It is apart from internal/telemetry so the
// packages that only record metrics (the services) do not depend on the Redis client; whoever
// opens the store (cmd/gateway, tests) uses it.
package redistrace

import (
	"context"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidisotel"

	"github.com/hashgate/hashgate/internal/telemetry"
)

// Options returns the rueidisotel options wiring a client to t.
//
// Spans are named after the command ("SET"; "SET HSET" for pipelines) and
// carry db.system, db.operation (the command name), db.stmt_size and
// server.address/port. rueidisotel sets no db.statement unless
// rueidisotel.WithDBStatement is given, and it is deliberately not given here:
// command arguments (keys, values, API-key hashes) must never reach a span.
// With telemetry.Config.RedisCommandLabels, command duration and error metrics get an
// "operation" attribute holding the command name(s).
func Options(t *telemetry.Telemetry) []rueidisotel.Option {
	opts := []rueidisotel.Option{
		rueidisotel.WithTracerProvider(t.Spans()),
		rueidisotel.WithMeterProvider(t.Meters()),
	}
	switch {
	case t.RedisCommandLabels():
		opts = append(opts, rueidisotel.WithOperationMetricAttr())
	case !t.Recording():
		// The operation name goes only to span names (no span is recorded) and to the
		// "operation" attribute (off): rueidisotel would build "HMGET HPTTL EXISTS" per pipeline
		// for nothing.
		opts = append(opts, rueidisotel.WithOpNameResolver(unusedOpName{}))
	}
	return opts
}

// unusedOpName is the operation-name resolver of a client whose operation names nobody reads.
type unusedOpName struct{}

func (unusedOpName) OpName(context.Context, rueidis.Completed) string                    { return "" }
func (unusedOpName) MultiOpName(context.Context, rueidis.Commands) string                { return "" }
func (unusedOpName) MultiCacheableOpName(context.Context, []rueidis.CacheableTTL) string { return "" }

// NewClient creates a rueidis client instrumented with [Options] (a nil t is fine).
func NewClient(opt rueidis.ClientOption, t *telemetry.Telemetry) (rueidis.Client, error) {
	return rueidisotel.NewClient(opt, Options(t)...)
}

// For is [NewClient] with t, in the shape of store.Options.NewClient, so the composition root
// sets it without naming rueidis (a nil t is fine).
func For(t *telemetry.Telemetry) func(rueidis.ClientOption) (rueidis.Client, error) {
	return func(opt rueidis.ClientOption) (rueidis.Client, error) { return NewClient(opt, t) }
}
