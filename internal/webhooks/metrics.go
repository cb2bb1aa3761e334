package webhooks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// The deliverer's metrics, on the operator's /metrics (Prometheus names in brackets):
//   - hashgate_webhook_delivery_attempts [_total], by result: every POST to a receiver —
//     success (2xx), http_error (another status), no_answer (refused, timed out, reset);
//   - hashgate_webhook_deliveries [_total], by outcome: what each attempt settled — delivered,
//     retried (another attempt is scheduled), failed (given up: the retry window passed, or the
//     event left the stream before it could be sent);
//   - hashgate_webhook_delivery_duration [_seconds], by result: one attempt, from the request
//     to the receiver's answer;
//   - hashgate_webhook_delivery_lag [_seconds]: from the event (Redis's time) to its delivery,
//     retries and the poll interval included.
// Attributes are fixed sets: no webhook id, URL or tenant (unbounded series).

// Attempt results and settled outcomes, the attribute values.
const (
	resultSuccess   = "success"
	resultHTTPError = "http_error"
	resultNoAnswer  = "no_answer"

	outcomeDelivered = "delivered"
	outcomeRetried   = "retried"
	outcomeFailed    = "failed"
)

// deliveryBuckets are the attempt and lag histograms' bounds in seconds: an attempt takes
// milliseconds up to the timeout (10 s by default); a lag spans retries over hours.
var deliveryBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600, 21600, 86400}

type metrics struct {
	attempts, settled metric.Int64Counter
	duration, lag     metric.Float64Histogram
	// Prebuilt attribute options per value, so an attempt allocates none.
	result  map[string][]metric.AddOption
	resultD map[string][]metric.RecordOption
	outcome map[string][]metric.AddOption
}

// newMetrics makes the instruments on m (a no-op meter when nil).
func newMetrics(m metric.Meter) (*metrics, error) {
	if m == nil {
		m = noop.NewMeterProvider().Meter("")
	}
	x := &metrics{result: map[string][]metric.AddOption{}, resultD: map[string][]metric.RecordOption{}, outcome: map[string][]metric.AddOption{}}
	var errs [4]error
	x.attempts, errs[0] = m.Int64Counter("hashgate_webhook_delivery_attempts",
		metric.WithDescription("Webhook delivery attempts (POSTs to a receiver), by result: success, http_error, no_answer."))
	x.settled, errs[1] = m.Int64Counter("hashgate_webhook_deliveries",
		metric.WithDescription("Webhook delivery outcomes per attempt settled: delivered, retried (another attempt scheduled), failed (given up)."))
	x.duration, errs[2] = m.Float64Histogram("hashgate_webhook_delivery_duration", metric.WithUnit("s"),
		metric.WithDescription("One webhook delivery attempt, from the request to the receiver's answer, by result."),
		metric.WithExplicitBucketBoundaries(deliveryBuckets...))
	x.lag, errs[3] = m.Float64Histogram("hashgate_webhook_delivery_lag", metric.WithUnit("s"),
		metric.WithDescription("From an event (Redis time) to its delivery to a webhook, retries included."),
		metric.WithExplicitBucketBoundaries(deliveryBuckets...))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, fmt.Errorf("webhooks: metrics: %w", err)
	}
	for _, r := range []string{resultSuccess, resultHTTPError, resultNoAnswer} {
		set := attribute.NewSet(attribute.String("result", r))
		x.result[r], x.resultD[r] = []metric.AddOption{metric.WithAttributeSet(set)}, []metric.RecordOption{metric.WithAttributeSet(set)}
	}
	for _, o := range []string{outcomeDelivered, outcomeRetried, outcomeFailed} {
		x.outcome[o] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", o)))}
	}
	return x, nil
}

// attempted records one POST and how long it took.
func (x *metrics) attempted(ctx context.Context, r result, took time.Duration) {
	res := resultSuccess
	switch {
	case r.status == 0:
		res = resultNoAnswer
	case !r.ok():
		res = resultHTTPError
	}
	x.attempts.Add(ctx, 1, x.result[res]...)
	x.duration.Record(ctx, took.Seconds(), x.resultD[res]...)
}

// settledAs records what a settled attempt decided (a Delivery's Status); a delivery's lag
// runs from the event's time.
func (x *metrics) settledAs(ctx context.Context, status string, event time.Time) {
	o := outcomeFailed
	switch status {
	case StatusDelivered:
		o = outcomeDelivered
		x.lag.Record(ctx, time.Since(event).Seconds())
	case StatusPending:
		o = outcomeRetried
	}
	x.settled.Add(ctx, 1, x.outcome[o]...)
}
