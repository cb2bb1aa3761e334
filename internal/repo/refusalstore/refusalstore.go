// Package refusalstore keeps the shared totals of refused requests in Redis for the refusal
// events (internal/events Refusals, implementing its RefusalStore): every gateway adds its
// count of a window to one small hash under the tenant's tag, and the first call after the
// window's grace writes the window's one event to the tenant's stream, in the same script
// (refusal_window.lua). Keys (docs/KEYS.md "Events"):
//
//	<prefix>:v1:refusals:{<tenantTag>}:<windowTag>   HASH  count, writtenMs, schemaVersion, createdAtMs, updatedAtMs
//	<prefix>:v1:events:{<tenantTag>}                 STREAM the tenant's events
//
// windowTag is a keyed hash of the type, tenant, subject, limit and window start: no raw id in
// the key.
package refusalstore

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/store"
)

//go:embed *.lua
var scripts embed.FS

const scriptName = "refusal_window"

var windowScript = repo.LoadScript(scripts, scriptName)

// replies are refusal_window.lua's: the event id and the server's time, or the time alone.
var replies = repo.ReplyShapes{repo.CodeOK: 2, repo.CodeNotDue: 1, repo.CodeAlready: 1}

// Options configure New.
type Options struct {
	Prefix string
	// Hasher derives the tenant's tag and the window's; required.
	Hasher *keyhash.Hasher
	// Retention bounds the tenant's stream (the events' append trims it).
	Retention events.Retention
	Metrics   *repo.Metrics
}

// Store adds refusal counts and writes their events.
type Store struct {
	repo.Base
	retention events.Retention
}

var _ events.RefusalStore = (*Store)(nil)

// New returns the store over s.
func New(s *store.Store, o Options) (*Store, error) {
	base, err := repo.NewBase("refusals", s, o.Prefix, o.Hasher, o.Metrics, nil)
	if err != nil {
		return nil, err
	}
	if o.Retention.MaxAge <= 0 || o.Retention.MaxLen <= 0 {
		return nil, fmt.Errorf("%w: events retention must be positive", repo.ErrBadOptions)
	}
	return &Store{Base: base, retention: o.Retention}, nil
}

// Key is the window's total: <prefix>:v1:refusals:{<tenantTag>}:<windowTag>.
func (s *Store) Key(w events.RefusalWindow) string {
	start := strconv.FormatInt(w.StartMs, 10)
	return s.Keys.Key("refusals", s.Hasher.TenantTag(w.Tenant),
		s.Hasher.Tag("refusal-window", 12, string(w.Type), w.Tenant, w.Subject, w.Name, start))
}

// Add adds n to w's total and writes its event once due (refusal_window.lua).
func (s *Store) Add(ctx context.Context, w events.RefusalWindow, n int64) (events.RefusalOutcome, int64, error) {
	data, err := json.Marshal(w.Data())
	if err != nil {
		return 0, 0, err
	}
	keys := []string{s.Key(w), s.Keys.EventStream(s.Hasher.TenantTag(w.Tenant))}
	args := []string{events.EnvelopeOf(w.Tenant, w.Actor, w.RequestID, w.TraceID, s.retention), string(w.Type), w.Subject,
		string(data), repo.FormatMs(w.StartMs), repo.FormatMs(w.Length.Milliseconds()), repo.FormatMs(w.DueMs),
		repo.FormatMs(w.ExpireMs), strconv.FormatInt(n, 10)}
	rep, err := repo.RunScript(ctx, s.Client, s.Metrics, scriptName, "refusal add", windowScript, keys, args)
	if err != nil {
		return 0, 0, err
	}
	if err := replies.Check(rep); err != nil {
		return 0, 0, repo.BadReply(ctx, s.Metrics, scriptName, err)
	}
	out := map[repo.Code]events.RefusalOutcome{repo.CodeOK: events.RefusalWritten, repo.CodeNotDue: events.RefusalPending,
		repo.CodeAlready: events.RefusalAlready}[rep.Code()]
	now, err := rep.Int(rep.Len() - 1)
	if err != nil {
		return 0, 0, repo.BadReply(ctx, s.Metrics, scriptName, err)
	}
	return out, now, nil
}
