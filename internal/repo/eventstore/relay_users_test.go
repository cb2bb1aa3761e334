package eventstore

import (
	"context"
	"fmt"
	"testing"
)

// TestRelayUsersOfSeveralTenantsAtOnce: one RelayUsers over many users of two tenants (users
// in many slots on a cluster, each tenant's checkpoints in its own) copies every pending event
// once, in order per user, into its tenant's stream, and empties every outbox — also for users
// whose earlier relay copied a part and died before deleting it (those events are skipped, not
// copied twice), and for users with nothing pending.
func TestRelayUsersOfSeveralTenantsAtOnce(t *testing.T) {
	t.Parallel()
	eachOutbox(t, func(t *testing.T, es *Store) {
		ctx := context.Background()
		const users = 40
		tags := make([]string, users)
		tenant := func(i int) string { return []string{"acme", "globex"}[i%2] }
		want := 0
		for i := range tags {
			tags[i] = fmt.Sprintf("userTagMany%03d", i)
			if i%10 == 9 {
				continue // nothing pending
			}
			appendOutbox(t, es, tags[i], tenant(i), 0, 1+i%3)
			if i%5 == 0 { // a dead gateway's relay: copied, not deleted; then one more event
				copyOnly(t, es, tags[i])
				appendOutbox(t, es, tags[i], tenant(i), 1+i%3, 1)
				want++
				continue
			}
			want += 1 + i%3
		}
		n, err := es.RelayUsers(ctx, tags)
		if err != nil || n != want {
			t.Fatalf("RelayUsers copied %d, %v; want %d", n, err, want)
		}
		got := map[string][]string{}
		for _, tn := range []string{"acme", "globex"} {
			for _, s := range subjects(t, es, tn) {
				got[s[2:len("s_userTagMany000")]] = append(got[s[2:len("s_userTagMany000")]], s)
			}
		}
		for i, tag := range tags {
			k := 0
			if i%10 != 9 {
				k = 1 + i%3
				if i%5 == 0 {
					k++
				}
			}
			wantSequence(t, got[tag], tag, k)
		}
		for _, tag := range tags {
			if _, err := es.RelayOutbox(ctx, tag); err != nil { // the clean-up, past the millisecond
				t.Fatal(err)
			}
			if outboxLeft(t, es, tag) {
				t.Fatalf("%s: the outbox was kept after its events were copied", tag)
			}
		}
	})
}
