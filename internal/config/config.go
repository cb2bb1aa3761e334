// Package config reads the gateway's configuration from environment variables into one typed
// struct with defaults, validates it, and renders it with secrets masked for the start-up log.
package config

import (
	"errors"
	"fmt"

	"net/url"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Config is every setting the gateway reads. The `env` tag names the variable, `default` its
// default; `secret` fields are masked when the config is logged.
type Config struct {
	Addr               string        `env:"GATEWAY_ADDR" default:":8080"`
	PprofAddr          string        `env:"GATEWAY_PPROF_ADDR"`
	RedisURL           string        `env:"REDIS_URL" secret:"url"`
	RedisTimeout       time.Duration `env:"GATEWAY_REDIS_TIMEOUT" default:"500ms"`
	RedisClientCache   bool          `env:"GATEWAY_REDIS_CLIENT_CACHE" default:"true"`
	RedisCommandLabels bool          `env:"GATEWAY_REDIS_COMMAND_METRICS" default:"false"`
	// RedisStartTimeout is how long a starting gateway waits for Redis to become reachable
	// (0: not at all, the start fails at once).
	RedisStartTimeout time.Duration `env:"GATEWAY_REDIS_START_TIMEOUT" default:"30s"`
	// DurableReplicas: how many replicas must acknowledge a write that ends a credential
	// before it is answered: auto (one, once the deployment has been seen with a replica;
	// none before), 0 (off) or N.
	DurableReplicas string        `env:"GATEWAY_DURABLE_REPLICAS" default:"auto"`
	DurableTimeout  time.Duration `env:"GATEWAY_DURABLE_TIMEOUT" default:"2s"`
	// DurableAOF: auto also waits for the primary's append-only fsync (WAITAOF) when it runs
	// with appendonly yes; off waits for the replicas only.
	DurableAOF string `env:"GATEWAY_DURABLE_AOF" default:"auto"`
	// DurableWrites: which acknowledged writes are confirmed that way: all (default: every
	// write of quotes, cases and Idempotency-Key records too) or credentials (only the writes
	// that end a credential; a failover can then lose an acknowledged quote or case write).
	DurableWrites string `env:"GATEWAY_DURABLE_WRITES" default:"all"`
	// DurableReads: all (default: a read of a quote draft or a case is answered once the
	// replicas hold what it read, as a write is) or off (answered from the primary at once).
	DurableReads string `env:"GATEWAY_DURABLE_READS" default:"all"`
	// RedisClientCacheBytes bounds rueidis' client-side cache of each connection to Redis (the
	// gateway opens 2 per node on 2 or more cores, 1 on one core; README).
	RedisClientCacheBytes int64 `env:"GATEWAY_REDIS_CLIENT_CACHE_BYTES" default:"8388608"`
	// RedisClientTracking is how Redis tracks the cached reads: bcast (broadcast by key
	// prefix: no per-key table in Redis) or default (Redis remembers every key each gateway
	// connection read, about 180 B per key).
	RedisClientTracking string        `env:"GATEWAY_REDIS_CLIENT_TRACKING" default:"bcast"`
	KeyPrefix           string        `env:"GATEWAY_KEY_PREFIX" default:"hg"`
	LogLevel            string        `env:"GATEWAY_LOG_LEVEL" default:"info"`
	BootstrapTokenFile  string        `env:"GATEWAY_BOOTSTRAP_TOKEN_FILE"`
	BootstrapTenant     string        `env:"GATEWAY_BOOTSTRAP_TENANT" default:"default"`
	BootstrapTokenTTL   time.Duration `env:"GATEWAY_BOOTSTRAP_TOKEN_TTL" default:"24h"`

	// SigningKeys are Ed25519 keys, newest first: base64 seeds, pub:<base64> verify-only keys,
	// or file:<pem path>. Required with REDIS_URL; a fresh key is generated in embedded mode.
	SigningKeys string `env:"GATEWAY_SIGNING_KEYS" secret:"true" file:"GATEWAY_SIGNING_KEYS_FILE"`
	// SigningKeysFile / HMACKeyFile name files holding those values (Docker secrets style);
	// they are read when the direct variable is unset.
	SigningKeysFile string `env:"GATEWAY_SIGNING_KEYS_FILE"`
	HMACKeyFile     string `env:"GATEWAY_HMAC_KEY_FILE"`
	// HMACKey (base64, ≥32 bytes) keys user tags, MFA code HMACs and counter identifiers.
	// Required with REDIS_URL; generated in embedded mode.
	HMACKey     string `env:"GATEWAY_HMAC_KEY" secret:"true" file:"GATEWAY_HMAC_KEY_FILE"`
	JWTIssuer   string `env:"GATEWAY_JWT_ISSUER" default:"hashgate"`
	JWTAudience string `env:"GATEWAY_JWT_AUDIENCE" default:"hashgate"`

	TokenMaxTTL       time.Duration `env:"GATEWAY_TOKEN_MAX_TTL" default:"8760h"`
	TokenSafetyWindow time.Duration `env:"GATEWAY_TOKEN_SAFETY_WINDOW" default:"5m"`
	TokenCacheTTL     time.Duration `env:"GATEWAY_TOKEN_CACHE_TTL" default:"5s"`
	// TokenVerifyCacheEntries bounds the verified-JWT cache (entries; 0 turns it off).
	TokenVerifyCacheEntries int `env:"GATEWAY_TOKEN_VERIFY_CACHE_ENTRIES" default:"10000"`

	SessionIdleTimeout     time.Duration `env:"GATEWAY_SESSION_IDLE_TIMEOUT" default:"30m"`
	SessionAbsoluteTimeout time.Duration `env:"GATEWAY_SESSION_ABSOLUTE_TIMEOUT" default:"24h"`
	SessionRefreshFraction float64       `env:"GATEWAY_SESSION_REFRESH_FRACTION" default:"0.25"`
	SessionMaxPerUser      int           `env:"GATEWAY_SESSION_MAX_PER_USER" default:"50"`
	SessionCacheTTL        time.Duration `env:"GATEWAY_SESSION_CACHE_TTL" default:"30s"`
	// SessionCacheEntries bounds the decoded sessions the hot path keeps (entries; 0 turns the
	// memo off).
	SessionCacheEntries int `env:"GATEWAY_SESSION_CACHE_ENTRIES" default:"131072"`
	// SessionNegativeCacheTTL is how long a session token Redis has just found no session for
	// is refused without asking Redis again (0 turns the negative cache off);
	// SessionNegativeCacheEntries bounds it (entries; 0 turns it off).
	SessionNegativeCacheTTL     time.Duration `env:"GATEWAY_SESSION_NEGATIVE_CACHE_TTL" default:"2s"`
	SessionNegativeCacheEntries int           `env:"GATEWAY_SESSION_NEGATIVE_CACHE_ENTRIES" default:"65536"`
	// RecentWritesMax bounds the read-your-writes marks of each domain (entries); past it every
	// cached copy of that domain is distrusted until the marks expire.
	RecentWritesMax int           `env:"GATEWAY_RECENT_WRITES_MAX" default:"65536"`
	MFAChallengeTTL time.Duration `env:"GATEWAY_MFA_CHALLENGE_TTL" default:"5m"`
	MFAMaxAttempts  int           `env:"GATEWAY_MFA_MAX_ATTEMPTS" default:"5"`
	MFAWindow       time.Duration `env:"GATEWAY_MFA_WINDOW" default:"10m"`

	// SessionLimitPolicy is what a login does at SessionMaxPerUser: evict-oldest | refuse.
	SessionLimitPolicy string `env:"GATEWAY_SESSION_LIMIT_POLICY" default:"evict-oldest"`
	// SessionLayout is where sessions live: per-user (one hash per user, sessions as fields with
	// their own TTLs; needs hash field expiry, Redis >= 7.4) | per-session (one hash per session
	// plus the user's device index). Unset: per-user on Redis, per-session on the embedded store.
	SessionLayout string `env:"GATEWAY_SESSION_LAYOUT"`

	QuoteTTL       time.Duration `env:"GATEWAY_QUOTE_TTL" default:"168h"`
	QuoteMaxItems  int           `env:"GATEWAY_QUOTE_MAX_ITEMS" default:"100"`
	IdempotencyTTL time.Duration `env:"GATEWAY_IDEMPOTENCY_TTL" default:"24h"`

	// Tenant quotas: live objects per tenant, counted atomically with each create.
	TenantMaxTokens          int `env:"GATEWAY_TENANT_MAX_TOKENS" default:"10000"`
	TenantMaxIdempotencyKeys int `env:"GATEWAY_TENANT_MAX_IDEMPOTENCY_KEYS" default:"100000"`
	TenantMaxQuotes          int `env:"GATEWAY_TENANT_MAX_QUOTES" default:"10000"`
	TenantMaxCases           int `env:"GATEWAY_TENANT_MAX_CASES" default:"50000"`

	CaseMaxEscalation int           `env:"GATEWAY_CASE_MAX_ESCALATION" default:"3"`
	CaseResolvedTTL   time.Duration `env:"GATEWAY_CASE_RESOLVED_TTL" default:"720h"`
	CaseOpenTTL       time.Duration `env:"GATEWAY_CASE_OPEN_TTL" default:"2160h"`
	CaseHistoryMax    int           `env:"GATEWAY_CASE_HISTORY_MAX" default:"100"`
	CaseSweepInterval time.Duration `env:"GATEWAY_CASE_SWEEP_INTERVAL" default:"10s"`

	// Events (internal/events): on by default; off, no write appends an event, GET /v1/events
	// answers 404 and no webhook can be registered (docs/EVENTS.md).
	Events bool `env:"GATEWAY_EVENTS" default:"true"`
	// Event streams: each tenant's kept by age and count, the session outboxes' relay sweep,
	// the SSE keep-alive.
	EventsMaxAge        time.Duration `env:"GATEWAY_EVENTS_MAX_AGE" default:"72h"`
	EventsMaxLen        int           `env:"GATEWAY_EVENTS_MAX_LEN" default:"10000"`
	EventsRelayInterval time.Duration `env:"GATEWAY_EVENTS_RELAY_INTERVAL" default:"10s"`
	EventsKeepAlive     time.Duration `env:"GATEWAY_EVENTS_KEEPALIVE" default:"15s"`
	// EventsRefusalWindow is the aggregation window of the refusal events (ratelimit.refused,
	// quota.refused): one event per caller, limit and window.
	EventsRefusalWindow time.Duration `env:"GATEWAY_EVENTS_REFUSAL_WINDOW" default:"1m"`
	// SessionEvents is which session events are written: all, ends (revoked, logged out,
	// evicted) or off. A session write appends its events to the user's outbox, which the
	// relay copies into the tenant's stream. The ends by default: all of them cost a session
	// create 20–50% of its throughput (docs/EVENTS.md, "Cost").
	SessionEvents string `env:"GATEWAY_SESSION_EVENTS" default:"ends"`

	// Webhooks (internal/webhooks): deliveries retried from RetryBase, doubling up to 1h, for
	// RetryWindow after the event; private and loopback receivers only with AllowPrivate.
	WebhookRetryBase    time.Duration `env:"GATEWAY_WEBHOOK_RETRY_BASE" default:"5s"`
	WebhookRetryWindow  time.Duration `env:"GATEWAY_WEBHOOK_RETRY_WINDOW" default:"24h"`
	WebhookAllowPrivate bool          `env:"GATEWAY_WEBHOOK_ALLOW_PRIVATE" default:"false"`
	WebhookTimeout      time.Duration `env:"GATEWAY_WEBHOOK_TIMEOUT" default:"10s"`
	WebhookTTL          time.Duration `env:"GATEWAY_WEBHOOK_TTL" default:"8760h"`
	TenantMaxWebhooks   int           `env:"GATEWAY_TENANT_MAX_WEBHOOKS" default:"20"`

	// Request-rate limits (internal/ratelimit/ratesync): "<requests>/<window>", e.g. 6000/1m, or
	// "0" for off. Per API token and per tenant on every operation a bearer token calls, per
	// session on the end user's operations; the meta endpoints and the forward-auth routes
	// (GET /v1/authorize, GET /v1/session) are exempt.
	RateLimitPerToken   string `env:"GATEWAY_RATE_LIMIT_PER_TOKEN" default:"6000/1m"`
	RateLimitPerTenant  string `env:"GATEWAY_RATE_LIMIT_PER_TENANT" default:"30000/1m"`
	RateLimitPerSession string `env:"GATEWAY_RATE_LIMIT_PER_SESSION" default:"120/1m"`
	// Each replica decides from memory and sends its counts every flush interval, or at once
	// when a counter has admitted the sync share of its limit unsent.
	RateLimitFlushInterval time.Duration `env:"GATEWAY_RATE_LIMIT_FLUSH_INTERVAL" default:"100ms"`
	RateLimitSyncShare     float64       `env:"GATEWAY_RATE_LIMIT_SYNC_SHARE" default:"0.02"`
	RateLimitMaxCounters   int           `env:"GATEWAY_RATE_LIMIT_MAX_COUNTERS" default:"100000"`

	BodyLimitBytes    int64         `env:"GATEWAY_BODY_LIMIT_BYTES" default:"65536"`
	ReadHeaderTimeout time.Duration `env:"GATEWAY_READ_HEADER_TIMEOUT" default:"5s"`
	ReadTimeout       time.Duration `env:"GATEWAY_READ_TIMEOUT" default:"15s"`
	WriteTimeout      time.Duration `env:"GATEWAY_WRITE_TIMEOUT" default:"15s"`
	IdleTimeout       time.Duration `env:"GATEWAY_IDLE_TIMEOUT" default:"120s"`
	ShutdownTimeout   time.Duration `env:"GATEWAY_SHUTDOWN_TIMEOUT" default:"15s"`
	RetryAfter        time.Duration `env:"GATEWAY_RETRY_AFTER" default:"1s"`

	// AdminAddr is the operator listener: the detailed readiness and /metrics, never on the
	// API port; "off" serves none. (Addr, unset with no REDIS_URL — the embedded store, which
	// prints an admin token — is loopback only: embeddedAddr.)
	AdminAddr string `env:"GATEWAY_ADMIN_ADDR" default:"127.0.0.1:9090"`
	// RedisPasswordFile names a file holding the Redis password (Docker secrets style); it
	// replaces the password of REDIS_URL, whose user name stays.
	RedisPasswordFile string `env:"GATEWAY_REDIS_PASSWORD_FILE"`
	// PublicURL is the gateway's URL as its callers reach it, e.g.
	// https://api.example.com/hashgate behind a proxy that adds a prefix: problem type URIs
	// are its /problems/{slug} pages. Unset: those pages' paths alone (/problems/validation),
	// which a client resolves against the URL it called.
	PublicURL string `env:"GATEWAY_PUBLIC_URL"`
	// AccessRules names the YAML file of forward auth's access rules (docs/PROXIES.md); unset:
	// none, GET /v1/authorize passes every live credential. Reloaded on change and on SIGHUP.
	AccessRules string `env:"GATEWAY_ACCESS_RULES"`
}

// Durability is GATEWAY_DURABLE_REPLICAS (Replicas: -1 for auto) and GATEWAY_DURABLE_TIMEOUT.
type Durability struct {
	Replicas int
	Timeout  time.Duration
	NoAOF    bool // GATEWAY_DURABLE_AOF=off
	// CredentialsOnly: GATEWAY_DURABLE_WRITES=credentials.
	CredentialsOnly bool
	// UnconfirmedReads: GATEWAY_DURABLE_READS=off.
	UnconfirmedReads bool
}

// maxDurableReplicas bounds GATEWAY_DURABLE_REPLICAS.
const maxDurableReplicas = 16

// Durability reads the durable-write settings (valid once Validate passed).
func (c Config) Durability() Durability {
	n, err := strconv.Atoi(c.DurableReplicas)
	if err != nil || strings.EqualFold(c.DurableReplicas, "auto") {
		n = -1
	}
	return Durability{Replicas: n, Timeout: c.DurableTimeout, NoAOF: strings.EqualFold(c.DurableAOF, "off"),
		CredentialsOnly: strings.EqualFold(c.DurableWrites, "credentials"), UnconfirmedReads: strings.EqualFold(c.DurableReads, "off")}
}

// Embedded reports whether the gateway runs on the embedded store (no REDIS_URL).
func (c Config) Embedded() bool { return strings.TrimSpace(c.RedisURL) == "" }

// Load reads the environment through getenv (os.Getenv when nil), applies defaults and validates.
func Load(getenv func(string) string) (Config, error) {
	return LoadEnv(Env{Lookup: getenv})
}

// LoadEnv reads e (the process environment over an env file's values), applies defaults and
// validates.
func LoadEnv(e Env) (Config, error) {
	var c Config
	var errs []error
	v := reflect.ValueOf(&c).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := f.Tag.Get("env")
		raw, src := e.Get(name)
		isSet := src != SourceDefault
		if !isSet {
			raw = f.Tag.Get("default")
		}
		if raw == "" {
			continue
		}
		if err := set(v.Field(i), raw); err != nil {
			src := "value"
			if !isSet {
				src = "default"
			}
			if f.Tag.Get("secret") != "" {
				errs = append(errs, fmt.Errorf("%s: cannot parse %s", name, src))
			} else {
				errs = append(errs, fmt.Errorf("%s: cannot parse %s %q: %w", name, src, raw, err))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return c, err
	}
	if _, src := e.Get("GATEWAY_ADDR"); src == SourceDefault && c.Embedded() {
		c.Addr = embeddedAddr
	}
	if err := c.readSecretFiles(); err != nil {
		return c, err
	}
	return c, c.Validate()
}

func set(f reflect.Value, raw string) error {
	raw = strings.TrimSpace(raw)
	switch f.Interface().(type) {
	case time.Duration:
		d, err := time.ParseDuration(raw)
		if err != nil {
			return err
		}
		f.SetInt(int64(d))
	case string:
		f.SetString(raw)
	case bool:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return err
		}
		f.SetBool(b)
	case int, int64:
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return err
		}
		f.SetInt(n)
	case float64:
		x, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return err
		}
		f.SetFloat(x)
	default:
		return fmt.Errorf("unsupported field type %s", f.Type())
	}
	return nil
}

func (c *Config) readSecretFiles() error {
	read := func(dst *string, file, name string) error {
		if *dst != "" || file == "" {
			return nil
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("%s_FILE: cannot read %s: %w", name, file, errors.Unwrap(err))
		}
		*dst = strings.TrimSpace(string(b))
		return nil
	}
	var password string
	err := errors.Join(read(&c.SigningKeys, c.SigningKeysFile, "GATEWAY_SIGNING_KEYS"), read(&c.HMACKey, c.HMACKeyFile, "GATEWAY_HMAC_KEY"),
		read(&password, c.RedisPasswordFile, "GATEWAY_REDIS_PASSWORD"))
	if err == nil && password != "" {
		c.RedisURL, err = withPassword(c.RedisURL, password)
	}
	return err
}

// withPassword is the redis URL u with password p (its user name kept): redis://user:p@host.
func withPassword(u, p string) (string, error) {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return "", errors.New("GATEWAY_REDIS_PASSWORD_FILE needs REDIS_URL as redis://[user@]host:port (or rediss://)")
	}
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	user := ""
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		user, _, _ = strings.Cut(authority[:at], ":")
		authority = authority[at+1:]
		if uu, err := url.PathUnescape(user); err == nil {
			user = uu
		}
	}
	return scheme + "://" + url.UserPassword(user, p).String() + "@" + authority + tail, nil
}
