package faults

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/handlers"
	"github.com/hashgate/hashgate/internal/testredis"
)

// Acknowledged quote, case and keyed-create writes survive a partition followed by a failover,
// as revocations do (TestPartitionKeepsAcknowledgedRevocations). A primary with a replica
// (standalone, Sentinel, or the cluster master serving the tenant's tag); the gateway creates 8 drafts and 8 cases and sees them replicated; the replication
// link is cut; then each draft is patched (If-Match its version), each case assigned to another
// team (If-Match its version), and one quote and one case are created with an Idempotency-Key.
// The primary dies and the replica is promoted: every write answered 2xx must be on it, and
// every refusal is a 503 problem with Retry-After. A refused write must not have been applied
// either: a read during the cut shows the version before it (what a reader saw could otherwise
// vanish at the failover; the gateway reads unconfirmed, GATEWAY_DURABLE_READS=off, so that the
// read shows what the cut-off primary holds: confirmed, it answers 503 during the cut,
// TestReadsConfirmedAsWrites). The control (GATEWAY_DURABLE_REPLICAS=0) must see a loss.
func TestPartitionKeepsAcknowledgedObjectWrites(t *testing.T) {
	t.Parallel()
	runs := map[string]struct {
		start   func(t *testing.T) failoverTopology
		durable string
	}{
		"standalone":           {func(t *testing.T) failoverTopology { return standaloneFailover(t, 0) }, "auto"},
		"standalone/durable=0": {func(t *testing.T) failoverTopology { return standaloneFailover(t, 0) }, "0"},
		"sentinel":             {func(t *testing.T) failoverTopology { return sentinelFailover(t, 0) }, "auto"},
		"cluster":              {func(t *testing.T) failoverTopology { return clusterFailover(t, 0) }, "auto"},
	}
	for name, run := range runs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			writeObjectsDuringPartition(t, run.start(t), run.durable)
		})
	}
}

// objectWrite is one write sent during the cut and what the promoted node must show for it.
type objectWrite struct {
	what, key string
	field     string // the hash field to compare ("" : the hash must exist)
	want      string
}

func writeObjectsDuringPartition(t *testing.T, topo failoverTopology, durable string) {
	const n = 8
	g := startGatewayWith(t, topo.url, partitionRedisTimeout, func(c *config.Config) {
		c.DurableReplicas, c.DurableReads = durable, "off"
	})
	tenant := "tenant-objects"
	bearer := g.bearer(tenant, "quotes:read", "quotes:write", "cases:read", "cases:write")
	tag := g.hasher.TenantTag(tenant)
	if topo.pick != nil {
		// The cluster master cut off and killed is the one serving the tenant's tag: every
		// draft, case and their quota sets live in that slot.
		topo.pick(t, g.keys.Key("quote", tag, "anchor"))
	}
	quotes := make([]quote, n)
	cases := make([]string, n)
	for i := range n {
		q, r, err := g.createQuote(bearer, "cust-"+strconv.Itoa(i))
		if err != nil {
			t.Fatalf("%v: %s", err, r)
		}
		quotes[i] = q
		r = g.do("POST", "/v1/cases", map[string]any{"subjectRef": "subject-" + strconv.Itoa(i), "assignedTeam": "team0",
			"dueAt": time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339), "reason": "created"}, "Authorization", bearer)
		var c handlers.Case
		if r.err != nil || r.status != http.StatusCreated || r.decode(&c) != nil {
			t.Fatalf("create case: %s", r)
		}
		cases[i] = c.CaseId
	}
	g.replicated(t)
	topo.partition(t)

	var acked []objectWrite
	refused := 0
	// answer records one write's answer: a 2xx is what the promoted node must show; anything
	// else must be a 503 problem with Retry-After, and left nothing a reader could see.
	answer := func(r reply, ok int, w objectWrite, unchanged func() error) {
		if r.err == nil && r.status == ok {
			acked = append(acked, w)
			return
		}
		refused++
		if err := r.unavailable(); err != nil {
			t.Errorf("%s during the partition: %v", w.what, err)
		}
		if durable != "0" && unchanged != nil {
			if err := unchanged(); err != nil {
				t.Errorf("%s refused during the partition, yet applied on the primary: %v", w.what, err)
			}
		}
	}
	for i, q := range quotes {
		cust := "patched-" + strconv.Itoa(i)
		r := g.do("PATCH", "/v1/quotes/"+q.ID, map[string]any{"customerId": cust}, "Authorization", bearer,
			"If-Match", `"1"`, "Content-Type", "application/merge-patch+json")
		answer(r, http.StatusOK, objectWrite{what: "quote patch " + q.ID, key: g.keys.Key("quote", tag, q.ID), field: "customerId", want: cust},
			func() error { _, err := g.getQuote(bearer, q); return err })
	}
	for i, id := range cases {
		team := "team" + strconv.Itoa(i+1)
		r := g.do("POST", "/v1/cases/"+id+"/assign", map[string]any{"reason": "moved", "assignedTeam": team},
			"Authorization", bearer, "If-Match", `"1"`)
		answer(r, http.StatusOK, objectWrite{what: "case assign " + id, key: g.keys.Key("case", tag, id), field: "assignedTeam", want: team},
			func() error { return caseTeam(g, bearer, id, "team0") })
	}
	r := g.do("POST", "/v1/quotes", map[string]any{"customerId": "keyed", "currency": "EUR", "salesChannel": "faults"},
		"Authorization", bearer, "Idempotency-Key", "objects-partition-quote")
	var kq handlers.Quote
	if r.status == http.StatusCreated && r.decode(&kq) == nil {
		answer(r, http.StatusCreated, objectWrite{what: "keyed quote create", key: g.keys.Key("quote", tag, kq.QuoteId)}, nil)
	} else {
		answer(r, http.StatusCreated, objectWrite{what: "keyed quote create"}, nil)
	}
	r = g.do("POST", "/v1/cases", map[string]any{"subjectRef": "keyed", "assignedTeam": "team0",
		"dueAt": time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339), "reason": "created"},
		"Authorization", bearer, "Idempotency-Key", "objects-partition-case")
	var kc handlers.Case
	if r.status == http.StatusCreated && r.decode(&kc) == nil {
		answer(r, http.StatusCreated, objectWrite{what: "keyed case create", key: g.keys.Key("case", tag, kc.CaseId)}, nil)
	} else {
		answer(r, http.StatusCreated, objectWrite{what: "keyed case create"}, nil)
	}

	promoted := topo.crash(t)
	lost := lostObjects(promoted, acked)
	t.Logf("GATEWAY_DURABLE_REPLICAS=%s: %d of %d writes acknowledged during the partition, %d refused (503); %d of the acknowledged missing after the failover: %v",
		durable, len(acked), 2*n+2, refused, len(lost), lost)
	switch {
	case durable == "0" && len(lost) == 0:
		t.Errorf("control: with durability off no write was lost; the test cannot see a loss")
	case durable != "0" && len(lost) != 0:
		t.Errorf("%d acknowledged writes missing after the failover: %v", len(lost), lost)
	}
}

// caseTeam reads the case through the gateway and checks its team.
func caseTeam(g *gateway, bearer, id, team string) error {
	r := g.do("GET", "/v1/cases/"+id, nil, "Authorization", bearer)
	var c handlers.Case
	if r.err != nil || r.status != http.StatusOK || r.decode(&c) != nil {
		return fmt.Errorf("get case %s: %s", id, r)
	}
	if c.AssignedTeam != team {
		return fmt.Errorf("case %s shows team %s, want %s", id, c.AssignedTeam, team)
	}
	return nil
}

// lostObjects lists the acknowledged writes no promoted node shows.
func lostObjects(promoted []rueidis.Client, acked []objectWrite) (lost []string) {
	for _, w := range acked {
		found := false
		for _, c := range promoted {
			if w.field == "" {
				n, err := testredis.Do(c, "EXISTS", w.key).AsInt64()
				found = found || err == nil && n == 1
			} else {
				v, err := testredis.Do(c, "HGET", w.key, w.field).ToString()
				found = found || err == nil && v == w.want
			}
		}
		if !found {
			lost = append(lost, w.what)
		}
	}
	return lost
}
