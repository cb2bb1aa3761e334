package redistrace

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/hashgate/hashgate/internal/telemetry"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/rueidis"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func TestRedisSpansCarryNoArguments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		run       func(ctx context.Context, c rueidis.Client) error
		wantSpans []string
	}{
		{
			name: "single commands",
			run: func(ctx context.Context, c rueidis.Client) error {
				if err := c.Do(ctx, c.B().Set().Key("secret-key").Value("secret-value").Build()).Error(); err != nil {
					return err
				}
				return c.Do(ctx, c.B().Hset().Key("secret-hash").FieldValue().FieldValue("secret-field", "secret-value").Build()).Error()
			},
			wantSpans: []string{"SET", "HSET"},
		},
		{
			name: "pipeline",
			run: func(ctx context.Context, c rueidis.Client) error {
				for _, r := range c.DoMulti(ctx,
					c.B().Set().Key("secret-key").Value("secret-value").Build(),
					c.B().Get().Key("secret-key").Build(),
				) {
					if err := r.Error(); err != nil {
						return err
					}
				}
				return nil
			},
			wantSpans: []string{"SET GET"},
		},
		{
			name: "redis error",
			run: func(ctx context.Context, c rueidis.Client) error {
				_ = c.Do(ctx, c.B().Set().Key("secret-str").Value("secret-value").Build()).Error()
				if err := c.Do(ctx, c.B().Hget().Key("secret-str").Field("secret-field").Build()).Error(); err == nil {
					t.Error("HGET on a string: want WRONGTYPE error")
				}
				return nil
			},
			wantSpans: []string{"SET", "HGET"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := miniredis.RunT(t)
			exp := tracetest.NewInMemoryExporter()
			tel := setup(t, telemetry.Config{ServiceName: "hashgate-test"}, telemetry.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(exp)))
			client, err := NewClient(rueidis.ClientOption{
				InitAddress:       []string{srv.Addr()},
				DisableCache:      true, // miniredis has no client-side caching
				ForceSingleClient: true,
			}, tel)
			if err != nil {
				t.Fatalf("NewClient: %v", err)
			}
			defer client.Close()

			if err := tt.run(context.Background(), client); err != nil {
				t.Fatalf("redis: %v", err)
			}

			spans := exp.GetSpans()
			var names []string
			for _, s := range spans {
				if s.Name != "redis.dial" {
					names = append(names, s.Name)
				}
				assertNoSecret(t, s)
			}
			if !slices.Equal(names, tt.wantSpans) {
				t.Errorf("command spans = %q, want %q", names, tt.wantSpans)
			}
		})
	}
}

func assertNoSecret(t *testing.T, s tracetest.SpanStub) {
	t.Helper()
	check := func(where, v string) {
		if strings.Contains(v, "secret") {
			t.Errorf("span %q: %s = %q leaks a command argument", s.Name, where, v)
		}
	}
	check("name", s.Name)
	check("status", s.Status.Description)
	for _, kv := range s.Attributes {
		check(string(kv.Key), kv.Value.String())
	}
	for _, ev := range s.Events {
		for _, kv := range ev.Attributes {
			check(ev.Name+"."+string(kv.Key), kv.Value.String())
		}
	}
}

// TestRedisCommandMetrics: the command duration histogram is recorded per call whatever the
// configuration, labelled with the command names only under Config.RedisCommandLabels, and a
// span per call only when spans are recorded.
func TestRedisCommandMetrics(t *testing.T) {
	t.Parallel()
	for _, labels := range []bool{false, true} {
		for _, recording := range []bool{false, true} {
			t.Run(fmt.Sprintf("labels=%v,recording=%v", labels, recording), func(t *testing.T) {
				t.Parallel()
				exp := tracetest.NewInMemoryExporter()
				var opts []telemetry.Option
				if recording {
					opts = append(opts, telemetry.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(exp)))
				}
				tel := setup(t, telemetry.Config{ServiceName: "hashgate-test", RedisCommandLabels: labels}, opts...)
				srv := miniredis.RunT(t)
				client, err := NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true, ForceSingleClient: true}, tel)
				if err != nil {
					t.Fatal(err)
				}
				defer client.Close()
				ctx := context.Background()
				for range 3 {
					for _, r := range client.DoMulti(ctx, client.B().Set().Key("k").Value("v").Build(), client.B().Get().Key("k").Build()) {
						if err := r.Error(); err != nil {
							t.Fatal(err)
						}
					}
				}
				if err := client.Do(ctx, client.B().Get().Key("k").Build()).Error(); err != nil {
					t.Fatal(err)
				}
				const name = "rueidis_command_duration_seconds"
				if labels {
					for op, want := range map[string]uint64{"SET GET": 3, "GET": 1} {
						m := findMetric(t, tel, name, map[string]string{"operation": op})
						if m == nil || m.GetHistogram().GetSampleCount() != want {
							t.Errorf("%s{operation=%q} = %v, want %d samples", name, op, m, want)
						}
					}
				} else {
					m := findMetric(t, tel, name, nil)
					if m == nil || m.GetHistogram().GetSampleCount() != 4 {
						t.Fatalf("%s = %v, want 4 samples", name, m)
					}
					for _, l := range m.GetLabel() {
						if l.GetName() == "operation" {
							t.Errorf("%s labelled %s=%q without RedisCommandLabels", name, l.GetName(), l.GetValue())
						}
					}
				}
				var spans []string
				for _, s := range exp.GetSpans() {
					if s.Name != "redis.dial" {
						spans = append(spans, s.Name)
					}
				}
				if want := []string{"SET GET", "SET GET", "SET GET", "GET"}; recording && !slices.Equal(spans, want) || !recording && len(spans) != 0 {
					t.Errorf("spans %q (recording %v)", spans, recording)
				}
			})
		}
	}
}

// setup is a Telemetry for one test, shut down at its end. Read the spans before the test
// ends: Shutdown empties an in-memory exporter.
func setup(t *testing.T, cfg telemetry.Config, opts ...telemetry.Option) *telemetry.Telemetry {
	t.Helper()
	tel, err := telemetry.Setup(context.Background(), cfg, opts...)
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return tel
}

// findMetric returns the sample of family name whose labels include want.
func findMetric(t *testing.T, tel *telemetry.Telemetry, name string, want map[string]string) *dto.Metric {
	t.Helper()
	families, err := tel.Registry.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			matched := 0
			for _, l := range m.GetLabel() {
				if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
					matched++
				}
			}
			if matched == len(want) {
				return m
			}
		}
	}
	return nil
}
