package ratesync

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/hashgate/hashgate/internal/flushloop"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/redis/rueidis"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Run sends admissions until ctx ends (one loop per gateway), then sends what is left once.
// The idle counters are swept about once a second.
func (l *Limiter) Run(ctx context.Context) {
	sweepEvery := max(1, int(time.Second/l.o.FlushInterval))
	flushes := 0
	flushloop.Loop{Every: l.o.FlushInterval, Wake: l.kick, Log: l.o.Logger,
		Flush: func(ctx context.Context, _ bool) error { return l.Flush(ctx) },
		After: func() {
			if flushes%sweepEvery == 0 {
				l.sweep()
			}
			flushes++
		},
		Failing:   "rate-limit counts not sent: each replica enforces the limits on its own admissions until Redis answers; counts kept for the next flush",
		Recovered: "rate-limit counts sent again"}.Run(ctx)
}

type flushItem struct {
	c      *counter
	window int64
	n      int64
}

// args are window_add.lua's ARGV for it: window start, window, buffer (ms), count.
func (it flushItem) args() []string {
	return []string{strconv.FormatInt(it.window, 10), strconv.FormatInt(it.c.p.Window.Milliseconds(), 10),
		strconv.FormatInt(it.c.p.Buffer().Milliseconds(), 10), strconv.FormatInt(it.n, 10)}
}

// Flush adds every listed counter's decisions to the decisions metric, then sends their unsent
// admissions in one batch (one round trip per Redis node) and takes the totals Redis answers.
// On error the admissions are kept and sent next time. When it returns nil, everything
// admitted before the call is in Redis. With nothing listed it calls nothing.
func (l *Limiter) Flush(ctx context.Context) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.dirtyMu.Lock()
	batch := l.dirty
	l.dirty = nil
	l.dirtyMu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	items := make([]flushItem, 0, len(batch))
	cmds := make(rueidis.Commands, 0, len(batch))
	for _, c := range batch {
		c.mu.Lock()
		c.dirty = false
		allowed, limited := c.allowedN, c.limitedN
		c.allowedN, c.limitedN = 0, 0
		if c.unsent > 0 {
			it := flushItem{c: c, window: c.window, n: c.unsent}
			c.sent += c.unsent
			c.unsent = 0
			items = append(items, it)
			cmds = append(cmds, l.client.B().Evalsha().Sha1(windowAddSHA).Numkeys(1).Key(c.key).Arg(it.args()...).Build())
		}
		c.mu.Unlock()
		if allowed > 0 {
			l.decisions.Add(ctx, allowed, c.allowed)
		}
		if limited > 0 {
			l.decisions.Add(ctx, limited, c.limited)
		}
	}
	if len(cmds) == 0 {
		return nil
	}
	sent := l.now().UnixMilli()
	res := l.windowAdd(ctx, items, cmds)
	received := l.now().UnixMilli()
	// The batch returns with its slowest node: a reply ran somewhere between sent and received,
	// so its server time dates the local clock only as closely as the batch was quick. A quick
	// batch, or the quickest yet (a Redis far away), sets the offset.
	rtt := received - sent
	clockSample := rtt <= clockSampleMaxRTT.Milliseconds() || rtt < l.clockRTT.Load()
	if clockSample {
		l.clockRTT.Store(min(rtt, l.clockRTT.Load()))
	}
	var firstErr error
	for i, it := range items {
		total, srvNow, err := parseWindowAdd(res[i])
		c := it.c
		c.mu.Lock()
		if c.window == it.window {
			c.sent -= it.n
			if err != nil {
				c.unsent += it.n // send again next time
				l.markDirty(c)
			} else {
				c.global = total
			}
		}
		c.mu.Unlock()
		if err != nil {
			firstErr = cmpErr(firstErr, err)
			continue
		}
		if clockSample {
			l.offset.Store(srvNow - (sent+received)/2)
		}
	}
	return firstErr
}

// clockSampleMaxRTT is the slowest flush whose replies set the offset to the server's clock
// (off by at most half of it), unless none was quicker. A slower one keeps the offset a quick
// one took: one late node
// in a batch (a cut-off master answering at the Redis timeout) would set the windows behind
// by its delay, and replicas would count into different windows.
const clockSampleMaxRTT = 50 * time.Millisecond

// windowAdd runs window_add.lua for each item (cmds: its EVALSHA), one round trip per node,
// and runs again with EVAL the ones a node answered NOSCRIPT (a promoted replica, a node added
// since the scripts were loaded). It goes through the store's client, which bounds each call by
// the Redis timeout: rueidis' Lua.ExecMulti first loads the script on every node it knows
// through their own clients, outside that bound, so one node that accepts and never answers
// (a crashed cluster master) held the flush, and every later one, for ever.
func (l *Limiter) windowAdd(ctx context.Context, items []flushItem, cmds rueidis.Commands) []rueidis.RedisResult {
	res := l.client.DoMulti(ctx, cmds...)
	var again rueidis.Commands
	var at []int
	for i, r := range res {
		if e, ok := rueidis.IsRedisErr(r.Error()); ok && e.IsNoScript() {
			again = append(again, l.client.B().Eval().Script(windowAddBody).Numkeys(1).Key(items[i].c.key).Arg(items[i].args()...).Build())
			at = append(at, i)
		}
	}
	if len(again) > 0 {
		for j, r := range l.client.DoMulti(ctx, again...) {
			res[at[j]] = r
		}
	}
	return res
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// parseWindowAdd reads {'OK', total, serverNowMs}.
func parseWindowAdd(r rueidis.RedisResult) (total, now int64, err error) {
	vals, err := r.ToArray()
	if err != nil {
		return 0, 0, fmt.Errorf("ratelimit flush: %w", store.Classify(err))
	}
	if len(vals) != 3 {
		return 0, 0, fmt.Errorf("ratelimit flush: unexpected reply of %d values", len(vals))
	}
	if code, err := vals[0].ToString(); err != nil || code != "OK" {
		return 0, 0, fmt.Errorf("ratelimit flush: unexpected reply code %q", code)
	}
	if total, err = vals[1].AsInt64(); err == nil {
		now, err = vals[2].AsInt64()
	}
	if err != nil || total < 0 {
		return 0, 0, fmt.Errorf("ratelimit flush: unexpected reply: %v", err)
	}
	return total, now, nil
}

// sweep drops the counters whose window has ended with nothing left to send, so the table
// holds only counters in use.
func (l *Limiter) sweep() {
	srv := l.now().UnixMilli() + l.offset.Load()
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, c := range l.counters {
		c.mu.Lock()
		idle := c.unsent == 0 && c.sent == 0 && !c.dirty && c.window+c.p.Window.Milliseconds() <= srv
		c.mu.Unlock()
		if idle {
			delete(l.counters, k)
		}
	}
}

// decisionAttrs are the attributes of a decision by policy and outcome.
func decisionAttrs(policy string, allowed bool) metric.AddOption {
	outcome := "allowed"
	if !allowed {
		outcome = "limited"
	}
	return metric.WithAttributeSet(attribute.NewSet(attribute.String("policy", policy), attribute.String("outcome", outcome)))
}
