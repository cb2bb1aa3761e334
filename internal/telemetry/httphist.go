package telemetry

import (
	"context"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// The HTTP server duration histogram is aggregated here, not by the SDK, and handed to the
// meter provider's reader as an external producer (sdkmetric.Producer): a synchronous SDK
// histogram's Record costs ~300 ns a request (it re-deduplicates the attribute set, looks the
// series up in a sync.Map, builds a record config), this one a few atomics on a series the
// middleware already holds. What it produces is what the SDK's cumulative explicit-bucket
// histogram produces for the same measurements, with its defaults as Setup's provider uses
// them (no views):
//   - same name, unit, description and bucket bounds, under the same instrumentation scope;
//   - cumulative temporality; per data point the bucket counts, count, sum, min and max;
//     start time the instrument's creation (or each series' first measurement under
//     OTEL_GO_X_PER_SERIES_START_TIMESTAMPS=true), as the SDK does;
//   - exemplars: the SDK's default reservoir for explicit buckets
//     (exemplar.HistogramReservoir, one per bucket) behind the provider's exemplar filter,
//     OTEL_METRICS_EXEMPLAR_FILTER (trace_based by default; always_off keeps no reservoir);
//   - a consistent snapshot per collection (count equals the buckets' total, sum and min/max
//     of the same observations): observations go to a hot half while a collection reads the
//     cold one, as the SDK's hot/cold points do;
//   - the SDK's cardinality limit (OTEL_GO_X_CARDINALITY_LIMIT, 2,000 by default): the series
//     past it share the otel.metric.overflow series (httpSeries applies it).
//
// TestDurationHistogramMatchesSDK records the same measurements into both and compares the
// collected data.

// durationHist is one series of http.server.request.duration.
type durationHist struct {
	// countAndHot: bit 63 selects the hot half; the low 63 bits count the observations begun.
	countAndHot atomic.Uint64
	halves      [2]histHalf
	collectMu   sync.Mutex // one collection at a time (it swaps the halves)
	res         exemplar.Reservoir
	start       time.Time // first measurement, for per-series start timestamps
}

// nBuckets is len(httpDurationBuckets)+1: the last bucket is (last bound, +Inf).
const nBuckets = 15

type histHalf struct {
	buckets [nBuckets]atomic.Uint64
	done    atomic.Uint64 // observations completed in this half
	sum     floatCounter
	min     atomic.Uint64 // float64 bits, meaningful when set
	max     atomic.Uint64
	set     atomic.Bool
	mu      sync.Mutex // first min/max only
}

const hotBit = uint64(1) << 63

// bucketOf is the index of the first bound ≥ v (sort.SearchFloat64s' answer, as the SDK
// computes it; a linear scan is quicker over 14 bounds when most requests fall in the first).
func bucketOf(v float64) int {
	for i, b := range httpDurationBuckets {
		if v <= b {
			return i
		}
	}
	return len(httpDurationBuckets)
}

func (h *durationHist) record(ctx context.Context, v float64, f exemplar.Filter) {
	n := h.countAndHot.Add(1)
	half := &h.halves[n>>63]
	half.buckets[bucketOf(v)].Add(1)
	half.sum.add(v)
	half.minMax(v)
	half.done.Add(1)
	if h.res != nil && f(ctx) {
		h.res.Offer(ctx, time.Now(), exemplar.NewValue(v), nil)
	}
}

// floatCounter adds as the SDK's atomicCounter does (whole part and fraction apart, so the
// sums come out bit for bit the same).
type floatCounter struct {
	frac  atomic.Uint64 // float64 bits
	whole atomic.Int64
}

func (n *floatCounter) add(v float64) {
	if i := int64(v); float64(i) == v {
		n.whole.Add(i)
		return
	}
	for {
		old := n.frac.Load()
		if n.frac.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

func (n *floatCounter) load() float64 {
	return math.Float64frombits(n.frac.Load()) + float64(n.whole.Load())
}

func (n *floatCounter) reset() {
	n.frac.Store(0)
	n.whole.Store(0)
}

func (h *histHalf) minMax(v float64) {
	if !h.set.Load() {
		h.mu.Lock()
		if !h.set.Load() {
			h.min.Store(math.Float64bits(v))
			h.max.Store(math.Float64bits(v))
			h.set.Store(true)
			h.mu.Unlock()
			return
		}
		h.mu.Unlock()
	}
	for old := h.min.Load(); v < math.Float64frombits(old); old = h.min.Load() {
		if h.min.CompareAndSwap(old, math.Float64bits(v)) {
			break
		}
	}
	for old := h.max.Load(); v > math.Float64frombits(old); old = h.max.Load() {
		if h.max.CompareAndSwap(old, math.Float64bits(v)) {
			break
		}
	}
}

// snapshot fills dp with every observation completed so far (cumulative).
func (h *durationHist) snapshot(dp *metricdata.HistogramDataPoint[float64]) {
	h.collectMu.Lock()
	defer h.collectMu.Unlock()
	n := h.countAndHot.Add(hotBit) // the other half takes new observations from here
	count := n &^ hotBit
	cold, hot := &h.halves[(n>>63)^1], &h.halves[n>>63]
	for cold.done.Load() != count { // observations begun in the cold half, still under way
		runtime.Gosched()
	}
	dp.Count = count
	dp.BucketCounts = make([]uint64, nBuckets)
	for i := range cold.buckets {
		dp.BucketCounts[i] = cold.buckets[i].Load()
	}
	dp.Sum = cold.sum.load()
	dp.Min, dp.Max = metricdata.Extrema[float64]{}, metricdata.Extrema[float64]{}
	set := cold.set.Load()
	lo, hi := math.Float64frombits(cold.min.Load()), math.Float64frombits(cold.max.Load())
	if set {
		dp.Min, dp.Max = metricdata.NewExtrema(lo), metricdata.NewExtrema(hi)
	}
	// The cold half's totals join the hot one, and it starts again from zero.
	for i := range cold.buckets {
		hot.buckets[i].Add(cold.buckets[i].Swap(0))
	}
	hot.sum.add(dp.Sum)
	cold.sum.reset()
	if set {
		hot.minMax(lo)
		hot.minMax(hi)
		cold.set.Store(false)
	}
	hot.done.Add(cold.done.Swap(0))
}

// durationProducer produces http.server.request.duration from every series of an
// httpSeries, as the SDK's histogram would (see the top of this file).
type durationProducer struct{ series *httpSeries }

var _ sdkmetric.Producer = (*durationProducer)(nil)

func (p *durationProducer) Produce(context.Context) ([]metricdata.ScopeMetrics, error) {
	now := time.Now()
	perSeriesStart := strings.EqualFold(os.Getenv("OTEL_GO_X_PER_SERIES_START_TIMESTAMPS"), "true")
	var dps []metricdata.HistogramDataPoint[float64]
	a := p.series
	bounds := slices.Clone(a.bounds) // the SDK's copy per collection: readers may not touch ours
	a.each(func(s *series) {
		if s.d.countAndHot.Load()&^hotBit == 0 {
			return // counted by the counter's first observation, not yet recorded here
		}
		dp := metricdata.HistogramDataPoint[float64]{Attributes: s.attrs, StartTime: a.start, Time: now, Bounds: bounds}
		if perSeriesStart {
			dp.StartTime = s.d.start
		}
		s.d.snapshot(&dp)
		if s.d.res != nil {
			dp.Exemplars = collectExemplars(s.d.res)
		}
		dps = append(dps, dp)
	})
	if len(dps) == 0 {
		return nil, nil
	}
	return []metricdata.ScopeMetrics{{
		Scope: instrumentation.Scope{Name: scopeName},
		Metrics: []metricdata.Metrics{{
			Name:        durationName,
			Description: durationDescription,
			Unit:        "s",
			Data: metricdata.Histogram[float64]{
				Temporality: metricdata.CumulativeTemporality,
				DataPoints:  dps,
			},
		}},
	}}, nil
}

func collectExemplars(r exemplar.Reservoir) []metricdata.Exemplar[float64] {
	var held []exemplar.Exemplar
	r.Collect(&held)
	if len(held) == 0 {
		return nil
	}
	out := make([]metricdata.Exemplar[float64], len(held))
	for i, e := range held {
		out[i] = metricdata.Exemplar[float64]{
			FilteredAttributes: e.FilteredAttributes,
			Time:               e.Time,
			SpanID:             e.SpanID,
			TraceID:            e.TraceID,
			Value:              e.Value.Float64(),
		}
	}
	return out
}

// exemplarFilterFromEnv is the meter provider's exemplar filter as the SDK chooses it
// (OTEL_METRICS_EXEMPLAR_FILTER; trace_based when unset or unknown), and whether it is
// always_off (then no reservoir is kept, as the SDK drops exemplars).
func exemplarFilterFromEnv() (f exemplar.Filter, off bool) {
	switch strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_METRICS_EXEMPLAR_FILTER"))) {
	case "always_on":
		return exemplar.AlwaysOnFilter, false
	case "always_off":
		return exemplar.AlwaysOffFilter, true
	default:
		return exemplar.TraceBasedFilter, false
	}
}

// cardinalityLimitFromEnv is the SDK's cardinality limit as the meter provider reads it
// (OTEL_GO_X_CARDINALITY_LIMIT, 2,000 when unset or invalid; ≤ 0 means none).
func cardinalityLimitFromEnv() int {
	v := strings.TrimSpace(os.Getenv("OTEL_GO_X_CARDINALITY_LIMIT"))
	if v == "" {
		return 2000
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		otel.Handle(err)
		return 2000
	}
	return n
}

// init readies a new series' histogram: with the SDK's default reservoir unless exemplars
// are off.
func (h *durationHist) init(bounds []float64, off bool) {
	h.start = time.Now()
	if !off {
		h.res = exemplar.NewHistogramReservoir(bounds)
	}
}

func sortedBounds() []float64 {
	b := slices.Clone(httpDurationBuckets)
	slices.Sort(b)
	return b
}
