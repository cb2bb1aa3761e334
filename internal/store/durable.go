package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashgate/hashgate/internal/store/storeerr"
	"github.com/redis/rueidis"
)

// Durable security writes. A write that ends a credential (a revocation, a logout, a rotation's
// old token, an eviction at the session cap) must not be undone by a failover: the replica
// promoted in the primary's place has to hold it before the gateway answers 2xx. Redis offers
// that per connection: WAIT numreplicas timeout blocks until the replicas acknowledged every
// write made so far *by the connection that sends WAIT* (its client's last write offset), and
// WAITAOF does the same for append-only fsyncs. So the write and its WAIT must travel on one
// connection to the node that took the write.
//
// rueidis pipelines ordinary commands on shared connections and sends blocking commands (WAIT
// and WAITAOF are marked blocking) on connections from a separate pool: a WAIT sent with Do
// after a script sent with Do runs on another connection, whose client has written nothing,
// and answers at once with every replica counted — an acknowledgement of nothing. Durable.Run
// therefore runs the write on a dedicated connection (Client.Dedicated: one wire taken from
// the pool for the whole call; on a cluster, pinned to the node serving the slot of the first
// command, and never redirected: a MOVED or ASK is returned, so the WAIT can never be measured
// on a node other than the one that wrote) and sends WAIT there.

// DurableAuto is Durability.Replicas' default: wait for one replica once the deployment is
// known to have replicas, and not at all while it is not. It is known to have them from the
// moment a primary lists a replica online (ROLE, asked in the same round trip as each write) or
// the topology names one at start (detectReplicas), and from then on for the life of the
// process, across failovers: a primary with no replica connected then refuses the write's
// acknowledgement at once (503), as a failover could undo it.
const DurableAuto = -1

// Durability configures the writes that end a credential.
type Durability struct {
	// Replicas: DurableAuto (default), 0 (off: answer once the primary has the write), or N > 0
	// (strict: N replicas must acknowledge, whether or not the deployment has any; fewer → 503).
	Replicas int
	// Timeout bounds the wait for the replicas (WAIT's and WAITAOF's timeout). Default 2s (an
	// appendfsync everysec primary may take up to a second to fsync).
	Timeout time.Duration
	// NoAOF leaves out WAITAOF: the replicas' acknowledgement alone (what a failover needs)
	// confirms the write, without waiting up to a second for an everysec fsync.
	NoAOF bool
	// CredentialsOnly confirms only the writes that end a credential; the object stores'
	// writes (quotes, cases, Idempotency-Key records) are then answered once the primary has
	// them, and a failover can lose them (GATEWAY_DURABLE_WRITES=credentials).
	CredentialsOnly bool
	// UnconfirmedReads answers the object stores' reads from the primary at once: during a
	// partition a read may then show a write a failover undoes (GATEWAY_DURABLE_READS=off).
	// Confirmed (the default), a read is answered once the replicas hold everything it read
	// (Reads).
	UnconfirmedReads bool
}

// ErrNotDurable reports a credential-ending write the primary applied but too few replicas
// acknowledged within the timeout. It is unavailability (IsUnavailable: 503 with Retry-After):
// the caller cannot know whether a failover would keep the write, and a retry is safe because
// every such write is idempotent.
var ErrNotDurable = errors.New("write not acknowledged by the replicas in time")

// Durable runs credential-ending writes and confirms them with WAIT/WAITAOF.
type Durable struct {
	replicas int
	timeout  time.Duration
	off      bool
	noAOF    bool
	// call bounds each command of the write on the dedicated connection (the store's timeout).
	call time.Duration
	// aof is true while the primary is known to run with appendonly yes (then WAITAOF 1 0
	// waits for the local fsync too); waitAOF is false on servers before 7.2 (no WAITAOF).
	aof, waitAOF atomic.Bool
	// replicated (auto): the deployment has been seen with a replica; it is never cleared.
	replicated atomic.Bool
	// credentialsOnly: Objects is nil (the object stores' writes are not confirmed).
	credentialsOnly bool
	// unconfirmedReads: Reads is nil (the object stores' reads are not confirmed).
	unconfirmedReads bool
	// conns holds a token for each dedicated connection the writes hold (durableConnsMax).
	conns chan struct{}
	// idle keeps connections between writes (durable_idle.go); nil: none are kept. cluster:
	// the deployment is a cluster, whose connections are not kept.
	idle    *idleConns
	cluster bool
}

// durableConnsMax bounds the dedicated connections the confirmed writes and reads take at
// once. Each costs about 0.5 MiB while pooled (TestDedicatedConnectionsAreSmall), so a burst
// must not grow the pool with its concurrency; and rueidis' pool waits for a free one without a
// context. Past the bound a write waits for a connection as long as the store's timeout allows,
// then answers unavailable (503 + Retry-After). 256 at once is about 120 MiB; with WAITAOF on
// an everysec primary (each write holding its connection up to a second) about 256 confirmed
// writes a second per gateway, and with WAIT alone (a few ms each) tens of thousands.
const durableConnsMax = 256

// ErrBusy reports a confirmed write or read that found every one of the durableConnsMax
// connections taken for the store's timeout: unavailable, answered 503 with Retry-After.
var ErrBusy = fmt.Errorf("every connection for confirmed writes is busy: %w", storeerr.ErrUnavailable)

// Waits reports whether a write run now would be confirmed: a strict replica count, or auto on
// a deployment known to have replicas (learned at start or from a credential-ending write's
// ROLE). False with durability off and on a nil Durable.
func (d *Durable) Waits() bool {
	return d != nil && !d.off && (d.replicas > 0 || d.replicated.Load())
}

// Objects is the Durable that runs the object stores' writes (repo.Writes): d itself, or nil
// (every write runs unconfirmed, as with durability off) with Durability.CredentialsOnly.
func (d *Durable) Objects() *Durable {
	if d == nil || d.credentialsOnly {
		return nil
	}
	return d
}

// Reads is the Durable that confirms the object stores' reads (repo.Writes.Read): Objects, or
// nil with Durability.UnconfirmedReads. A read confirmed as a write is cannot show a write that
// a failover undoes (one whose own confirmation failed: a 503 that may have been applied).
func (d *Durable) Reads() *Durable {
	if d == nil || d.unconfirmedReads {
		return nil
	}
	return d.Objects()
}

// Replicated reports whether auto mode has learned that the deployment has replicas (and so
// requires one for every credential-ending write from now on).
func (d *Durable) Replicated() bool { return d != nil && d.replicated.Load() }

// ErrNoReplica reports, in auto mode, a credential-ending write the primary applied while no
// replica was connected to it although the deployment has replicas (a partition, or a failover
// whose old primary has not come back as a replica). It is an ErrNotDurable.
var ErrNoReplica = fmt.Errorf("no replica connected to the primary: %w", ErrNotDurable)

// Mode is the configured mode as the operator wrote it: "auto", "off" or the replica count.
func (d *Durable) Mode() string {
	switch {
	case d == nil || d.off:
		return "off"
	case d.replicas == DurableAuto:
		return "auto"
	}
	return fmt.Sprint(d.replicas)
}

// Run calls write with a client whose commands all travel on one dedicated connection to the
// node that serves the keys of write's first command. write reports whether its outcome ended a
// credential (a revocation that found nothing to revoke did not). When it did, Run waits on that
// same connection until the required replicas acknowledged (WAIT) and, with append-only on,
// until the primary fsynced it (WAITAOF 1 0), and returns ErrNotDurable (unavailable) when they
// did not within the timeout. A write refused with TRYAGAIN (its keys split by a slot
// migration) is sent again while the store's timeout allows. With durability off (or the
// embedded store) write runs on c as any call does.
func (d *Durable) Run(ctx context.Context, c rueidis.Client, write func(c rueidis.Client) (ended bool, err error)) error {
	if d == nil || d.off {
		_, err := write(c)
		return err
	}
	err := d.redirected(ctx, c, write)
	// TRYAGAIN: the write's keys are split between the two nodes of a migrating slot (some
	// moved, some not yet, or absent where they would be created) and Redis refused it before
	// it ran, asking the client to try again later, when the slot has one owner. Tried again,
	// waits doubling from tryAgainWait, for at most tryAgainFor (and the store's timeout): a
	// slot of a few keys moves in milliseconds; a longer move still answers 503 soon.
	wait, end := tryAgainWait, time.Now().Add(min(tryAgainFor, d.call))
	for tryAgain(err) && time.Until(end) > wait {
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait *= 2
		err = d.redirected(ctx, c, write)
	}
	return err
}

// tryAgainWait is the first wait before a write refused with TRYAGAIN is sent again;
// tryAgainFor bounds the waits of one write (10 + 20 ms: three attempts), so that a long
// move costs a refused write little more than before.
const (
	tryAgainWait = 10 * time.Millisecond
	tryAgainFor  = 50 * time.Millisecond
)

// tryAgain reports whether err is Redis's TRYAGAIN.
func tryAgain(err error) bool {
	var re *rueidis.RedisError
	return errors.As(err, &re) && re.IsTryAgain()
}

// redirected runs write once, following MOVED and ASK.
func (d *Durable) redirected(ctx context.Context, c rueidis.Client, write func(c rueidis.Client) (ended bool, err error)) error {
	err := d.run(ctx, c, write, false)
	// A dedicated connection follows no redirection: run the write again pinned to the node a
	// redirection names (the refused command wrote nothing: Redis redirects before it runs).
	// MOVED: the slot moved, and the cluster client learns the new owner only with its next
	// topology refresh. ASK: the slot is migrating and the keys of the refused command have
	// left for the importing node, which serves them only after ASKING, sent before each
	// command (a single-key script is served there; a multi-key one whose keys are split is
	// refused with TRYAGAIN, which Run tries again). A second redirection (the migration ended meanwhile) is
	// followed once more.
	for range 2 {
		var re *rueidis.RedisError
		if err == nil || c.Mode() != rueidis.ClientModeCluster || !errors.As(err, &re) {
			return err
		}
		addr, moved := re.IsMoved()
		askAddr, ask := re.IsAsk()
		if ask {
			addr = askAddr
		}
		n, ok := c.Nodes()[addr]
		if !moved && !ask || !ok {
			return err
		}
		err = d.run(ctx, n, write, ask)
	}
	return err
}

func (d *Durable) run(ctx context.Context, c rueidis.Client, write func(c rueidis.Client) (ended bool, err error), asking bool) error {
	if err := d.takeConn(ctx); err != nil {
		return err
	}
	conn := d.dedicate(c)
	err := d.pinnedRun(ctx, c, conn.dc, write, asking)
	if err == nil && conn.primary != "" && d.idle.keep(conn) {
		d.giveToken()
		return nil
	}
	// Giving the connection back can wait on the server: with client-side caching on, rueidis
	// sends UNSUBSCRIBE and DISCARD there, without a deadline, before pooling it. Done in the
	// background, a frozen or cut-off server cannot hold the answer past the store's timeout
	// (it held a confirmed read 5 s with the primary frozen), and a healthy one costs the
	// request no round trip (BenchmarkConfirmedGet: 145 → 122 µs).
	go func() {
		conn.release()
		d.giveToken()
	}()
	return err
}

// giveToken gives back the token takeConn took.
func (d *Durable) giveToken() {
	if d.conns != nil {
		<-d.conns
	}
}

// takeConn takes one of the dedicated connections' tokens, waiting at most the store's timeout
// (and ctx) for one: ErrBusy when none came.
func (d *Durable) takeConn(ctx context.Context) error {
	if d.conns == nil { // (a Durable not made by Open: unbounded)
		return nil
	}
	select {
	case d.conns <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(d.call)
	defer t.Stop()
	select {
	case d.conns <- struct{}{}:
		return nil
	case <-ctx.Done():
		return Classify(ctx.Err())
	case <-t.C:
		return ErrBusy
	}
}

func (d *Durable) pinnedRun(ctx context.Context, c rueidis.Client, dc rueidis.DedicatedClient, write func(c rueidis.Client) (ended bool, err error), asking bool) error {
	p := &pinned{Client: c, d: dc, askRole: d.replicas == DurableAuto, asking: asking, call: d.call, durable: d}
	ended, err := write(p)
	if err != nil || !ended || p.confirmed {
		return err
	}
	if err := p.replicasOnline(); err != nil {
		return err
	}
	return d.confirm(ctx, dc, p.need())
}

// confirm sends WAIT need and, when the primary has append-only on, WAITAOF 1 0 (its own
// fsync: with appendfsync everysec up to a second) in one round trip on dc, the connection
// that wrote. need 0 (auto, a deployment never seen with a replica) sends nothing.
func (d *Durable) confirm(ctx context.Context, dc rueidis.DedicatedClient, need int) error {
	cmds, aof := d.confirmCommands(dc, need)
	if len(cmds) == 0 {
		return nil
	}
	// The server gives up after the timeout; the client allows a margin for the round trip.
	cctx, cancel := context.WithTimeout(ctx, d.timeout+time.Second)
	defer cancel()
	return d.confirmed(dc.DoMulti(cctx, cmds...), need, aof)
}

// confirmCommands are the commands confirming a write on dc: WAIT need (none for need 0) and
// WAITAOF 1 0 when the primary has append-only on (aof). The local fsync is waited for
// together with the replicas: where the deployment has none (auto) nothing is waited for at
// all, as the primary's own answer is all there is.
func (d *Durable) confirmCommands(dc rueidis.DedicatedClient, need int) (cmds rueidis.Commands, aof bool) {
	if need == 0 {
		return nil, false
	}
	ms := d.timeout.Milliseconds()
	cmds = append(cmds, dc.B().Wait().Numreplicas(int64(need)).Timeout(ms).Build())
	aof = !d.noAOF && d.aof.Load() && d.waitAOF.Load()
	if aof {
		cmds = append(cmds, dc.B().Waitaof().Numlocal(1).Numreplicas(0).Timeout(ms).Build())
	}
	return cmds, aof
}

// confirmed reads the replies to confirmCommands: nil, or ErrNotDurable (unavailable) when
// too few replicas acknowledged or the fsync did not happen within the timeout.
func (d *Durable) confirmed(res []rueidis.RedisResult, need int, aof bool) error {
	if need > 0 {
		n, err := res[0].AsInt64()
		if err != nil {
			return fmt.Errorf("durable write: WAIT: %w", Classify(err))
		}
		if n < int64(need) {
			return fmt.Errorf("durable write: %d of %d replicas acknowledged within %v: %w: %w", n, need, d.timeout, storeerr.ErrUnavailable, ErrNotDurable)
		}
		res = res[1:]
	}
	if aof {
		counts, err := res[0].AsIntSlice()
		switch {
		case err != nil && aofOff(err):
			d.aof.Store(false) // append-only was turned off since it was detected
		case err != nil:
			return fmt.Errorf("durable write: WAITAOF: %w", Classify(err))
		case len(counts) < 1 || counts[0] < 1:
			return fmt.Errorf("durable write: not fsynced to the append-only file within %v: %w: %w", d.timeout, storeerr.ErrUnavailable, ErrNotDurable)
		}
	}
	return nil
}

func aofOff(err error) bool {
	e, ok := rueidis.IsRedisErr(err)
	return ok && strings.Contains(strings.ToLower(e.Error()), "appendonly is disabled")
}

// DurableMode is the durability in force for /readyz: "auto", "off" or the replica count.
func (s *Store) DurableMode() string { return s.Durable.Mode() }
