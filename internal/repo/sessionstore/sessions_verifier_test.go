package sessionstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/sessions/session"
)

// A token with another verifier slides nothing: a session due for its idle refresh keeps its
// remaining window when a wrong verifier is presented (read fresh, by the script, and through
// the kept copy), and its own verifier then refreshes it.
func TestSessionWrongVerifierSlidesNothing(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, e *sessEnv) {
		ctx := context.Background()
		ref := e.create("", "acme", "alice", time.Hour, 2*time.Hour)
		e.sessExpire(ref, 60_000) // a minute left of the hour: due
		for _, o := range []session.AuthorizeOptions{{VerifierMAC: macOf("wrong"), Fresh: true}, {VerifierMAC: macOf("wrong"), View: true},
			{VerifierMAC: macOf("wrong")}} {
			if _, err := e.r.Authorize(ctx, ref, o); !errors.Is(err, session.ErrWrongVerifier) {
				t.Fatalf("wrong verifier %+v: %v", o, err)
			}
		}
		time.Sleep(20 * time.Millisecond) // (a background refresh, had one started)
		if p := e.sessPTTL(ref); p > 60_000 {
			t.Fatalf("a wrong verifier slid the window: PTTL %d ms", p)
		}
		ac, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, Fresh: true})
		if err != nil || !ac.Refreshed {
			t.Fatalf("the session's own verifier: %+v %v", ac, err)
		}
		if p := e.sessPTTL(ref); p < 59*60_000 {
			t.Fatalf("the session's own verifier did not slide the window: PTTL %d ms", p)
		}
	})
}
