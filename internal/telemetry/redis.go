package telemetry

import (
	"context"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidisotel"
)

// RedisOptions returns the rueidisotel options wiring a client to t.
//
// Spans are named after the command ("SET"; "SET HSET" for pipelines) and
// carry db.system, db.operation (the command name), db.stmt_size and
// server.address/port. rueidisotel sets no db.statement unless
// rueidisotel.WithDBStatement is given, and it is deliberately not given here:
// command arguments (keys, values, API-key hashes) must never reach a span.
// With Config.RedisCommandLabels, command duration and error metrics get an
// "operation" attribute holding the command name(s).
func RedisOptions(t *Telemetry) []rueidisotel.Option {
	opts := []rueidisotel.Option{
		rueidisotel.WithTracerProvider(t.spanProvider()),
		rueidisotel.WithMeterProvider(t.meterProvider()),
	}
	switch {
	case t != nil && t.commandLabels:
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

// NewRedisClient creates a rueidis client instrumented with [RedisOptions].
func NewRedisClient(opt rueidis.ClientOption, t *Telemetry) (rueidis.Client, error) {
	return rueidisotel.NewClient(opt, RedisOptions(t)...)
}

// RedisClient is [NewRedisClient] with t, in the shape of store.Options.NewClient, so the
// composition root passes t.RedisClient without naming rueidis (a nil t is fine).
func (t *Telemetry) RedisClient(opt rueidis.ClientOption) (rueidis.Client, error) {
	return NewRedisClient(opt, t)
}
