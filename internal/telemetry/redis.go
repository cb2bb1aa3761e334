package telemetry

import (
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
	if t != nil && t.commandLabels {
		opts = append(opts, rueidisotel.WithOperationMetricAttr())
	}
	return opts
}

// NewRedisClient creates a rueidis client instrumented with [RedisOptions].
func NewRedisClient(opt rueidis.ClientOption, t *Telemetry) (rueidis.Client, error) {
	return rueidisotel.NewClient(opt, RedisOptions(t)...)
}

// RedisClient is [NewRedisClient] with t, in the shape of store.Options.NewClient, so the
// composition root passes t.RedisClient without naming rueidis (a nil t is fine).
func (t *Telemetry) RedisClient(opt rueidis.ClientOption) (rueidis.Client, error) {
	return NewRedisClient(opt, t)
}
