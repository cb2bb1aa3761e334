package robustness

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// Stalls by SIGSTOP: a process frozen whole (not DEBUG SLEEP's busy server) keeps its sockets
// open and answers nothing until SIGCONT; then it runs on from where it stopped, with whatever
// queued meanwhile in its sockets. Two schedules: sigstop (the Redis primary frozen longer
// than GATEWAY_REDIS_TIMEOUT, then a gateway process frozen as long; no failover) and
// sentinel-zombie (the primary frozen, with a gateway process, until the Sentinels have
// promoted its replica: the "zombie primary" that wakes up still a primary, beside a gateway
// that wakes up with requests queued and its connection to it still open).

// pauseFor is how long a SIGSTOP lasts in a cycle of p: longer than GATEWAY_REDIS_TIMEOUT
// (1 s) by enough for the probes to be answered within it, shorter than a client's request
// timeout (5 s), so what queued on a frozen gateway is answered after it wakes.
func pauseFor(p time.Duration) time.Duration {
	return min(max(p/8, 3*time.Second), 4*time.Second)
}

// refusalBound is how soon a request must be answered 503 while Redis answers nothing:
// GATEWAY_REDIS_TIMEOUT (1 s) plus the slack a loaded 2-core machine running -race needs.
const refusalBound = 2 * time.Second

// probeCounts are the probes sent while a Redis primary was frozen, through every replica in
// turn: a GET of a draft no one has (a read, confirmed as the defaults have it, never cached),
// a PATCH of it (an object write, confirmed) and the revocation of a token no one has (a
// credential-ending write); each must answer 503 with Retry-After within refusalBound.
type probeCounts struct {
	Sent, Refused int
	Slowest       time.Duration
	Bad           []string // what a probe got instead
}

// probe sends probes through every live replica every 100 ms from now until stop is closed,
// and waits for their answers.
func (d *deployment) probe(stop <-chan struct{}, n *faultCounts) {
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	const draft = "/v1/quotes/q_0000000000000000000000000z"
	probes := [][]string{
		{"GET", draft},
		{"PATCH", draft, "If-Match", `"1"`, "Content-Type", "application/merge-patch+json"},
		{"DELETE", "/v1/tokens/00000000000000000000000000"},
	}
	for i := 0; ; i++ {
		for _, g := range d.liveGateways() {
			if g.proc != nil && g.proc.paused.Load() {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				start := time.Now()
				pr := probes[i%len(probes)]
				var body any
				if pr[0] == "PATCH" {
					body = map[string]any{"taxMinor": 1}
				}
				r := g.do(pr[0], pr[1], body, append([]string{"Authorization", d.admin}, pr[2:]...)...)
				took := time.Since(start)
				mu.Lock()
				defer mu.Unlock()
				p := &n.Probes
				p.Sent++
				p.Slowest = max(p.Slowest, took)
				switch {
				case r.status == http.StatusServiceUnavailable && r.header.Get("Retry-After") != "" && took <= refusalBound:
					p.Refused++
				case len(p.Bad) < 5:
					p.Bad = append(p.Bad, fmt.Sprintf("%s %s %s: %d (Retry-After %q) after %v", g.url, pr[0], pr[1], r.status, r.header.Get("Retry-After"), took.Round(time.Millisecond)))
				}
			}()
		}
		select {
		case <-stop:
			wg.Wait()
			return
		case <-tick.C:
		}
	}
}

// pausePrimary freezes the primary (SIGSTOP) for dur, probing the replicas until the last
// probe can no longer be answered before it wakes, then resumes it (SIGCONT).
func (d *deployment) pausePrimary(dur time.Duration, n *faultCounts) {
	at := time.Now()
	d.primary.Pause()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.probe(stop, n)
	}()
	time.Sleep(dur - refusalBound - 200*time.Millisecond)
	close(stop)
	<-done
	time.Sleep(time.Until(at.Add(dur)))
	d.primary.Resume()
	n.Pauses++
}

// pauseProcess freezes the last replica, a cmd/gateway process (SIGSTOP), and returns it
// (its proc.signal(SIGCONT) thaws it).
func (d *deployment) pauseProcess() *gateway {
	g := d.gateways[len(d.gateways)-1]
	g.proc.signal(syscall.SIGSTOP)
	return g
}

func init() {
	// sigstop: a fifth into the cycle the primary is frozen (SIGSTOP) for pauseFor(p), longer
	// than GATEWAY_REDIS_TIMEOUT: requests answer 503 + Retry-After within it (the probes),
	// and the replica's link times out (repl-timeout 2 s) and resyncs once it wakes. Three
	// fifths in, the last replica, a cmd/gateway process, is frozen as long: clients' requests
	// queue in its sockets, the other replicas go on writing (revocations included), and it
	// wakes with them and its Redis connections' invalidations queued. No failover: nothing
	// may be lost and no model may show a violation.
	faults["sigstop"] = fault{name: "sigstop", cycle: func(ctx context.Context, d *deployment, p time.Duration, n *faultCounts) error {
		at := time.Now()
		if !sleep(ctx, p/5) {
			return nil
		}
		end := n.span()
		d.pausePrimary(pauseFor(p), n)
		// The replica's link timed out: the span ends when it is back (writes confirmed again).
		d.waitInSync()
		end()
		if !sleep(ctx, 3*p/5-time.Since(at)) {
			return nil
		}
		end = n.span()
		defer end()
		g := d.pauseProcess()
		time.Sleep(pauseFor(p))
		g.proc.signal(syscall.SIGCONT)
		n.GatewayPauses++
		return nil
	}}
	// sentinel-zombie: a fifth into the cycle the primary is frozen (SIGSTOP) together with
	// the last replica, a cmd/gateway process, whose connection to the primary stays open;
	// the Sentinels see the primary down and promote the replica; then the old primary is
	// thawed (still a primary: it does not know it was replaced) and the frozen gateway right
	// after it, with the requests the clients sent it meanwhile queued and +switch-master
	// queued on its Sentinel connection. The Sentinels then turn the zombie into a replica of
	// the promoted one, which discards whatever it took since it woke.
	faults["sentinel-zombie"] = fault{name: "sentinel-zombie", cycle: func(ctx context.Context, d *deployment, p time.Duration, n *faultCounts) error {
		if !sleep(ctx, p/5) {
			return nil
		}
		defer n.span()()
		at := time.Now()
		cut := len(n.Cuts)
		n.Cuts = append(n.Cuts, [2]time.Time{at, at.Add(p)})
		zombie := d.primary
		zombie.Pause()
		g := d.pauseProcess()
		err := d.sentinelFailover(allSentinels...)
		if err == nil {
			n.Failovers++
		}
		// Woken within a client's request timeout, so what queued on the gateway is answered.
		time.Sleep(time.Until(at.Add(pauseFor(p))))
		zombie.Resume()
		g.proc.signal(syscall.SIGCONT)
		n.Pauses++
		n.GatewayPauses++
		if err == nil {
			err = d.sentinelWhole(n)
		}
		n.Cuts[cut][1] = time.Now()
		return err
	}}
}
