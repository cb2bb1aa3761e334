package webhooks

import (
	"testing"
	"time"
)

// TestBackoffDoublesWithJitter: each delay is drawn from the upper half of RetryBase doubled per
// attempt, capped at RetryMax; the draws differ (jitter).
func TestBackoffDoublesWithJitter(t *testing.T) {
	d := &Deliverer{o: DeliverOptions{RetryBase: time.Second, RetryMax: time.Minute}}
	seen := map[time.Duration]bool{}
	for attempts := 1; attempts <= 10; attempts++ {
		b := min(time.Second<<(attempts-1), time.Minute)
		for range 20 {
			got := d.backoff(attempts)
			if got < b/2 || got > b {
				t.Fatalf("attempt %d: delay %v not within [%v, %v]", attempts, got, b/2, b)
			}
			seen[got] = true
		}
	}
	if len(seen) < 100 {
		t.Fatalf("only %d distinct delays in 200 draws: no jitter", len(seen))
	}
}

// TestWantsEventTypes: exact types, prefixes and "*".
func TestWantsEventTypes(t *testing.T) {
	w := &Webhook{Events: []string{"session.revoked", "token.*"}}
	for typ, want := range map[string]bool{"session.revoked": true, "token.issued": true, "token.revoked": true,
		"session.created": false, "tokens.x": false, "token": false} {
		if w.Wants(typ) != want {
			t.Errorf("Wants(%s) = %v", typ, !want)
		}
	}
	if !(&Webhook{Events: []string{"*"}}).Wants("case.created") {
		t.Error("* does not want case.created")
	}
}
