package testredis

import (
	"bytes"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy is a TCP proxy on a free loopback port in front of one Redis server, for failover
// tests: it slows the replication link and drops what is in flight on a crash.
//
// A connection becomes a replication link once its client sends PSYNC or SYNC (a replica
// starting to replicate); from then on, every byte in either direction is held for Delay
// before it is passed on, so the replica receives the primary's writes (and the primary the
// replica's acknowledgements) Delay late, as over a slow network. Other connections (a gateway
// whose cluster node announces the proxy's port) pass without delay. Cut drops every byte the
// proxy holds and resets every connection, as a crash of the primary loses what its socket
// buffers and the network still carried. Partition cuts the replication links only (a network
// partition between primary and replica) until Heal. Block cuts and refuses the connections of
// chosen source addresses (a partition between the server and some of its clients) until Heal.
type Proxy struct {
	t      testing.TB
	ln     net.Listener
	target string
	Port   int
	delay  atomic.Int64
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	// repl holds both ends of every replication link; severed: Partition is in force.
	repl    map[net.Conn]struct{}
	severed bool
	// from is each tracked connection's client address (IP), for both of its ends; blocked the
	// addresses Block refuses (all: every address).
	from    map[net.Conn]string
	blocked map[string]bool
	all     bool
}

// Retarget sends every connection accepted from now on to target (host:port), as a floating
// address moved to a promoted replica; the open ones stay where they are until Cut.
func (p *Proxy) Retarget(target string) {
	p.mu.Lock()
	p.target = target
	p.mu.Unlock()
}

// StartProxy listens on a free loopback port and forwards to target (host:port); it is
// closed at cleanup.
func StartProxy(t testing.TB, target string, delay time.Duration) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{t: t, ln: ln, target: target, Port: ln.Addr().(*net.TCPAddr).Port, conns: map[net.Conn]struct{}{},
		repl: map[net.Conn]struct{}{}, from: map[net.Conn]string{}, blocked: map[string]bool{}}
	p.delay.Store(int64(delay))
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Cut resets every connection at once, dropping whatever the proxy still holds. New
// connections are still accepted (and forwarded, if the target listens).
func (p *Proxy) Cut() {
	p.mu.Lock()
	for c := range p.conns {
		reset(c)
	}
	p.conns, p.repl, p.from = map[net.Conn]struct{}{}, map[net.Conn]struct{}{}, map[net.Conn]string{}
	p.mu.Unlock()
}

// Block resets every connection from the client addresses ips (IPs; none: every address) and,
// until Heal, refuses new ones from them: a network partition between the server and those
// clients. Processes on loopback pick their source address with bind-source-addr (Redis) or
// a dialer's LocalAddr (Go); every 127.0.0.0/8 address is the loopback's.
func (p *Proxy) Block(ips ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.all = p.all || len(ips) == 0
	for _, ip := range ips {
		p.blocked[ip] = true
	}
	for c, ip := range p.from {
		if p.refuses(ip) {
			reset(c)
			delete(p.conns, c)
			delete(p.repl, c)
			delete(p.from, c)
		}
	}
}

// refuses reports whether a connection from ip is blocked (p.mu held).
func (p *Proxy) refuses(ip string) bool { return p.all || p.blocked[ip] }

// Partition resets every replication link and, until Heal, every connection that becomes one
// (before its PSYNC reaches the primary): the primary loses sight of its replica at once (the
// reset), and the replica cannot sync again. Other connections pass as before.
func (p *Proxy) Partition() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.severed = true
	for c := range p.repl {
		reset(c)
	}
	p.repl = map[net.Conn]struct{}{}
}

// Heal ends a Partition and every Block: the replica's next attempt syncs again.
func (p *Proxy) Heal() {
	p.mu.Lock()
	p.severed, p.all, p.blocked = false, false, map[string]bool{}
	p.mu.Unlock()
}

// replication records down and up as a replication link; it reports false (and resets both)
// while a Partition is in force.
func (p *Proxy) replication(down, up net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.severed {
		reset(down)
		reset(up)
		return false
	}
	p.repl[down], p.repl[up] = struct{}{}, struct{}{}
	return true
}

// reset closes c with an RST: nothing buffered is sent.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}

// Close stops accepting and resets every connection.
func (p *Proxy) Close() {
	p.ln.Close()
	p.Cut()
}

// track records c, a connection for the client at ip; it reports false when the proxy is
// closed or ip is blocked.
func (p *Proxy) track(c net.Conn, ip string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil || p.refuses(ip) {
		return false
	}
	p.conns[c], p.from[c] = struct{}{}, ip
	return true
}

func (p *Proxy) accept() {
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(down)
	}
}

func (p *Proxy) serve(down net.Conn) {
	p.mu.Lock()
	target := p.target
	ip, _, _ := net.SplitHostPort(down.RemoteAddr().String())
	refused := p.refuses(ip)
	p.mu.Unlock()
	if refused {
		reset(down)
		return
	}
	up, err := net.DialTimeout("tcp", target, time.Second)
	if err != nil {
		down.Close()
		return
	}
	if !p.track(down, ip) || !p.track(up, ip) {
		reset(down)
		reset(up)
		return
	}
	var repl atomic.Bool
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pipe(up, down, &repl, true) }()
	go func() { defer wg.Done(); p.pipe(down, up, &repl, false) }()
	go func() {
		// Both directions have ended: close both ends (a half-closed socket keeps its
		// descriptor until it is closed) and forget them.
		wg.Wait()
		down.Close()
		up.Close()
		p.untrack(down, up)
	}()
}

// untrack forgets closed connections.
func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
		delete(p.repl, c)
		delete(p.from, c)
	}
}

type chunk struct {
	due  time.Time
	data []byte
}

// pipe copies src to dst; from the client side (fromClient) it watches for PSYNC/SYNC. Once the
// connection is a replication link each chunk waits out the delay before it is written.
func (p *Proxy) pipe(dst, src net.Conn, repl *atomic.Bool, fromClient bool) {
	q := make(chan chunk, 4096)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := range q {
			if d := time.Until(c.due); d > 0 {
				time.Sleep(d)
			}
			if _, err := dst.Write(c.data); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			data := bytes.Clone(buf[:n])
			if fromClient && !repl.Load() && (bytes.Contains(data, []byte("PSYNC")) || bytes.Contains(data, []byte("\r\nSYNC\r\n"))) {
				repl.Store(true)
				if !p.replication(src, dst) {
					break // partitioned: the PSYNC is dropped with the connection
				}
			}
			var due time.Time
			if repl.Load() {
				due = time.Now().Add(time.Duration(p.delay.Load()))
			}
			q <- chunk{due: due, data: data}
		}
		if err != nil {
			break
		}
	}
	close(q)
	<-done
	// The source closed: pass the close on once everything held was written (unless Cut reset
	// both ends first, which drops it).
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	} else {
		_ = dst.Close()
	}
	_, _ = io.Copy(io.Discard, src)
}
