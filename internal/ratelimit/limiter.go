package ratelimit

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/store"
)

//go:embed scripts/*.lua
var scriptFS embed.FS

var fixedWindowBody = mustRead("scripts/fixed_window.lua")

var fixedWindow = rueidis.NewLuaScript(fixedWindowBody)

func mustRead(name string) string {
	b, err := scriptFS.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("ratelimit: missing script %s: %v", name, err))
	}
	return string(b)
}

const (
	luaBegin = "-- BEGIN fixed_window\n"
	luaEnd   = "-- END fixed_window\n"
)

// FixedWindowLua is the counter as a Lua function, fixed_window(key, nowMs, windowMs, bufferMs,
// limit) → allowed (1|0), count, resetMs, between its BEGIN and END marker lines. Scripts that
// count an attempt atomically with other work embed exactly this text.
func FixedWindowLua() string {
	i := strings.Index(fixedWindowBody, luaBegin)
	j := strings.Index(fixedWindowBody, luaEnd)
	if i < 0 || j < i {
		panic("ratelimit: fixed_window markers missing")
	}
	return fixedWindowBody[i : j+len(luaEnd)]
}

// ScriptBodies returns the package's scripts, for store.LoadScripts at start.
func ScriptBodies() []string { return []string{fixedWindowBody, windowAddBody} }

// Limiter counts attempts per identifier under one policy.
type Limiter struct {
	client    rueidis.Client
	prefix    string
	hasher    *keyhash.Hasher
	policy    Policy
	decisions metric.Int64Counter
}

// ErrBadLimiter reports a missing dependency.
var ErrBadLimiter = errors.New("ratelimit: bad limiter options")

// NewLimiter returns a limiter over s for policy p; keys start with prefix. meter may be nil.
func NewLimiter(s *store.Store, prefix string, h *keyhash.Hasher, p Policy, meter metric.Meter) (*Limiter, error) {
	if s == nil || s.Client == nil || h == nil {
		return nil, fmt.Errorf("%w: store and hasher are required", ErrBadLimiter)
	}
	if prefix == "" || strings.ContainsAny(prefix, ":{} ") {
		return nil, fmt.Errorf("%w: prefix must be non-empty without ':', '{', '}' or spaces", ErrBadLimiter)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if meter == nil {
		meter = noop.NewMeterProvider().Meter("ratelimit")
	}
	c, err := NewDecisionCounter(meter)
	if err != nil {
		return nil, err
	}
	return &Limiter{client: s.Client, prefix: prefix, hasher: h, policy: p, decisions: c}, nil
}

// NewDecisionCounter is the instrument counting rate-limit decisions by policy and outcome
// (allowed, limited); the MFA verification path records into the same one.
func NewDecisionCounter(m metric.Meter) (metric.Int64Counter, error) {
	return m.Int64Counter("hashgate_ratelimit_decisions", metric.WithDescription("Rate-limit decisions by policy and outcome."))
}

// decisionAttrs are the attributes of a decision by policy and outcome.
func decisionAttrs(policy string, allowed bool) metric.AddOption {
	outcome := "allowed"
	if !allowed {
		outcome = "limited"
	}
	return metric.WithAttributeSet(attribute.NewSet(attribute.String("policy", policy), attribute.String("outcome", outcome)))
}

// Record counts d on c (nil-safe).
func Record(ctx context.Context, c metric.Int64Counter, d Decision) {
	if c == nil {
		return
	}
	outcome := "allowed"
	if !d.Allowed {
		outcome = "limited"
	}
	c.Add(ctx, 1, metric.WithAttributes(attribute.String("policy", d.Policy.Name), attribute.String("outcome", outcome)))
}

// Allow counts one attempt for identifier (hashed with the policy name before it reaches a
// key) and reports whether it is within the limit.
func (l *Limiter) Allow(ctx context.Context, identifier string) (Decision, error) {
	return l.AllowTag(ctx, l.hasher.Tag("rl", 9, l.policy.Name, identifier))
}

// AllowTag is Allow for an identifier that is already a keyed tag (e.g. a user tag), so the
// counter shares that tag's slot.
func (l *Limiter) AllowTag(ctx context.Context, tag string) (Decision, error) {
	p := l.policy
	args := []string{
		strconv.FormatInt(p.Window.Milliseconds(), 10),
		strconv.FormatInt(p.Buffer().Milliseconds(), 10),
		strconv.Itoa(p.Limit),
	}
	res, err := fixedWindow.Exec(ctx, l.client, []string{Key(l.prefix, tag, p.Name)}, args).AsIntSlice()
	if err != nil {
		return Decision{}, fmt.Errorf("ratelimit %s: %w", p.Name, store.Classify(err))
	}
	d, err := ParseReply(p, res)
	if err != nil {
		return Decision{}, err
	}
	Record(ctx, l.decisions, d)
	return d, nil
}

// ParseReply turns the fixed_window reply {allowed, count, resetMs} into a Decision.
func ParseReply(p Policy, r []int64) (Decision, error) {
	if len(r) != 3 || r[0] < 0 || r[0] > 1 || r[1] < 0 || r[2] < 0 {
		return Decision{}, fmt.Errorf("ratelimit %s: unexpected script reply %v", p.Name, r)
	}
	return Decision{Policy: p, Allowed: r[0] == 1, Count: int(r[1]), Reset: time.Duration(r[2]) * time.Millisecond}, nil
}
