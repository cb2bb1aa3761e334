package sessions

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/ratelimit"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/repo/sessionstore"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// A session whose stored owner no longer hashes to its token's tag (a hash edited in Redis) is
// refused on every request — the one that reads it and those answered from the gateway's copy
// — and counted as tag_mismatch; whether the repository checks owners (OwnerCheck, as the
// gateway builds it, the verdict kept with the copy) or the service does.
func TestOwnerMismatchRefused(t *testing.T) {
	t.Parallel()
	for _, b := range testredis.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			for _, repoChecks := range []bool{true, false} {
				ownerMismatchRefused(t, b, repoChecks)
			}
		})
	}
}

func ownerMismatchRefused(t *testing.T, b testredis.Backend, repoChecks bool) {
	p := testredis.Prefix(t)
	s := testredis.Open(t, b, b.Tracking(p))
	r, h := ownerRepo(t, s, p, repoChecks)
	reader := sdkmetric.NewManualReader()
	svc, err := New(r, h, Config{IdleTimeout: 30 * time.Minute, AbsoluteTimeout: 24 * time.Hour,
		ChallengeTTL: 5 * time.Minute, Meter: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test")})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	is, err := svc.Create(ctx, "acme", CreateInput{UserID: "alice", AuthLevel: "BASIC"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authenticate(ctx, is.Token); err != nil {
		t.Fatalf("repo checks %v: before the edit: %v", repoChecks, err)
	}
	// The stored owner becomes mallory (userId is stored once per hash, either layout).
	c := s.Client
	var keys []string
	for _, n := range c.Nodes() { // (every node of a cluster)
		ks, err := n.Do(ctx, n.B().Keys().Pattern(p+":*").Build()).AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, ks...)
	}
	edited := 0
	for _, k := range keys {
		if ok, _ := c.Do(ctx, c.B().Hexists().Key(k).Field("userId").Build()).AsBool(); ok {
			if err := c.Do(ctx, c.B().Hset().Key(k).FieldValue().FieldValue("userId", "mallory").Build()).Error(); err != nil {
				t.Fatal(err)
			}
			edited++
		}
	}
	if edited != 1 {
		t.Fatalf("edited %d hashes (keys %v)", edited, keys)
	}
	// Until Redis's invalidation push drops the gateway's copy, the copy (alice) answers.
	oks := int64(1)
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := svc.Authenticate(ctx, is.Token)
		if err != nil {
			break
		}
		if oks++; time.Now().After(deadline) {
			t.Fatalf("repo checks %v: the edited session is still accepted", repoChecks)
		}
		time.Sleep(5 * time.Millisecond)
	}
	for i := range 3 { // now read from Redis once, then from the copy of the edited hash
		p, err := svc.Authenticate(ctx, is.Token)
		if ae := wantKind(t, err, apperr.InvalidCredentials); p != nil || ae == nil {
			t.Fatalf("repo checks %v: request %d after the edit: %v %v", repoChecks, i, p, err)
		}
	}
	got := counterByAttrs(t, reader, "hashgate_session_authentications", "result")
	if got["ok"] != oks || got["tag_mismatch"] != 4 {
		t.Fatalf("repo checks %v: authentications %v", repoChecks, got)
	}
}

// A repository whose OwnerCheck uses another key than the service's hasher is refused: its
// verdicts would replace the service's own check.
func TestNewRefusesAnotherKeysOwnerCheck(t *testing.T) {
	t.Parallel()
	s := testredis.Open(t, testredis.Backends()[0])
	h1, _, _ := keyhash.Generate()
	h2, _, _ := keyhash.Generate()
	cfg := Config{IdleTimeout: 30 * time.Minute, AbsoluteTimeout: 24 * time.Hour, ChallengeTTL: 5 * time.Minute}
	for _, c := range []struct {
		check func(tag, tenantID, userID string) bool
		ok    bool
	}{
		{OwnerCheck(h1), true},
		{nil, true},
		{OwnerCheck(h2), false},
		{func(string, string, string) bool { return true }, false},
	} {
		r, err := sessionstore.NewSessions(s, repo.Keys{Prefix: testredis.Prefix(t)}, sessionstore.SessionOptions{Layout: hostedLayout(s), RefreshFraction: 0.25,
			MaxPerUser: 50, MFA: ratelimit.Policy{Name: "mfa", Limit: 5, Window: 10 * time.Minute}, OwnerCheck: c.check})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := New(r, h1, cfg); (err == nil) != c.ok {
			t.Fatalf("owner check (want accepted: %v): %v", c.ok, err)
		}
	}
}

// ownerRepo is the sessions repository on s (prefix p) with a fresh key hasher h; with
// repoChecks the repository checks owners (OwnerCheck(h)), as internal/app wires it.
func ownerRepo(tb testing.TB, s *store.Store, p string, repoChecks bool) (*sessionstore.Sessions, *keyhash.Hasher) {
	tb.Helper()
	h, _, err := keyhash.Generate()
	if err != nil {
		tb.Fatal(err)
	}
	o := sessionstore.SessionOptions{Layout: hostedLayout(s), RefreshFraction: 0.25, MaxPerUser: 50, CacheTTL: time.Minute,
		MFA: ratelimit.Policy{Name: "mfa", Limit: 5, Window: 10 * time.Minute}}
	if repoChecks {
		o.OwnerCheck = OwnerCheck(h)
	}
	r, err := sessionstore.NewSessions(s, repo.Keys{Prefix: p}, o)
	if err != nil {
		tb.Fatal(err)
	}
	return r, h
}

// counterByAttrs collects reader and sums the int64 counter name's data points by the values
// of attrs, joined with "/".
func counterByAttrs(t *testing.T, reader *sdkmetric.ManualReader, name string, attrs ...string) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			d, ok := m.Data.(metricdata.Sum[int64])
			if !ok || m.Name != name {
				continue
			}
			for _, dp := range d.DataPoints {
				var parts []string
				for _, a := range attrs {
					v, _ := dp.Attributes.Value(attribute.Key(a))
					parts = append(parts, v.AsString())
				}
				got[strings.Join(parts, "/")] += dp.Value
			}
		}
	}
	return got
}
