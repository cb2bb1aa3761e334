package store

import "time"

// Test hooks for the external tests of this package.

// DurableConnsMax is durableConnsMax.
const DurableConnsMax = durableConnsMax

// ConnsBound is how many dedicated connections d's writes may take at once, and ConnsTaken how
// many they hold now.
func (d *Durable) ConnsBound() int { return cap(d.conns) }
func (d *Durable) ConnsTaken() int { return len(d.conns) }

// BoundConns lets d's writes take n dedicated connections at once.
func (d *Durable) BoundConns(n int) { d.conns = make(chan struct{}, n) }

// CallTimeout is the store's timeout, which bounds a write's wait for a connection.
func (d *Durable) CallTimeout() time.Duration { return d.call }

// DurableIdleMax is durableIdleMax.
const DurableIdleMax = durableIdleMax

// ConnsKept is how many dedicated connections d keeps between writes.
func (d *Durable) ConnsKept() int {
	d.idle.mu.Lock()
	defer d.idle.mu.Unlock()
	return len(d.idle.list)
}
