// Package store opens the Redis connection the repositories share: a real server or cluster
// from REDIS_URL, or an embedded in-process store when none is configured. It detects what the
// server can do (hash field expiration) once at start, bounds every call with a timeout, and
// classifies driver errors so the HTTP layer can answer 503 instead of 500.
package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	neturl "net/url"
	"slices"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"
)

// Topology is how the server is deployed.
type Topology string

// FieldExpiry is how field-lifetime data (hash fields with their own TTL) is written.
type FieldExpiry string

const (
	Standalone Topology = "standalone"
	Cluster    Topology = "cluster"
	// Sentinel: the primary of a master set, found and followed through Redis Sentinel.
	Sentinel Topology = "sentinel"

	// FieldExpiryHSETEX writes fields with their TTL in one HSETEX (Redis 8).
	FieldExpiryHSETEX FieldExpiry = "hsetex"
	// FieldExpiryHEXPIRE writes HSET then HEXPIRE in one atomic step (Redis 7.4).
	FieldExpiryHEXPIRE FieldExpiry = "hexpire"
	// FieldExpiryFallback keeps such fields in a separate key with its own TTL (older servers).
	FieldExpiryFallback FieldExpiry = "fallback"
)

// Capabilities are detected once at start and shared with the repositories and /readyz.
type Capabilities struct {
	Topology    Topology
	FieldExpiry FieldExpiry
	// FieldExpiryMs is true when the server also has the millisecond field-TTL commands
	// (HPEXPIRE, HPTTL; Redis >= 7.4), which the per-user session layout needs. The embedded
	// store has HEXPIRE but not these.
	FieldExpiryMs bool
	ServerVersion string
	Embedded      bool
	// ClientCache is true when rueidis client-side caching (RESP3 tracking) is on.
	ClientCache bool
	// Broadcast are the key prefixes Redis tracks in broadcast mode (Options.BroadcastPrefixes)
	// when ClientCache is on: a write to any key under them is pushed to Invalidations whether
	// or not the key was read through the cache, so a repository may keep its own copy of a
	// plain read under them. Empty with default tracking.
	Broadcast []string
}

// Broadcasts reports whether Redis pushes an invalidation for every write to a key starting
// with keyPrefix (broadcast tracking under one of Caps.Broadcast).
func (c Capabilities) Broadcasts(keyPrefix string) bool {
	if !c.ClientCache {
		return false
	}
	for _, p := range c.Broadcast {
		if strings.HasPrefix(keyPrefix, p) {
			return true
		}
	}
	return false
}

// Options configure Open.
type Options struct {
	// URL is redis://[user:pass@]host:port[/db], rediss://..., or a comma-separated list of
	// host:port addresses (a cluster's seed nodes); with ?master_set=NAME the addresses are
	// Sentinels (see ClientOption). Empty starts the embedded store.
	URL string
	// Durability confirms acknowledged writes with WAIT/WAITAOF (see Durable): every write of
	// the object stores and those that end a credential. nil is DurableAuto with a 2s timeout,
	// every write; it is always off on the embedded store.
	Durability *Durability
	// Timeout bounds every Redis call (default 500ms).
	Timeout time.Duration
	// DisableCache turns client-side caching off (always off for the embedded store).
	DisableCache bool
	// CacheBytesEachConn bounds the client-side cache of each connection (rueidis'
	// CacheSizeEachConn; 0: DefaultCacheBytesEachConn).
	CacheBytesEachConn int64
	// BroadcastPrefixes, when set, switch Redis's client tracking to broadcast mode
	// (CLIENT TRACKING ON BCAST PREFIX ...): the server keeps no per-key table of what each
	// gateway read, and pushes an invalidation for every write to a key under these prefixes
	// to every gateway. Every key read through the client-side cache must be under one of them.
	// Empty: default tracking (Redis remembers each key each connection read).
	BroadcastPrefixes []string
	// ProbePrefix is the key prefix for the capability probe key (default "hg").
	ProbePrefix string
	// ForceFieldExpiry overrides detection (tests use it to exercise every mode on one server).
	ForceFieldExpiry FieldExpiry
	// NewClient builds the client from options; telemetry passes rueidisotel here.
	// Default: rueidis.NewClient.
	NewClient func(rueidis.ClientOption) (rueidis.Client, error)
}

// Store is an open connection: Client is safe for concurrent use by every repository.
type Store struct {
	Client  rueidis.Client
	Caps    Capabilities
	Timeout time.Duration
	// Invalidations delivers the client-side cache's invalidation pushes (ClientCache only).
	Invalidations *Invalidations
	// Durable runs the writes that end a credential (durable.go).
	Durable  *Durable
	embedded *miniredis.Miniredis
	raw      rueidis.Client
}

// The client's connections: buffer sizes, and how long a pooled connection may sit idle
// (beyond poolMinIdle of them) before it is closed (see Open).
const (
	connBufferBytes = 64 << 10
	poolIdleTimeout = 30 * time.Second
	poolMinIdle     = 8
)

// DefaultCacheBytesEachConn is Options.CacheBytesEachConn's default (rueidis' own is 128 MiB
// per connection).
const DefaultCacheBytesEachConn = 8 << 20

// ErrBadURL reports an unusable REDIS_URL.
var ErrBadURL = errors.New("store: bad REDIS_URL")

// ClientOption turns a REDIS_URL into rueidis options (exported for tools that need a raw client).
//
// Sentinel: redis://[user:pass@]sentinel1:26379[,sentinel2:26379,...][/db]?master_set=NAME
// (rediss:// for TLS to the Sentinels and the data nodes alike). user:pass authenticate to the
// data nodes (the primary); sentinel_username and sentinel_password (query parameters)
// authenticate to the Sentinels. With several addresses or Sentinel, the TLS server name is
// each node's own host (Go's default), not the first address's.
func ClientOption(url string) (rueidis.ClientOption, error) {
	url = strings.TrimSpace(url)
	if url == "" {
		return rueidis.ClientOption{}, fmt.Errorf("%w: empty", ErrBadURL)
	}
	if !strings.Contains(url, "://") {
		var addrs []string
		for _, a := range strings.Split(url, ",") {
			a = strings.TrimSpace(a)
			if a == "" {
				continue
			}
			if _, _, err := net.SplitHostPort(a); err != nil {
				return rueidis.ClientOption{}, fmt.Errorf("%w: address %q is not host:port", ErrBadURL, a)
			}
			addrs = append(addrs, a)
		}
		if len(addrs) == 0 {
			return rueidis.ClientOption{}, fmt.Errorf("%w: no address", ErrBadURL)
		}
		return rueidis.ClientOption{InitAddress: addrs}, nil
	}
	// A comma-separated host list inside a URL: redis://a:1,b:2 → addr query parameters.
	if i := strings.Index(url, "://"); i >= 0 {
		rest := url[i+3:]
		// The host part ends at the path or, without one, at the query.
		end := strings.IndexAny(rest, "/?")
		if end < 0 {
			end = len(rest)
		}
		host, tail := rest[:end], strings.TrimPrefix(rest[end:], "/")
		if at := strings.LastIndex(host, "@"); at >= 0 || strings.Contains(host, ",") {
			cred := ""
			if at >= 0 {
				cred, host = host[:at+1], host[at+1:]
			}
			if parts := strings.Split(host, ","); len(parts) > 1 {
				q := ""
				for _, p := range parts[1:] {
					q += "addr=" + p + "&"
				}
				sep := "?"
				if strings.Contains(tail, "?") {
					sep = "&"
				}
				slash := "/"
				if tail == "" || strings.HasPrefix(tail, "?") {
					slash = ""
				}
				url = url[:i+3] + cred + parts[0] + slash + tail + sep + strings.TrimSuffix(q, "&")
			}
		}
	}
	opt, err := rueidis.ParseURL(url)
	if err != nil {
		// The URL may carry a password: never echo it.
		return rueidis.ClientOption{}, fmt.Errorf("%w: cannot parse (scheme, host or port)", ErrBadURL)
	}
	if opt.Sentinel.MasterSet != "" {
		u, _ := neturl.Parse(url) // parsed above
		q := u.Query()
		opt.Sentinel.Username, opt.Sentinel.Password = q.Get("sentinel_username"), q.Get("sentinel_password")
		opt.Sentinel.ClientName = "hashgate"
		// A missed +switch-master event would otherwise bind the client to a demoted primary
		// until a restart: reconcile with the Sentinels every few seconds as well.
		opt.Sentinel.TopologyRefreshInterval = 2 * time.Second
		if opt.TLSConfig != nil {
			opt.Sentinel.TLSConfig = opt.TLSConfig.Clone()
		}
	} else if q, _ := neturl.Parse(url); q != nil && (q.Query().Has("sentinel_username") || q.Query().Has("sentinel_password")) {
		return rueidis.ClientOption{}, fmt.Errorf("%w: sentinel_username and sentinel_password need master_set", ErrBadURL)
	}
	if opt.TLSConfig != nil && (len(opt.InitAddress) > 1 || opt.Sentinel.MasterSet != "") {
		opt.TLSConfig.ServerName = ""
		if opt.Sentinel.TLSConfig != nil {
			opt.Sentinel.TLSConfig.ServerName = ""
		}
	}
	return opt, nil
}

// Open connects (or starts the embedded store), detects capabilities and returns the store.
func Open(ctx context.Context, o Options) (*Store, error) {
	if o.Timeout <= 0 {
		o.Timeout = 500 * time.Millisecond
	}
	if o.ProbePrefix == "" {
		o.ProbePrefix = "hg"
	}
	if o.NewClient == nil {
		o.NewClient = rueidis.NewClient
	}
	s := &Store{Timeout: o.Timeout}
	dur := Durability{Replicas: DurableAuto}
	if o.Durability != nil {
		dur = *o.Durability
	}
	if dur.Timeout <= 0 {
		dur.Timeout = 2 * time.Second
	}
	if dur.Replicas < DurableAuto {
		return nil, fmt.Errorf("store: durable replicas %d: want auto (-1), 0 or a positive count", dur.Replicas)
	}
	s.Durable = &Durable{replicas: dur.Replicas, timeout: dur.Timeout, call: o.Timeout, noAOF: dur.NoAOF,
		credentialsOnly: dur.CredentialsOnly, unconfirmedReads: dur.UnconfirmedReads, off: dur.Replicas == 0 || strings.TrimSpace(o.URL) == "",
		conns: make(chan struct{}, durableConnsMax), idle: &idleConns{}}
	var opt rueidis.ClientOption
	if strings.TrimSpace(o.URL) == "" {
		m := miniredis.NewMiniRedis()
		m.ClockTTL(true)
		if err := m.StartAddr("127.0.0.1:0"); err != nil {
			return nil, fmt.Errorf("store: start embedded store: %w", err)
		}
		s.embedded = m
		s.Caps.Embedded = true
		// miniredis has no client tracking and no cluster commands.
		opt = rueidis.ClientOption{InitAddress: []string{m.Addr()}, DisableCache: true, ForceSingleClient: true}
	} else {
		var err error
		if opt, err = ClientOption(o.URL); err != nil {
			return nil, err
		}
		opt.DisableCache = o.DisableCache
	}
	if !opt.DisableCache && len(o.BroadcastPrefixes) > 0 {
		opt.ClientTrackingOptions = []string{"BCAST"}
		for _, p := range o.BroadcastPrefixes {
			opt.ClientTrackingOptions = append(opt.ClientTrackingOptions, "PREFIX", p)
		}
	}
	opt.CacheSizeEachConn = int(o.CacheBytesEachConn)
	if opt.CacheSizeEachConn <= 0 {
		opt.CacheSizeEachConn = DefaultCacheBytesEachConn
	}
	s.Invalidations = &Invalidations{}
	if !opt.DisableCache {
		opt.OnInvalidations = s.Invalidations.notify
	}
	opt.Dialer.Timeout = o.Timeout
	opt.Dialer.KeepAlive = 30 * time.Second
	opt.ConnWriteTimeout = max(o.Timeout, time.Second)
	opt.ClientName = "hashgate"
	// Every durable write and confirmed read takes a connection of its own from rueidis' pool
	// (Durable.run), which keeps what a burst made. With rueidis' 0.5 MiB read and write
	// buffers each, a burst of MFA verifications left hundreds pooled, the heap at GOMEMLIMIT
	// and the collector taking half the CPU afterwards: small buffers (a reply or a pipeline
	// larger than one is read or written in parts), and idle pooled connections closed.
	opt.ReadBufferEachConn, opt.WriteBufferEachConn = connBufferBytes, connBufferBytes
	opt.BlockingPoolCleanup, opt.BlockingPoolMinSize = poolIdleTimeout, poolMinIdle
	// A lost connection must not keep callers waiting past their deadline: rueidis retries
	// only while the call's context allows.
	raw, err := o.NewClient(opt)
	if err != nil {
		if raw != nil { // a cluster client that dialled a seed but read no topology
			raw.Close()
		}
		s.closeEmbedded()
		return nil, fmt.Errorf("store: connect: %w", Classify(err))
	}
	s.raw = raw
	s.Client = WithTimeout(raw, o.Timeout)
	s.Caps.ClientCache = !opt.DisableCache
	if s.Caps.ClientCache {
		s.Caps.Broadcast = slices.Clone(o.BroadcastPrefixes)
	}
	switch raw.Mode() {
	case rueidis.ClientModeCluster:
		s.Caps.Topology = Cluster
		s.Durable.cluster = true
	case rueidis.ClientModeSentinel:
		s.Caps.Topology = Sentinel
	default:
		s.Caps.Topology = Standalone
	}
	if err := s.detect(ctx, o, opt); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close releases the connection and stops the embedded store.
func (s *Store) Close() {
	if s.Durable != nil && s.Durable.idle != nil {
		s.Durable.idle.close()
	}
	if s.raw != nil {
		s.raw.Close()
	}
	s.closeEmbedded()
}

func (s *Store) closeEmbedded() {
	if s.embedded != nil {
		s.embedded.Close()
	}
}

// EmbeddedAddr is the embedded store's address ("" when a real server is used).
func (s *Store) EmbeddedAddr() string {
	if s.embedded == nil {
		return ""
	}
	return s.embedded.Addr()
}

// Primary is the address of the node that takes the writes now: the master a Sentinel
// client follows (it changes on failover), the one server of a standalone store, "" for a
// cluster (one primary per shard) and the embedded store.
func (s *Store) Primary() string {
	if s.Caps.Embedded || s.Caps.Topology == Cluster || s.raw == nil {
		return ""
	}
	for addr := range s.raw.Nodes() {
		return addr
	}
	return ""
}

// Ping checks every node (every master in a cluster) answers within the timeout.
func (s *Store) Ping(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	if s.Caps.Topology == Cluster {
		for addr, n := range s.raw.Nodes() {
			c, cancel := context.WithTimeout(ctx, s.Timeout)
			err := n.Do(c, n.B().Ping().Build()).Error()
			cancel()
			if err != nil {
				return 0, fmt.Errorf("store: ping %s: %w", addr, Classify(err))
			}
		}
		return time.Since(start), nil
	}
	if err := s.Client.Do(ctx, s.Client.B().Ping().Build()).Error(); err != nil {
		return 0, fmt.Errorf("store: ping: %w", Classify(err))
	}
	return time.Since(start), nil
}
