package config

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Validate checks ranges and the settings that depend on each other.
func (c Config) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(c.Addr != "", "GATEWAY_ADDR must not be empty")
	check(c.AdminAddr != "" && (c.AdminAddr != c.Addr || strings.HasSuffix(c.Addr, ":0")), "GATEWAY_ADMIN_ADDR must be an address other than GATEWAY_ADDR, or off")
	check(c.RedisTimeout >= 10*time.Millisecond && c.RedisTimeout <= time.Minute, "GATEWAY_REDIS_TIMEOUT must be within 10ms..1m")
	check(c.RedisStartTimeout >= 0 && c.RedisStartTimeout <= time.Hour, "GATEWAY_REDIS_START_TIMEOUT must be within 0..1h (0: no waiting)")
	if n, err := strconv.Atoi(c.DurableReplicas); !strings.EqualFold(c.DurableReplicas, "auto") && (err != nil || n < 0 || n > maxDurableReplicas) {
		errs = append(errs, fmt.Errorf("GATEWAY_DURABLE_REPLICAS must be auto or 0..%d", maxDurableReplicas))
	}
	check(strings.EqualFold(c.DurableAOF, "auto") || strings.EqualFold(c.DurableAOF, "off"), "GATEWAY_DURABLE_AOF must be auto or off")
	check(strings.EqualFold(c.DurableWrites, "all") || strings.EqualFold(c.DurableWrites, "credentials"), "GATEWAY_DURABLE_WRITES must be all or credentials")
	check(strings.EqualFold(c.DurableReads, "all") || strings.EqualFold(c.DurableReads, "off"), "GATEWAY_DURABLE_READS must be all or off")
	check(c.DurableTimeout >= 10*time.Millisecond && c.DurableTimeout <= time.Minute, "GATEWAY_DURABLE_TIMEOUT must be within 10ms..1m")
	check(c.KeyPrefix != "" && !strings.ContainsAny(c.KeyPrefix, ":{} \t\n"), "GATEWAY_KEY_PREFIX must be non-empty without ':', '{', '}' or spaces")
	switch strings.ToLower(c.LogLevel) {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("GATEWAY_LOG_LEVEL must be debug, info, warn or error"))
	}
	if !c.Embedded() {
		check(c.SigningKeys != "", "GATEWAY_SIGNING_KEYS is required with REDIS_URL (generate one with `gateway keygen`)")
		check(c.HMACKey != "", "GATEWAY_HMAC_KEY is required with REDIS_URL (generate one with `gateway keygen`)")
	}
	check(c.JWTIssuer != "" && c.JWTAudience != "", "GATEWAY_JWT_ISSUER and GATEWAY_JWT_AUDIENCE must not be empty")
	check(c.BootstrapTenant != "" && len(c.BootstrapTenant) <= 64, "GATEWAY_BOOTSTRAP_TENANT must be 1..64 characters")
	check(c.BootstrapTokenTTL >= time.Minute && c.BootstrapTokenTTL <= c.TokenMaxTTL, "GATEWAY_BOOTSTRAP_TOKEN_TTL must be within 1m..GATEWAY_TOKEN_MAX_TTL")
	check(c.TokenMaxTTL >= time.Minute, "GATEWAY_TOKEN_MAX_TTL must be at least 1m")
	check(c.TokenSafetyWindow >= 0 && c.TokenSafetyWindow <= 24*time.Hour, "GATEWAY_TOKEN_SAFETY_WINDOW must be within 0..24h")
	check(c.TokenCacheTTL >= 0 && c.TokenCacheTTL <= 5*time.Minute, "GATEWAY_TOKEN_CACHE_TTL must be within 0..5m")
	check(c.SessionIdleTimeout >= time.Second, "GATEWAY_SESSION_IDLE_TIMEOUT must be at least 1s")
	check(c.SessionAbsoluteTimeout >= c.SessionIdleTimeout, "GATEWAY_SESSION_ABSOLUTE_TIMEOUT must be at least the idle timeout")
	check(c.SessionRefreshFraction > 0 && c.SessionRefreshFraction < 1, "GATEWAY_SESSION_REFRESH_FRACTION must be within (0, 1)")
	check(c.SessionMaxPerUser >= 1 && c.SessionMaxPerUser <= 1000, "GATEWAY_SESSION_MAX_PER_USER must be within 1..1000")
	check(c.SessionLimitPolicy == "evict-oldest" || c.SessionLimitPolicy == "refuse", "GATEWAY_SESSION_LIMIT_POLICY must be evict-oldest or refuse")
	check(c.SessionEvents == "all" || c.SessionEvents == "ends" || c.SessionEvents == "off", "GATEWAY_SESSION_EVENTS must be all, ends or off")
	check(c.SessionLayout == "" || c.SessionLayout == "per-user" || c.SessionLayout == "per-session", "GATEWAY_SESSION_LAYOUT must be per-user or per-session")
	check(c.SessionCacheTTL >= 0 && c.SessionCacheTTL <= time.Minute, "GATEWAY_SESSION_CACHE_TTL must be within 0..1m")
	check(c.RedisClientCacheBytes >= 64<<10 && c.RedisClientCacheBytes <= 4<<30, "GATEWAY_REDIS_CLIENT_CACHE_BYTES must be within 65536..4294967296 (64 KiB..4 GiB)")
	check(c.RedisClientTracking == "bcast" || c.RedisClientTracking == "default", "GATEWAY_REDIS_CLIENT_TRACKING must be bcast or default")
	check(c.SessionCacheEntries >= 0 && c.SessionCacheEntries <= 10_000_000, "GATEWAY_SESSION_CACHE_ENTRIES must be within 0..10000000")
	check(c.SessionNegativeCacheTTL >= 0 && c.SessionNegativeCacheTTL <= time.Minute, "GATEWAY_SESSION_NEGATIVE_CACHE_TTL must be within 0..1m")
	check(c.SessionNegativeCacheEntries >= 0 && c.SessionNegativeCacheEntries <= 10_000_000, "GATEWAY_SESSION_NEGATIVE_CACHE_ENTRIES must be within 0..10000000")
	check(c.TokenVerifyCacheEntries >= 0 && c.TokenVerifyCacheEntries <= 10_000_000, "GATEWAY_TOKEN_VERIFY_CACHE_ENTRIES must be within 0..10000000")
	check(c.RecentWritesMax >= 1024 && c.RecentWritesMax <= 10_000_000, "GATEWAY_RECENT_WRITES_MAX must be within 1024..10000000")
	for name, v := range map[string]string{"GATEWAY_RATE_LIMIT_PER_TOKEN": c.RateLimitPerToken,
		"GATEWAY_RATE_LIMIT_PER_TENANT": c.RateLimitPerTenant, "GATEWAY_RATE_LIMIT_PER_SESSION": c.RateLimitPerSession} {
		_, _, err := ParseRate(v)
		check(err == nil, "%s: %v", name, err)
	}
	check(c.RateLimitFlushInterval >= time.Millisecond && c.RateLimitFlushInterval <= 10*time.Second, "GATEWAY_RATE_LIMIT_FLUSH_INTERVAL must be within 1ms..10s")
	check(c.RateLimitSyncShare > 0 && c.RateLimitSyncShare <= 1, "GATEWAY_RATE_LIMIT_SYNC_SHARE must be within (0, 1]")
	check(c.RateLimitMaxCounters >= 100 && c.RateLimitMaxCounters <= 10_000_000, "GATEWAY_RATE_LIMIT_MAX_COUNTERS must be within 100..10000000")
	check(c.MFAChallengeTTL >= time.Second && c.MFAChallengeTTL <= time.Hour, "GATEWAY_MFA_CHALLENGE_TTL must be within 1s..1h")
	check(c.MFAMaxAttempts >= 1 && c.MFAMaxAttempts <= 100, "GATEWAY_MFA_MAX_ATTEMPTS must be within 1..100")
	check(c.MFAWindow >= time.Second && c.MFAWindow <= 24*time.Hour, "GATEWAY_MFA_WINDOW must be within 1s..24h")
	check(c.QuoteTTL >= time.Minute, "GATEWAY_QUOTE_TTL must be at least 1m")
	check(c.QuoteMaxItems >= 1 && c.QuoteMaxItems <= 1000, "GATEWAY_QUOTE_MAX_ITEMS must be within 1..1000")
	check(c.IdempotencyTTL >= time.Minute && c.IdempotencyTTL <= 7*24*time.Hour, "GATEWAY_IDEMPOTENCY_TTL must be within 1m..168h")
	check(c.TenantMaxTokens >= 1 && c.TenantMaxTokens <= 10000, "GATEWAY_TENANT_MAX_TOKENS must be within 1..10000")
	check(c.TenantMaxIdempotencyKeys >= 1 && c.TenantMaxIdempotencyKeys <= 1000000, "GATEWAY_TENANT_MAX_IDEMPOTENCY_KEYS must be within 1..1000000")
	check(c.TenantMaxQuotes >= 1 && c.TenantMaxQuotes <= 100000, "GATEWAY_TENANT_MAX_QUOTES must be within 1..100000")
	check(c.TenantMaxCases >= 1 && c.TenantMaxCases <= 100000, "GATEWAY_TENANT_MAX_CASES must be within 1..100000")
	check(c.CaseMaxEscalation >= 1 && c.CaseMaxEscalation <= 10, "GATEWAY_CASE_MAX_ESCALATION must be within 1..10")
	check(c.CaseResolvedTTL >= time.Minute && c.CaseOpenTTL >= time.Hour, "GATEWAY_CASE_RESOLVED_TTL ≥ 1m and GATEWAY_CASE_OPEN_TTL ≥ 1h")
	check(c.CaseHistoryMax >= 1 && c.CaseHistoryMax <= 10000, "GATEWAY_CASE_HISTORY_MAX must be within 1..10000")
	check(c.CaseSweepInterval >= 100*time.Millisecond, "GATEWAY_CASE_SWEEP_INTERVAL must be at least 100ms")
	check(c.EventsMaxAge >= time.Hour && c.EventsMaxAge <= 30*24*time.Hour, "GATEWAY_EVENTS_MAX_AGE must be within 1h..720h")
	check(c.EventsMaxLen >= 100 && c.EventsMaxLen <= 1000000, "GATEWAY_EVENTS_MAX_LEN must be within 100..1000000")
	check(c.EventsRelayInterval >= 100*time.Millisecond, "GATEWAY_EVENTS_RELAY_INTERVAL must be at least 100ms")
	check(c.EventsKeepAlive >= time.Second && c.EventsKeepAlive <= 5*time.Minute, "GATEWAY_EVENTS_KEEPALIVE must be within 1s..5m")
	check(c.EventsRefusalWindow >= time.Second && c.EventsRefusalWindow <= time.Hour, "GATEWAY_EVENTS_REFUSAL_WINDOW must be within 1s..1h")
	check(c.WebhookRetryBase >= 100*time.Millisecond && c.WebhookRetryBase <= time.Hour, "GATEWAY_WEBHOOK_RETRY_BASE must be within 100ms..1h")
	check(c.WebhookRetryWindow >= 24*time.Hour && c.WebhookRetryWindow <= 7*24*time.Hour, "GATEWAY_WEBHOOK_RETRY_WINDOW must be within 24h..168h")
	check(c.WebhookTimeout >= time.Second && c.WebhookTimeout <= time.Minute, "GATEWAY_WEBHOOK_TIMEOUT must be within 1s..1m")
	check(c.WebhookTTL >= time.Hour, "GATEWAY_WEBHOOK_TTL must be at least 1h")
	check(c.TenantMaxWebhooks >= 1 && c.TenantMaxWebhooks <= 100, "GATEWAY_TENANT_MAX_WEBHOOKS must be within 1..100")
	check(c.BodyLimitBytes >= 1024 && c.BodyLimitBytes <= 10<<20, "GATEWAY_BODY_LIMIT_BYTES must be within 1KiB..10MiB")
	check(c.ReadHeaderTimeout > 0 && c.ReadTimeout > 0 && c.WriteTimeout > 0 && c.IdleTimeout > 0, "HTTP timeouts must be positive")
	check(c.ShutdownTimeout > 0, "GATEWAY_SHUTDOWN_TIMEOUT must be positive")
	check(c.RetryAfter >= time.Second, "GATEWAY_RETRY_AFTER must be at least 1s")
	check(c.PublicURL == "" || validPublicURL(c.PublicURL), "GATEWAY_PUBLIC_URL must be an absolute http(s) URL without query or fragment, e.g. https://api.example.com/hashgate")
	return errors.Join(errs...)
}

// validPublicURL: http or https, a host, no user, query or fragment.
func validPublicURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil &&
		u.RawQuery == "" && !u.ForceQuery && u.Fragment == "" && !strings.Contains(s, "#")
}

// ParseRate reads a request-rate limit, "<requests>/<window>" with a Go duration window of at
// least a second (6000/1m, 100/10s, 1000000/24h); "0" (or "off") is no limit: n = 0.
func ParseRate(s string) (n int, window time.Duration, err error) {
	s = strings.TrimSpace(s)
	if s == "0" || strings.EqualFold(s, "off") {
		return 0, 0, nil
	}
	count, win, ok := strings.Cut(s, "/")
	if ok {
		n, err = strconv.Atoi(count)
		if err == nil {
			window, err = time.ParseDuration(win)
		}
	}
	switch {
	case !ok || err != nil:
		return 0, 0, fmt.Errorf("%q is not <requests>/<window> (e.g. 6000/1m) or 0", s)
	case n < 1 || n > 1_000_000_000:
		return 0, 0, fmt.Errorf("%q: requests must be within 1..1000000000", s)
	case window < time.Second || window > 24*time.Hour:
		return 0, 0, fmt.Errorf("%q: the window must be within 1s..24h", s)
	}
	return n, window, nil
}
