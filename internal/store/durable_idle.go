package store

import (
	"sync"

	"github.com/redis/rueidis"
)

// Dedicated connections kept between confirmed writes. Giving one back to rueidis costs the
// server a round trip of seven commands (UNSUBSCRIBE, PUNSUBSCRIBE and SUNSUBSCRIBE, each
// followed by a PING, then DISCARD) and the gateway a goroutine, on every confirmed write and
// read; a connection whose write succeeded is clean (no subscription, no transaction open), so
// on a standalone or Sentinel deployment it is kept for the next one instead. A cluster's
// dedicated connections are pinned to a slot's node by their first command and are given back
// as before.

// durableIdleMax bounds the connections kept (about 0.5 MiB each, TestDedicatedConnectionsAreSmall):
// enough for the bursts of a few dozen concurrent confirmed writes that make bench runs; past
// it a connection is given back to rueidis' pool as before.
const durableIdleMax = 32

// dedicated is a dedicated connection taken for one write, and the primary it talks to.
type dedicated struct {
	dc      rueidis.DedicatedClient
	release func()
	primary string // the address of the primary it was taken for; "" for a cluster's
	// closed receives (or is closed) once the connection is lost: rueidis reports it to
	// publish/subscribe hooks, set when it is first kept (our writes never subscribe). A
	// connection to a server that restarted is then not handed to a write, which would fail.
	closed <-chan error
}

// lost reports whether the connection is known to be closed.
func (d dedicated) lost() bool {
	select {
	case <-d.closed:
		return true
	default:
		return false
	}
}

// idleConns holds the dedicated connections kept between writes, most recently used last.
type idleConns struct {
	mu     sync.Mutex
	list   []dedicated
	closed bool
}

// take returns a kept connection to primary, giving back any kept for another one (the
// primary changed: a Sentinel failover) or lost.
func (p *idleConns) take(primary string) (dedicated, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for n := len(p.list); n > 0; n = len(p.list) {
		d := p.list[n-1]
		p.list[n-1] = dedicated{}
		p.list = p.list[:n-1]
		if d.primary == primary && !d.lost() {
			return d, true
		}
		go d.release()
	}
	return dedicated{}, false
}

// keep holds d for the next write; false when the list is full or closed (the caller gives it
// back).
func (p *idleConns) keep(d dedicated) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.list) >= durableIdleMax {
		return false
	}
	if d.closed == nil {
		d.closed = d.dc.SetPubSubHooks(rueidis.PubSubHooks{OnSubscription: func(rueidis.PubSubSubscription) {}})
	}
	p.list = append(p.list, d)
	return true
}

// close gives every kept connection back and keeps none from now on (the store is closing).
func (p *idleConns) close() {
	p.mu.Lock()
	list := p.list
	p.list, p.closed = nil, true
	p.mu.Unlock()
	for _, d := range list {
		d.release()
	}
}

// dedicate takes a connection for a write on c: a kept one to c's primary, or a new one from
// rueidis' pool. A cluster's (and a cluster node's, after a redirection) are never kept.
func (d *Durable) dedicate(c rueidis.Client) dedicated {
	if d.idle != nil && !d.cluster {
		for addr := range c.Nodes() { // (one: the primary)
			if kept, ok := d.idle.take(addr); ok {
				return kept
			}
			dc, release := c.Dedicate()
			return dedicated{dc: dc, release: release, primary: addr}
		}
	}
	dc, release := c.Dedicate()
	return dedicated{dc: dc, release: release}
}
