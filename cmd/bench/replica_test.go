package main

import (
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/testredis"
)

// TestReplicaServesOnceStarted: after startReplica a replica acknowledges writes (WAIT 1 counts
// it), as the revoke rows' durable writes need. Over a dataset that takes the replica a while to
// load (the full run's, here 300 MB), the primary counts the replica online as soon as it has
// sent the data, while the replica still loads it and acknowledges nothing: waiting for that
// alone made every revocation of the row time out (503) after a full run.
func TestReplicaServesOnceStarted(t *testing.T) {
	t.Parallel()
	bin := os.Getenv(testredis.EnvRedis8Server)
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is unset", testredis.EnvRedis8Server)
		}
		t.Skipf("%s is unset (run `make test`)", testredis.EnvRedis8Server)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	primary, err := startRedis(ctx, bin, dir, "redis")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(primary.stop)
	c := primary.Client
	value := strings.Repeat("v", 1000)
	for i := range 300 { // 300,000 keys of 1 kB
		cmds := make(rueidis.Commands, 0, 1000)
		for j := range 1000 {
			cmds = append(cmds, c.B().Set().Key("k:"+strconv.Itoa(i*1000+j)).Value(value).Build())
		}
		for _, r := range c.DoMulti(ctx, cmds...) {
			if err := r.Error(); err != nil {
				t.Fatal(err)
			}
		}
	}
	b := &bench{log: io.Discard, dir: dir, redis: primary, redisBin: bin}
	if err := b.startReplica(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.replica.stop)
	err = c.Dedicated(func(dc rueidis.DedicatedClient) error {
		if err := dc.Do(ctx, dc.B().Set().Key("probe").Value("1").Build()).Error(); err != nil {
			return err
		}
		n, err := dc.Do(ctx, dc.B().Wait().Numreplicas(1).Timeout(500).Build()).AsInt64()
		if err == nil && n != 1 {
			t.Errorf("WAIT 1 500 right after startReplica counted %d replicas: the replica does not serve yet", n)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
