package ratelimit

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/redis/rueidis"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// Limiter counts one attempt at a time in Redis with fixed_window_attempt.lua: the test harness
// of the kit's fixed_window snippet, which production runs only inside the session verify
// scripts (the MFA attempts; request rates are ratesync's).

//go:embed scripts/*.lua
var scriptFS embed.FS

var fixedWindow = rueidis.NewLuaScript(composeScript("fixed_window_attempt"))

// composeScript is scripts/<name>.lua with its snippets put in (repo.ComposeScript).
func composeScript(name string) string {
	files, err := fs.Sub(scriptFS, "scripts")
	if err != nil {
		panic(err)
	}
	body, err := repo.ComposeScript(files, name)
	if err != nil {
		panic(err)
	}
	return body
}

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
