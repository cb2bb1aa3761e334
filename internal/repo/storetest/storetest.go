// Package storetest holds what the tests of several stores check the same way: every key has
// a TTL, a fixture hash written as a test needs it, a refusal's kind, a tenant quota under
// concurrent creates, the counters a store records. Only tests import it.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/store"
)

// Hasher is a fixed keyed hasher, so a test's tenant tags are the same on every run.
func Hasher(t testing.TB) *keyhash.Hasher {
	t.Helper()
	h, err := keyhash.New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// RequireTTLs scans every node for the keys under prefix, fails on any key without a TTL and
// returns how many keys it saw.
func RequireTTLs(t *testing.T, s *store.Store, prefix string) int {
	t.Helper()
	n := 0
	scan(t, s, prefix+":*", func(node rueidis.Client, k string) {
		ttl, err := node.Do(context.Background(), node.B().Pttl().Key(k).Build()).AsInt64()
		if err != nil {
			t.Fatalf("pttl %s: %v", k, err)
		}
		if ttl <= 0 {
			t.Errorf("key %s has no TTL (PTTL %d)", k, ttl)
		}
		n++
	})
	return n
}

// LiveKeys counts the keys matching pattern on every node whose name does not end in one of
// suffixes (an object's second keys: items, history).
func LiveKeys(t *testing.T, s *store.Store, pattern string, suffixes ...string) int {
	t.Helper()
	n := 0
	scan(t, s, pattern, func(_ rueidis.Client, k string) {
		for _, suffix := range suffixes {
			if strings.HasSuffix(k, suffix) {
				return
			}
		}
		n++
	})
	return n
}

// PTTL is a key's remaining TTL.
func PTTL(t *testing.T, s *store.Store, key string) time.Duration {
	t.Helper()
	n, err := s.Client.Do(context.Background(), s.Client.B().Pttl().Key(key).Build()).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	return time.Duration(n) * time.Millisecond
}

// ZCard is the member count of a sorted set.
func ZCard(t *testing.T, s *store.Store, key string) int {
	t.Helper()
	n, err := s.Client.Do(context.Background(), s.Client.B().Zcard().Key(key).Build()).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// HSet writes a fixture hash living an hour (a stored form older or more broken than the
// stores write).
func HSet(t *testing.T, s *store.Store, key string, m map[string]string) {
	t.Helper()
	ctx := context.Background()
	cmd := s.Client.B().Hset().Key(key).FieldValue()
	for k, v := range m {
		cmd = cmd.FieldValue(k, v)
	}
	if err := s.Client.Do(ctx, cmd.Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := s.Client.Do(ctx, s.Client.B().Pexpire().Key(key).Milliseconds(time.Hour.Milliseconds()).Build()).Error(); err != nil {
		t.Fatal(err)
	}
}

// WantKind fails unless err carries the refusal kind k.
func WantKind(t *testing.T, err error, k *apperr.Kind) {
	t.Helper()
	if !errors.Is(err, k) {
		t.Fatalf("err = %v, want %s", err, k.Slug)
	}
}

// WantQuota checks (safe from any goroutine) that err is the 429 quota-exceeded refusal naming
// quota and its limit, with a Retry-After.
func WantQuota(t *testing.T, err error, quota string, limit int) {
	t.Helper()
	e, ok := apperr.As(err)
	switch {
	case !ok || e.Kind != apperr.QuotaExceeded:
		t.Errorf("err = %v, want 429 quota-exceeded", err)
	case e.Extra["quota"] != quota || e.Extra["limit"] != limit || !strings.Contains(e.Detail, quota):
		t.Errorf("quota problem %+v: want quota %q and limit %d named", e, quota, limit)
	case e.RetryAfter <= 0:
		t.Errorf("quota problem without Retry-After: %+v", e)
	}
}

// RaceCreates runs 64 creates at once and counts those made and those refused; every refusal
// must be the quota's.
func RaceCreates(t *testing.T, quota string, limit int, create func(i int) error) (ok, refused int) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := create(i)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				ok++
				return
			}
			refused++
			WantQuota(t, err, quota, limit)
		}()
	}
	wg.Wait()
	return ok, refused
}

// Meter is a meter whose integer sums counters collects, each as "name attr=value ..." → total.
func Meter(t *testing.T) (meter metric.Meter, counters func() map[string]int64) {
	reader := sdkmetric.NewManualReader()
	meter = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test")
	return meter, func() map[string]int64 {
		t.Helper()
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		for _, sm := range rm.ScopeMetrics {
			for _, mt := range sm.Metrics {
				sum, ok := mt.Data.(metricdata.Sum[int64])
				if !ok {
					continue
				}
				for _, dp := range sum.DataPoints {
					key := mt.Name
					for _, kv := range dp.Attributes.ToSlice() {
						key += " " + string(kv.Key) + "=" + kv.Value.AsString()
					}
					got[key] += dp.Value
				}
			}
		}
		return got
	}
}

// WantCounters fails for each counter of want whose total differs, and for any script error
// counted (every reply was one its caller expects).
func WantCounters(t *testing.T, got, want map[string]int64) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
	for k, v := range got {
		if strings.HasPrefix(k, "hashgate_repo_script_errors") && v != 0 {
			t.Errorf("%s = %d, want 0", k, v)
		}
	}
	if t.Failed() {
		t.Logf("collected: %v", got)
	}
}
