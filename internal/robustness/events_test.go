package robustness

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/testredis"
)

// Issue 26's fault proof: gateway processes (cmd/gateway, session events on) take writes in
// every domain that emits events while they are SIGKILLed and restarted and the Redis primary
// is crashed and failed over; afterwards, once the relay has drained every outbox, the tenant's
// events and the objects' state are compared (checkEvents, events_check_test.go).

// evRun is one events run: its deployment and how long its fault schedule lasts.
type evRun struct {
	sentinel bool
	// cluster: three masters with a replica each; one cycle (a crashed node is not restarted):
	// the master of the tenant's stream cut off from its replica, then crashed (evClusterCycle).
	cluster bool
	// cycles of period each: in every cycle a gateway is killed and restarted twice and the
	// primary crashed and failed over once.
	cycles int
	period time.Duration
	long   bool
	// durable is GATEWAY_DURABLE_REPLICAS ("auto", the default); a control ("0", with the
	// replication link cut before each crash: acknowledged writes lost with the primary) must
	// show lost writes, and still no mismatch: a write is lost with its event.
	durable string
	control bool
}

// The short run's clients and their pause between two writes.
const (
	evShortClients = 4
	evShortPace    = 3 * time.Millisecond
)

// evMinWrites is the floor: the workload goes on past the schedule until it is reached.
const evMinWrites = 1000

func TestRobustnessEvents(t *testing.T) {
	t.Parallel()
	seed, dir := runSeedAndDir(t)
	runs := map[string]evRun{
		"crash+sigkill/durable=auto":                   {cycles: 2, period: 6 * time.Second, durable: "auto"},
		"cluster-partition-crash+sigkill/durable=auto": {cluster: true, cycles: 1, period: 10 * time.Second, durable: "auto"},
	}
	if *flagAll {
		// Three cuts: one lost no acknowledged write in a full run (seed 2376143288912403156).
		runs["partition-crash+sigkill/durable=0"] = evRun{cycles: 3, period: 8 * time.Second, durable: "0", control: true}
		// make robustness: the standalone schedule for the whole duration, and the same faults
		// with the Sentinels failing over.
		period := cmp.Or(*flagPeriod, *flagDuration) // 0: the whole duration, one cycle
		n := max(1, int(*flagDuration/period))
		runs["crash+sigkill/durable=auto"] = evRun{cycles: n, period: period, durable: "auto"}
		runs["sentinel-crash+sigkill/durable=auto"] = evRun{sentinel: true, cycles: n, period: period, durable: "auto"}
	}
	var bin string
	if !testredisUnset(t) {
		bin = buildGateway(t, t.TempDir())
	}
	for name, run := range runs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			t.Logf("seed %d", seed)
			r := runEvents(t, bin, run, seed)
			line := r.line(name, seed)
			t.Log(line)
			t.Logf("writes by status: %v; events by type: %v; objects: %v; took %v", r.Statuses, r.ByType, r.Objects, r.Took.Round(time.Second))
			saveEvents(t, dir, name, seed, r)
			if len(r.Mismatches) > 0 {
				t.Errorf("%d mismatches between changes and events (seed %d):\n%s", len(r.Mismatches), seed, strings.Join(first(r.Mismatches, 30), "\n"))
			}
			switch {
			case run.control && len(r.Lost) == 0:
				t.Errorf("control: with GATEWAY_DURABLE_REPLICAS=0 and the link cut before the crash no acknowledged write was lost; the check cannot see a loss")
			case !run.control && len(r.Lost) > r.Unconfirmed:
				t.Errorf("%d acknowledged writes lost with the default durability (seed %d; %d of them creates not confirmed by design):\n%s",
					len(r.Lost), seed, r.Unconfirmed, strings.Join(first(r.Lost, 30), "\n"))
			}
			if r.Writes < evMinWrites {
				t.Errorf("only %d writes; the issue asks for at least %d", r.Writes, evMinWrites)
			}
			for _, typ := range []string{"token.issued", "token.revoked", "quote.created", "quote.updated", "quote.submitted", "quote.deleted",
				"case.created", "case.escalated", "case.assigned", "case.resolved", "case.reopened",
				"session.created", "session.rotated", "session.revoked", "session.logged_out", "session.evicted"} {
				if r.ByType[typ] == 0 {
					t.Errorf("no %s event: the workload did not exercise it", typ)
				}
			}
		})
	}
}

// evResult is one run's report with its faults.
type evResult struct {
	evReport
	Faults faultCounts
	Took   time.Duration
	// Data: what was checked, saved when the check failed.
	Data *evData `json:",omitempty"`
	// Control: mismatches the check reports on this run's own data with one event dropped
	// (it must report some).
	Control int
}

func (r evResult) line(name string, seed uint64) string {
	return fmt.Sprintf("| %s | %d | %d | %d | %d | %d gateway kills, %d restarts, %d partitions, %d failovers | %d | %d | %d | %d (%d) | %d |",
		name, seed, r.Writes, r.Acked, r.Unknown, r.Faults.Kills, r.Faults.Restarts, r.Faults.Partitions, r.Faults.Failovers, r.Events,
		r.Objects["token"]+r.Objects["quote"]+r.Objects["case"]+r.Objects["session"], len(r.Mismatches), len(r.Lost), r.Unconfirmed, r.Control)
}

type evData struct {
	Ops    []evOp
	Events []evEvent
	State  evState
}

func first(s []string, n int) []string { return s[:min(n, len(s))] }

// runEvents starts the deployment and three gateway processes, runs the workload under the
// fault schedule, waits for the relay and checks.
func runEvents(t *testing.T, bin string, run evRun, seed uint64) evResult {
	var d *deployment
	switch {
	case run.sentinel:
		d = startSentinelDeployment(t)
	case run.cluster:
		d = startClusterDeployment(t, false)
	default:
		d = startDeployment(t, 0)
	}
	spec := gatewayConfig(t, "", run.durable)
	for k, v := range map[string]string{"GATEWAY_SESSION_EVENTS": "all", "GATEWAY_EVENTS_RELAY_INTERVAL": evRelayInterval.String(),
		"GATEWAY_EVENTS_MAX_LEN": "1000000", "GATEWAY_SESSION_MAX_PER_USER": strconv.Itoa(evSessionCap)} {
		spec = spec.with(k, v)
	}
	prefix := spec.env["GATEWAY_KEY_PREFIX"]
	d.prefix = prefix
	gws := startProcesses(t, bin, d.specs(spec, 3)...)
	d.gateways = gws
	w := &evWorld{gws: gws, keys: map[string][]evKey{}}
	w.admin = mintAdmin(t, bin, gws[0].proc.env)
	// The short run (in make test, beside TestRobustness on a shared machine) writes at about
	// half the rate it could: still several times the 1,000 writes.
	clients, pace := *flagClients, *flagPace
	if !*flagAll {
		clients, pace = min(clients, evShortClients), max(pace, evShortPace)
	}
	start := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.run(ctx, clients, pace, seed)
	}()
	var n faultCounts
	cycle := evCycle
	if run.cluster {
		cycle = evClusterCycle
	}
	for c := range run.cycles {
		if err := cycle(d, run, c, &n); err != nil {
			cancel()
			<-done
			t.Fatalf("fault cycle %d: %v", c, err)
		}
	}
	// The floor of writes, within a bound.
	_ = poll(2*time.Minute, "the writes' floor", func() bool { return w.writes() >= evMinWrites })
	cancel()
	<-done
	// The sweepers still escalate cases that fall due after the last write: wait for them.
	w.mu.Lock()
	due := w.lastDue
	w.mu.Unlock()
	time.Sleep(time.Until(due.Add(time.Second + 5*sweepInterval)))
	var masters []rueidis.Client
	for _, addr := range d.primaries() {
		masters = append(masters, testredis.NodeClient(t, addr))
	}
	if err := waitRelayed(masters, prefix); err != nil {
		t.Fatal(err)
	}
	events, st, err := w.settled(masters, prefix)
	if err != nil {
		t.Fatal(err)
	}
	r := evResult{evReport: checkEvents(w.ops, events, st), Faults: n, Took: time.Since(start)}
	if len(r.Mismatches)+len(r.Lost) > 0 {
		r.Data = &evData{Ops: w.ops, Events: events, State: st}
	}
	// The control on this run's own data: drop one quote.updated event of a quote that exists
	// (a change without its event) and the check must see it.
	for i, e := range events {
		if _, ok := st.Quotes[e.Subject]; ok && e.Type == "quote.updated" {
			cut := append(append([]evEvent(nil), events[:i]...), events[i+1:]...)
			r.Control = len(checkEvents(w.ops, cut, st).Mismatches) - len(r.Mismatches)
			break
		}
	}
	if r.Control <= 0 {
		t.Errorf("control: with a quote.updated event dropped the check found no more mismatches (%d)", r.Control)
	}
	return r
}

// evRelayInterval is the gateways' GATEWAY_EVENTS_RELAY_INTERVAL: a killed gateway's
// unrelayed outboxes are swept within it.
const evRelayInterval = 300 * time.Millisecond

// evCycle is one fault cycle: a gateway SIGKILLed at 10% and restarted at 25%; in a control,
// the replication link cut at 20% (d.partition); the primary
// crashed at 35% and the replica promoted (the floating address moved, or the Sentinels'
// own failover); another gateway SIGKILLed at 45%; the crashed primary rejoined as a replica
// at 70% and the gateway restarted. Unlike the linearizability runs' faults it always ends
// with the deployment whole, so the check reads a settled state.
func evCycle(d *deployment, run evRun, c int, n *faultCounts) error {
	p := run.period
	at := time.Now()
	wait := func(f float64) { time.Sleep(time.Until(at.Add(time.Duration(f * float64(p))))) }
	kill := func(i int) *gateway {
		g := d.gateways[i%len(d.gateways)]
		g.kill()
		n.Kills++
		return g
	}
	restart := func(g *gateway) error {
		n.Restarts++
		return g.restart(context.Background())
	}
	wait(0.10)
	g := kill(2 * c)
	wait(0.25)
	if err := restart(g); err != nil {
		return err
	}
	if run.control {
		wait(0.20)
		if err := d.partition(); err != nil {
			return err
		}
		n.Partitions++
	}
	wait(0.35)
	var err error
	if run.sentinel {
		d.primary.Stop()
		d.sentinels.proxy[d.primary].Cut()
		err = d.sentinelFailover(allSentinels...)
	} else {
		err = d.failover()
	}
	if err != nil {
		return err
	}
	n.Failovers++
	wait(0.45)
	g = kill(2*c + 1)
	wait(0.70)
	if run.sentinel {
		err = d.sentinelRejoin()
	} else {
		err = d.rejoin()
	}
	if err != nil {
		return err
	}
	if err := restart(g); err != nil {
		return err
	}
	wait(1)
	return nil
}

// evClusterCycle is the cluster's one cycle: a gateway SIGKILLed at 10% and restarted at 25%;
// at 20% the master holding the tenant's event stream cut off from its replica (its
// replication link partitioned: what it takes from then on is on it alone); at 45% it is
// crashed and its replica promoted (crashMaster); another gateway SIGKILLed at 55% and
// restarted at 75%, when the crashed node is restarted and rejoins as the promoted master's
// replica (restartMaster). Session writes land on the other masters (the users' tags) and
// their replicas meanwhile; the relay copies their events into the tenant's stream on the
// cut-off master.
func evClusterCycle(d *deployment, run evRun, c int, n *faultCounts) error {
	p := run.period
	at := time.Now()
	wait := func(f float64) { time.Sleep(time.Until(at.Add(time.Duration(f * float64(p))))) }
	g := d.gateways[0]
	wait(0.10)
	g.kill()
	n.Kills++
	wait(0.20)
	m, err := d.eventsMaster()
	if err != nil {
		return err
	}
	d.cluster.Links[m].Partition()
	if err := poll(10*time.Second, "the master sees its replica gone", func() bool {
		info, err := d.cluster.Do(context.Background(), m, "INFO", "replication").ToString()
		return err == nil && infoInt(info, "connected_slaves") == 0
	}); err != nil {
		return err
	}
	n.Partitions++
	wait(0.25)
	n.Restarts++
	if err := g.restart(context.Background()); err != nil {
		return err
	}
	wait(0.45)
	if err := d.crashMaster(m); err != nil {
		return err
	}
	n.Failovers++
	g = d.gateways[1]
	wait(0.55)
	g.kill()
	n.Kills++
	wait(0.75)
	n.Restarts++
	if err := g.restart(context.Background()); err != nil {
		return err
	}
	if err := d.restartMaster(m); err != nil {
		return err
	}
	wait(1)
	return nil
}

// eventsMaster is the master holding the workload's tenant's event stream.
func (d *deployment) eventsMaster() (int, error) {
	for i := range d.cluster.Nodes {
		keys, err := d.cluster.Do(context.Background(), i, "KEYS", d.prefix+":v1:events:{*}").AsStrSlice()
		if err != nil {
			return 0, err
		}
		if len(keys) > 0 {
			return i, nil
		}
	}
	return 0, fmt.Errorf("no event stream on any master")
}

// mintAdmin mints the workload's root bearer with `gateway token mint`, as an operator does.
func mintAdmin(t *testing.T, bin string, env []string) string {
	t.Helper()
	cmd := exec.Command(bin, "token", "mint", "--tenant", evTenant, "--ttl", "2h", "--subject", "ev-admin", "--scope",
		"sessions:read sessions:write tokens:read tokens:write quotes:read quotes:write cases:read cases:write events:read")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("gateway token mint: %v", err)
	}
	return "Bearer " + strings.TrimSpace(string(out))
}

// settled reads the events, the state, then the events again, until nothing was written in
// between (a change or an event read on one side only would be a false mismatch).
func (w *evWorld) settled(masters []rueidis.Client, prefix string) ([]evEvent, evState, error) {
	for range 5 {
		events, err := w.readEvents()
		if err != nil {
			return nil, evState{}, err
		}
		st, err := w.readState(masters, prefix, events)
		if err != nil {
			return nil, st, err
		}
		again, err := w.readEvents()
		if err != nil || len(again) == len(events) {
			return events, st, err
		}
		time.Sleep(time.Second)
	}
	return nil, evState{}, fmt.Errorf("events still written after the run")
}

// waitRelayed waits until no session outbox is left on any master (the relay swept them all).
func waitRelayed(masters []rueidis.Client, prefix string) error {
	left := 0
	err := poll(60*time.Second, "every outbox relayed", func() bool {
		left = 0
		for _, c := range masters {
			keys, err := scanKeys(c, prefix+":v1:evoutbox:*", "stream")
			if err != nil {
				return false
			}
			left += len(keys)
			// the per-user layout's outbox: ev.<n> fields in the user's session hash
			users, err := scanKeys(c, prefix+":v1:sess:{*}", "hash")
			if err != nil {
				return false
			}
			for _, k := range users {
				e, err := c.Do(context.Background(), c.B().Hscan().Key(k).Cursor(0).Match("ev.*").Count(1000).Build()).AsScanEntry()
				if err != nil {
					return false
				}
				if len(e.Elements) > 0 || e.Cursor != 0 {
					left++
				}
			}
		}
		return left == 0
	})
	if err != nil {
		return fmt.Errorf("%w: %d outboxes (streams or user hashes with events) left", err, left)
	}
	return nil
}

// scanKeys is every key of type typ matching match on the node c.
func scanKeys(c rueidis.Client, match, typ string) ([]string, error) {
	var out []string
	cursor := uint64(0)
	for {
		e, err := c.Do(context.Background(), c.B().Scan().Cursor(cursor).Match(match).Count(1000).Type(typ).Build()).AsScanEntry()
		if err != nil {
			return nil, err
		}
		out = append(out, e.Elements...)
		if cursor = e.Cursor; cursor == 0 {
			return out, nil
		}
	}
}

// get reads path through the replicas until one answers (a read after the run: every replica
// is back, but one may still be reconnecting).
func (w *evWorld) get(path string) (reply, error) {
	var r reply
	for i := range 50 {
		r = w.gws[i%len(w.gws)].do("GET", path, nil, "Authorization", w.admin)
		if r.status == http.StatusOK || r.status == http.StatusNotFound {
			return r, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return r, fmt.Errorf("GET %s: %d %s", path, r.status, r.body)
}

// pages reads every page of a list (items, nextCursor), calling each with one page's items.
func (w *evWorld) pages(path string, each func(json.RawMessage) error) error {
	cursor := ""
	for {
		p := path
		if cursor != "" {
			p += "&cursor=" + url.QueryEscape(cursor)
		}
		r, err := w.get(p)
		if err != nil {
			return err
		}
		var page struct {
			Items      json.RawMessage
			NextCursor string
		}
		if r.status != http.StatusOK || r.decode(&page) != nil {
			return fmt.Errorf("GET %s: %d %s", p, r.status, r.body)
		}
		if err := each(page.Items); err != nil {
			return err
		}
		if cursor = page.NextCursor; cursor == "" {
			return nil
		}
	}
}

// readEvents is the tenant's every event (GET /v1/events, paged with its cursors).
func (w *evWorld) readEvents() ([]evEvent, error) {
	var out []evEvent
	err := w.pages("/v1/events?limit=100", func(raw json.RawMessage) error {
		var items []evEvent
		err := json.Unmarshal(raw, &items)
		out = append(out, items...)
		return err
	})
	return out, err
}

// readState reads the objects back: the tenant's tokens over HTTP, every quote and case hash
// from the masters (not through an index: an object a list would miss still counts) with the
// case's history over HTTP, and every session anyone names over HTTP.
func (w *evWorld) readState(masters []rueidis.Client, prefix string, events []evEvent) (evState, error) {
	st := evState{Tokens: map[string]evToken{}, Quotes: map[string]evObject{}, Cases: map[string]evCase{}, Sessions: map[string]evSession{}}
	err := w.pages("/v1/tokens?limit=100", func(raw json.RawMessage) error {
		var items []struct {
			TokenID string
			Revoked bool
		}
		err := json.Unmarshal(raw, &items)
		for _, it := range items {
			st.Tokens[it.TokenID] = evToken{Revoked: it.Revoked}
		}
		return err
	})
	if err != nil {
		return st, err
	}
	for _, typ := range []string{"quote", "case"} {
		for _, primary := range masters {
			if err := w.readObjects(primary, prefix, typ, &st); err != nil {
				return st, err
			}
		}
	}
	sessions := map[string]bool{}
	for _, op := range w.ops {
		if op.Domain == "session" && op.ID != "" {
			sessions[op.ID] = true
		}
	}
	for _, e := range events {
		if strings.HasPrefix(e.Type, "session.") {
			sessions[e.Subject] = true
		}
	}
	for u := range evUsers {
		r, err := w.get(fmt.Sprintf("/v1/users/ev-user-%d/sessions", u))
		if err != nil {
			return st, err
		}
		var list struct{ Items []struct{ SessionID string } }
		if err := r.decode(&list); err != nil {
			return st, err
		}
		for _, it := range list.Items {
			sessions[it.SessionID] = true
		}
	}
	for id := range sessions {
		r, err := w.get("/v1/sessions/" + id)
		if err != nil {
			return st, err
		}
		var v struct{ CreatedAt, LastRotatedAt string }
		if r.status == http.StatusOK {
			if err := r.decode(&v); err != nil {
				return st, err
			}
		}
		s := evSession{Live: r.status == http.StatusOK}
		if s.Live && v.LastRotatedAt != v.CreatedAt {
			if s.LastRotated, err = time.Parse(time.RFC3339Nano, v.LastRotatedAt); err != nil {
				return st, fmt.Errorf("session %s: lastRotatedAt %q: %w", id, v.LastRotatedAt, err)
			}
		}
		st.Sessions[id] = s
	}
	return st, nil
}

// readObjects adds the quote or case (typ) hashes the node primary holds to st.
func (w *evWorld) readObjects(primary rueidis.Client, prefix, typ string, st *evState) error {
	keys, err := scanKeys(primary, prefix+":v1:"+typ+":*", "hash")
	if err != nil {
		return err
	}
	for _, k := range keys {
		if strings.HasSuffix(k, ":items") {
			continue
		}
		v, err := primary.Do(context.Background(), primary.B().Hmget().Key(k).Field(typ+"Id", "status", "stateVersion").Build()).ToArray()
		if err != nil || len(v) != 3 {
			return fmt.Errorf("HMGET %s: %v", k, err)
		}
		id, _ := v[0].ToString()
		status, _ := v[1].ToString()
		ver, _ := v[2].AsInt64()
		if typ == "quote" {
			st.Quotes[id] = evObject{Status: status, Version: ver}
			continue
		}
		c := evCase{evObject: evObject{Status: status, Version: ver}}
		err = w.pages("/v1/cases/"+id+"/history?limit=100", func(raw json.RawMessage) error {
			var items []struct {
				Transition   string
				StateVersion int64
			}
			err := json.Unmarshal(raw, &items)
			for _, it := range items {
				c.History = append(c.History, evTransition{Transition: it.Transition, Version: it.StateVersion})
			}
			return err
		})
		if err != nil {
			return err
		}
		slices.Reverse(c.History) // answered newest first
		st.Cases[id] = c
	}
	return nil
}

// saveEvents writes the run's writes, events and findings as JSON into dir.
func saveEvents(t *testing.T, dir, name string, seed uint64, r evResult) {
	path := filepath.Join(dir, fmt.Sprintf("events-%s-seed%d.json", strings.NewReplacer("+", "-", "/", "-").Replace(name), seed))
	raw, err := json.MarshalIndent(r, "", "  ")
	if err == nil {
		err = os.WriteFile(path, raw, 0o644)
	}
	if err != nil {
		t.Logf("saving %s: %v", path, err)
	}
}
