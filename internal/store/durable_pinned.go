package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hashgate/hashgate/internal/store/storeerr"
	"github.com/redis/rueidis"
)

// The client a Durable.Run write is handed: every command on one dedicated connection, the
// replicas checked before the write (Ready) and counted with it.

// pinned is a rueidis.Client whose B, Do and DoMulti go to one dedicated connection, so that
// rueidis.Lua.Exec (which needs a Client and uses only those) runs a script there. In auto mode
// the first command travels with a ROLE in the same round trip: the primary's online replicas.
// Every other method is the parent client's.
type pinned struct {
	rueidis.Client
	d       rueidis.DedicatedClient
	askRole bool
	// asking: every command goes after an ASKING (the node imports the slot being written).
	asking  bool
	durable *Durable
	call    time.Duration
	online  int
	roleErr error
	// confirmed: the write's last round trip was ConfirmWith's (any later command may write:
	// Do and DoMulti clear it).
	confirmed bool
}

func (p *pinned) B() rueidis.Builder { return p.d.B() }

// Confirms reports whether the write must be confirmed by replicas: a strict replica count,
// or auto once the deployment is known to have replicas (a replica online counts: known once
// the first command has been sent).
func (p *pinned) Confirms() bool { return p.need() > 0 }

func (p *pinned) need() int {
	if p.durable.replicas != DurableAuto {
		return p.durable.replicas
	}
	if p.online > 0 || p.durable.replicated.Load() {
		return 1
	}
	return 0
}

// Ready checks, on c (the client a Durable.Run write was handed), before anything is written,
// that the replicas the write must be confirmed by are connected to the primary: ROLE, with
// EXISTS key (a key of the write, so that a cluster's dedicated connection is pinned to the node
// serving it) in one round trip. Fewer online than required → ErrNoReplica (unavailable),
// and nothing was written: a write refused because the replicas are cut off is not left on the
// primary for readers to see and a failover to undo. (A replica lost between this check and
// the WAIT still leaves the write applied and unconfirmed: the answer is then a 503 too.)
// A client that confirms nothing (durability off, auto on a deployment never seen with a
// replica) is not checked.
func Ready(ctx context.Context, c rueidis.Client, key string) error {
	p, ok := c.(*pinned)
	if !ok || p.need() == 0 {
		return nil
	}
	p.askRole = true
	if err := p.DoMulti(ctx, p.d.B().Exists().Key(key).Build())[0].Error(); err != nil {
		return err // a MOVED or ASK is followed by Durable.Run
	}
	if p.roleErr != nil {
		return fmt.Errorf("durable write: ROLE: %w", Classify(p.roleErr))
	}
	if need := p.need(); p.online < need {
		return fmt.Errorf("durable write: %d of %d replicas connected: %w: %w", p.online, need, storeerr.ErrUnavailable, ErrNoReplica)
	}
	return nil
}

// Asking reports whether c, the client a Durable.Run write was handed, runs on the node
// importing the write's slot (after an ASK): a key written there may also exist, still
// live, on the migrating node.
func Asking(c rueidis.Client) bool {
	p, ok := c.(*pinned)
	return ok && p.asking
}

// Confirms reports whether c, the client a Durable.Run write was handed, will confirm the
// write with a WAIT (false with durability off).
func Confirms(c rueidis.Client) bool {
	p, ok := c.(*pinned)
	return ok && p.Confirms()
}

func (p *pinned) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	p.confirmed = false
	if p.askRole || p.asking {
		return p.DoMulti(ctx, cmd)[0]
	}
	ctx, cancel := p.bound(ctx, p.call)
	defer cancel()
	return p.d.Do(ctx, cmd)
}

func (p *pinned) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	p.confirmed = false
	ctx, cancel := p.bound(ctx, p.call)
	defer cancel()
	return p.send(ctx, multi)
}

// send sends multi in one round trip, each command after an ASKING when the node imports the
// slot, and ROLE after them when the first command is still to carry it.
func (p *pinned) send(ctx context.Context, multi []rueidis.Completed) []rueidis.RedisResult {
	if !p.askRole && !p.asking {
		return p.d.DoMulti(ctx, multi...)
	}
	// The keyed command first: on a cluster the dedicated connection is pinned by it.
	all := make(rueidis.Commands, 0, 2*len(multi)+1)
	for _, cmd := range multi {
		if p.asking {
			all = append(all, p.d.B().Asking().Build())
		}
		all = append(all, cmd)
	}
	role := p.askRole
	if role {
		p.askRole = false
		all = append(all, p.d.B().Role().Build())
	}
	res := p.d.DoMulti(ctx, all...)
	if role {
		p.online, p.roleErr = onlineReplicas(res[len(res)-1])
		if p.online > 0 {
			p.durable.replicated.Store(true)
		}
		res = res[:len(res)-1]
	}
	if !p.asking {
		return res
	}
	out := make([]rueidis.RedisResult, len(multi))
	for i := range out {
		out[i] = res[2*i+1]
	}
	return out
}

// bound gives one call at most d: the store's timeout, as every call through Store.Client
// has, or a confirmation's.
func (p *pinned) bound(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); d <= 0 || ok && time.Until(dl) <= d {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}

// ConfirmWith sends cmds, the last commands of a Durable.Run write on c (the client it was
// handed), in one round trip with the write's confirmation (WAIT, and WAITAOF with append-only
// on: Durable.confirm), and returns cmds' results; Run then sends no confirmation of its own
// unless the write sends more commands after it.
// A confirmation covers every write the connection made, so cmds must write something Redis
// propagates when the write ended anything. An error is the confirmation's (unavailable, as
// Run's). A client that confirms nothing (durability off, auto on a deployment never seen
// with a replica) just sends cmds; so does one whose replicas are not known yet (nothing sent
// before cmds to carry ROLE), confirmed by Run after the write as usual.
func ConfirmWith(ctx context.Context, c rueidis.Client, cmds ...rueidis.Completed) ([]rueidis.RedisResult, error) {
	p, ok := c.(*pinned)
	if !ok || p.askRole || p.need() == 0 {
		return c.DoMulti(ctx, cmds...), nil
	}
	d := p.durable
	if err := p.replicasOnline(); err != nil {
		return nil, err
	}
	confirm, aof := d.confirmCommands(p.d, p.need())
	ctx, cancel := p.bound(ctx, d.timeout+time.Second)
	defer cancel()
	res := p.send(ctx, append(slices.Clone(cmds), confirm...))
	p.confirmed = true
	return res[:len(cmds)], d.confirmed(res[len(cmds):], p.need(), aof)
}

// replicasOnline is nil unless ROLE, sent with the write's first command, failed or (auto)
// listed no replica connected where one is needed: a WAIT would only run out its timeout.
func (p *pinned) replicasOnline() error {
	if p.roleErr != nil {
		return fmt.Errorf("durable write: ROLE: %w", Classify(p.roleErr))
	}
	if p.durable.replicas == DurableAuto && !p.askRole && p.need() > 0 && p.online == 0 {
		return fmt.Errorf("durable write: %w: %w", storeerr.ErrUnavailable, ErrNoReplica)
	}
	return nil
}

// onlineReplicas reads ROLE's reply on a primary: {"master", offset, {{ip, port, offset}...}}
// lists the replicas whose link is online.
func onlineReplicas(r rueidis.RedisResult) (int, error) {
	arr, err := r.ToArray()
	if err != nil {
		return 0, err
	}
	if len(arr) < 3 {
		return 0, fmt.Errorf("unexpected ROLE reply")
	}
	if role, _ := arr[0].ToString(); role != "master" {
		return 0, fmt.Errorf("%w: the node is a %s, not the primary", storeerr.ErrUnavailable, role)
	}
	reps, err := arr[2].ToArray()
	if err != nil {
		return 0, err
	}
	return len(reps), nil
}
