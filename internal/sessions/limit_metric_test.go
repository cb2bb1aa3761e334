package sessions

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/hashgate/hashgate/internal/ratelimit"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/repo/sessionstore"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// Every MFA attempt's limit decision is counted in hashgate_ratelimit_decisions (policy mfa):
// with a limit of 5, seven wrong codes are 5 allowed and 2 limited.
func TestMFALimitDecisionsCounted(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		e := newSvcEnv(t, s, prefix)
		reader := sdkmetric.NewManualReader()
		r, err := sessionstore.NewSessions(s, repo.Keys{Prefix: prefix}, sessionstore.SessionOptions{Layout: hostedLayout(s), RefreshFraction: 0.25,
			MaxPerUser: 50, MFA: ratelimit.Policy{Name: "mfa", Limit: 5, Window: 10 * time.Minute}})
		if err != nil {
			t.Fatal(err)
		}
		svc, err := New(r, e.svc.hasher, Config{IdleTimeout: 30 * time.Minute, AbsoluteTimeout: 24 * time.Hour,
			ChallengeTTL: 5 * time.Minute, Meter: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test")})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		is := e.create("acme", "alice", CreateInput{})
		ch, err := svc.StartChallenge(ctx, "acme", is.Session.Ref.ID())
		if err != nil {
			t.Fatal(err)
		}
		e.remember(ch.Code)
		wrong := "000000"
		if ch.Code == wrong {
			wrong = "111111"
		}
		for range 7 {
			if _, err := svc.Verify(ctx, "acme", is.Session.Ref.ID(), ch.ID, wrong); err == nil {
				t.Fatal("a wrong code was accepted")
			}
		}
		got := counterByAttrs(t, reader, "hashgate_ratelimit_decisions", "policy", "outcome")
		if got["mfa/allowed"] != 5 || got["mfa/limited"] != 2 || len(got) != 2 {
			t.Fatalf("decisions %v, want mfa/allowed 5 and mfa/limited 2", got)
		}
	})
}
