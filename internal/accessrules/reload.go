package accessrules

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// DefaultPoll is how often a Holder looks at its file's size and modification time.
const DefaultPoll = 2 * time.Second

// Holder holds the current rule set of a file and reloads it: when the file's size or
// modification time changes (polled: one stat per DefaultPoll) and on SIGHUP. A new file
// that does not parse is logged and counted, and the last good set stays in force.
type Holder struct {
	path    string
	log     *slog.Logger
	current atomic.Pointer[Set]
	reloads metric.Int64Counter
	mu      sync.Mutex // serializes reloads (stamp)
	stamp   fileStamp
}

type fileStamp struct {
	size int64
	mod  time.Time
}

// Open loads the rules file at path (an invalid file fails: the gateway does not start on
// it) and returns its Holder. meter may be nil.
func Open(path string, log *slog.Logger, meter metric.Meter) (*Holder, error) {
	h := &Holder{path: path, log: log}
	if meter != nil {
		c, err := meter.Int64Counter("hashgate_access_rules_reload",
			metric.WithDescription("Reloads of the access rules file by result (ok, invalid)."))
		if err != nil {
			return nil, err
		}
		h.reloads = c
	}
	st, err := stat(path)
	if err != nil {
		return nil, err
	}
	set, err := Load(path)
	if err != nil {
		return nil, err
	}
	h.stamp = st
	h.current.Store(set)
	return h, nil
}

// Current is the rule set in force.
func (h *Holder) Current() *Set { return h.current.Load() }

// Reload reads the file again: its set replaces the current one when valid; otherwise the
// error is logged and counted and the current set is kept.
func (h *Holder) Reload(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	st, _ := stat(h.path)
	set, err := Load(h.path)
	result := "ok"
	if err != nil {
		result = "invalid"
		h.log.ErrorContext(ctx, "access rules: reload refused, the last good set stays in force", "path", h.path, "err", err)
	} else {
		h.current.Store(set)
		h.log.InfoContext(ctx, "access rules reloaded", "path", h.path, "rules", len(set.Rules))
	}
	h.stamp = st
	if h.reloads != nil {
		h.reloads.Add(ctx, 1, metric.WithAttributes(attribute.String("result", result)))
	}
	return err
}

// Watch reloads on a change of the file (polled every poll; 0: DefaultPoll) and on SIGHUP
// until ctx ends. Run it in one goroutine.
func (h *Holder) Watch(ctx context.Context, poll time.Duration) {
	if poll <= 0 {
		poll = DefaultPoll
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			_ = h.Reload(ctx)
		case <-t.C:
			h.mu.Lock()
			last := h.stamp
			h.mu.Unlock()
			if st, err := stat(h.path); err == nil && st != last {
				_ = h.Reload(ctx)
			}
		}
	}
}

func stat(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{size: fi.Size(), mod: fi.ModTime()}, nil
}
