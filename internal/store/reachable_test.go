package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/store/storeerr"
	"github.com/hashgate/hashgate/internal/testredis"
)

// A cluster master that has just crashed does not stop a gateway from starting: store.Open and
// LoadScripts ask the nodes that answer, both right after the crash (the dead node is still
// listed as a master) and once its replica has taken over (the dead node is still one of the
// seed addresses). The robustness harness's cluster crash saw a gateway restarted in that
// window exit with "read server info: redis unavailable: dial tcp ...: connection refused".
// The dead master is not the one serving the capability probe's key: a shard with no master
// at all makes Open unavailable, which cmd/gateway waits out (GATEWAY_REDIS_START_TIMEOUT).
func TestOpenSurvivesADeadClusterMaster(t *testing.T) {
	t.Parallel()
	rc := testredis.StartReplicatedCluster(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	slot, err := rc.KeySlot(ctx, "hg:v1:probe:{probe}")
	if err != nil {
		t.Fatal(err)
	}
	owner, err := rc.Owner(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	victim := (owner + 1) % len(rc.Nodes)
	url := rc.URL() // the seeds as configured before the crash: the dead node among them
	// Keyless reads go to a node picked at random: several opens make a miss near certain.
	openAll := func(when string, n int) {
		t.Helper()
		for i := range n {
			s, err := store.Open(ctx, store.Options{URL: url, Timeout: 2 * time.Second})
			if err == nil {
				err = s.LoadScripts(ctx, "return 1")
				s.Close()
			}
			if err != nil {
				t.Fatalf("%s, open %d: %v", when, i+1, err)
			}
		}
	}

	rc.Nodes[victim].Kill()
	openAll("right after the kill", 3)

	replica := rc.Replicas[victim]
	var asked time.Time
	for {
		if time.Since(asked) > 5*time.Second {
			// A forced failover gives up without the masters' votes (a loaded machine): ask again.
			asked = time.Now()
			if err := replica.Do(ctx, "CLUSTER", "FAILOVER", "FORCE").Error(); err != nil {
				t.Fatalf("cluster failover force: %v", err)
			}
		}
		role, err := replica.Do(ctx, "ROLE").ToArray()
		if err == nil && len(role) > 0 {
			if r, _ := role[0].ToString(); r == "master" {
				break
			}
		}
		select {
		case <-ctx.Done():
			t.Fatal("the replica was not promoted")
		case <-time.After(100 * time.Millisecond):
		}
	}
	rc.Promoted(victim)
	openAll("after the replica's promotion", 8)
}

// Asking the nodes that answer does not turn a refusal into a wait: a Redis user not allowed
// a start-up question fails Open at once with the refusal, never as unavailability (which
// cmd/gateway would wait out).
func TestOpenRefusalIsNotUnavailability(t *testing.T) {
	t.Parallel()
	srv := testredis.StartServer(t)
	admin := testredis.NodeClient(t, srv.Addr())
	for user, denied := range map[string]string{"noinfo": "-info", "norole": "-role"} {
		if err := testredis.Do(admin, "ACL", "SETUSER", user, "on", ">pw", "~*", "&*", "+@all", denied).Error(); err != nil {
			t.Fatal(err)
		}
	}
	for user, want := range map[string]string{"noinfo": "read server info", "norole": "+role"} {
		_, err := store.Open(context.Background(), store.Options{URL: "redis://" + user + ":pw@" + srv.Addr(), Timeout: 2 * time.Second})
		if err == nil || errors.Is(err, storeerr.ErrUnavailable) || !strings.Contains(err.Error(), want) {
			t.Errorf("user %s: err = %v; want a refusal naming %q, not unavailability", user, err, want)
		}
	}
}
