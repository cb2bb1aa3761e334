package telemetry

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// ObserveCacheStats registers, on m, the two instruments a client-side-cache read path
// exports: <name>_lookups (an observable counter by result hit/miss) and <name>_hit_ratio (an
// observable gauge, hits over lookups since start, absent before the first lookup). stats is
// read at collection, so the hot path only bumps its own atomics. what names the reads in the
// descriptions ("Token check reads").
func ObserveCacheStats(m metric.Meter, name, what string, stats func() (hits, misses int64)) error {
	lookups, err := m.Int64ObservableCounter(name+"_lookups",
		metric.WithDescription(what+" by client-side cache result (hit, miss)."))
	if err != nil {
		return err
	}
	ratio, err := m.Float64ObservableGauge(name+"_hit_ratio",
		metric.WithDescription("Share of "+lowerFirst(what)+" served from the client-side cache since start."))
	if err != nil {
		return err
	}
	hit := metric.WithAttributes(attribute.String("result", "hit"))
	miss := metric.WithAttributes(attribute.String("result", "miss"))
	if _, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		h, ms := stats()
		o.ObserveInt64(lookups, h, hit)
		o.ObserveInt64(lookups, ms, miss)
		if h+ms > 0 {
			o.ObserveFloat64(ratio, float64(h)/float64(h+ms))
		}
		return nil
	}, lookups, ratio); err != nil {
		return fmt.Errorf("%s callback: %w", name, err)
	}
	return nil
}

func lowerFirst(s string) string {
	if s != "" && s[0] >= 'A' && s[0] <= 'Z' {
		return string(s[0]+'a'-'A') + s[1:]
	}
	return s
}
