package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// REDIS_URL naming Sentinels and a master set opens a store on the primary they name: the
// topology is sentinel, Primary is the primary's address, capabilities are detected there (a
// replica would refuse the probe's write), and after a Sentinel failover the same store writes
// to the promoted replica without being reopened.
func TestSentinelTopology(t *testing.T) {
	t.Parallel()
	set := testredis.StartSentinel(t, testredis.SentinelOptions{})
	s := openDurable(t, set.URL(), store.Durability{Replicas: store.DurableAuto})
	if s.Caps.Topology != store.Sentinel {
		t.Fatalf("topology %q, want sentinel", s.Caps.Topology)
	}
	if got := s.Primary(); got != set.Primary.Addr() {
		t.Fatalf("primary %q, want %q", got, set.Primary.Addr())
	}
	if s.Caps.FieldExpiry != store.FieldExpiryHSETEX {
		t.Errorf("field expiry %q, want hsetex (detected on the primary)", s.Caps.FieldExpiry)
	}
	prefix := testredis.Prefix(t)
	if err := durableSet(s, prefix+":before"); err != nil {
		t.Fatalf("durable write before the failover: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	set.Primary.Stop()
	if err := set.WaitMaster(ctx, set.Replica.Addr()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	plainSet := func(key string) error {
		return s.Client.Do(ctx, s.Client.B().Set().Key(key).Value("v").Px(time.Minute).Build()).Error()
	}
	for s.Primary() != set.Replica.Addr() || plainSet(prefix+":after") != nil {
		if time.Now().After(deadline) {
			t.Fatalf("the store still writes to %s, not the promoted replica %s", s.Primary(), set.Replica.Addr())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := s.Ping(ctx); err != nil {
		t.Fatalf("ping after failover: %v", err)
	}
	// The promoted primary has no replica (the old primary is down): auto, having seen one,
	// refuses to confirm a durable write at once, until the old primary is back as its replica.
	start := time.Now()
	if err := durableSet(s, prefix+":no-replica"); !errors.Is(err, store.ErrNoReplica) || !store.IsUnavailable(err) {
		t.Fatalf("durable write on the promoted primary without a replica: %v, want ErrNoReplica (unavailable)", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the refusal took %v; want it at once", took)
	}
	set.Primary.Start() // Sentinel turns it into the new primary's replica
	for err := durableSet(s, prefix+":replica-back"); err != nil; err = durableSet(s, prefix+":replica-back") {
		if time.Now().After(deadline.Add(20 * time.Second)) {
			t.Fatalf("durable write once the old primary is back as a replica: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The Sentinel URL forms: several Sentinels, auth for the data nodes (user:pass) and for the
// Sentinels (query parameters), TLS for both.
func TestSentinelURLForms(t *testing.T) {
	t.Parallel()
	o, err := store.ClientOption("rediss://app:secret@s1:26379,s2:26380/2?master_set=main&sentinel_username=sen&sentinel_password=spw")
	if err != nil {
		t.Fatal(err)
	}
	if o.Sentinel.MasterSet != "main" || len(o.InitAddress) != 2 || o.InitAddress[1] != "s2:26380" || o.SelectDB != 2 {
		t.Errorf("master set %q, addresses %v, db %d", o.Sentinel.MasterSet, o.InitAddress, o.SelectDB)
	}
	if o.Username != "app" || o.Password != "secret" || o.Sentinel.Username != "sen" || o.Sentinel.Password != "spw" {
		t.Errorf("auth: data %q/%q, sentinel %q/%q", o.Username, o.Password, o.Sentinel.Username, o.Sentinel.Password)
	}
	if o.TLSConfig == nil || o.Sentinel.TLSConfig == nil || o.TLSConfig.ServerName != "" || o.Sentinel.TLSConfig.ServerName != "" {
		t.Errorf("TLS: data %v, sentinel %v (server names must come from each address)", o.TLSConfig, o.Sentinel.TLSConfig)
	}
	if o.Sentinel.TopologyRefreshInterval <= 0 {
		t.Error("no periodic topology refresh: a missed +switch-master would bind the client to a demoted primary")
	}
	if _, err := store.ClientOption("redis://h:1?sentinel_password=x"); err == nil {
		t.Error("sentinel_password without master_set accepted")
	}
}
