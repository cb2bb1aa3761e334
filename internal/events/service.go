package events

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/page"
)

// Store reads a tenant's stream (internal/repo/eventstore implements it over Redis).
type Store interface {
	// Range returns up to count entries strictly after id ("" for the start), oldest first,
	// and whether the stream holds more after the last one returned.
	Range(ctx context.Context, tenant, after string, count int) ([]Event, bool, error)
	// Wait blocks up to block for entries after id and returns them (none on timeout).
	Wait(ctx context.Context, tenant, after string, count int, block time.Duration) ([]Event, error)
	// Last is the id of the newest entry ("0-0" when the stream is empty).
	Last(ctx context.Context, tenant string) (string, error)
}

// Page bounds.
const (
	DefaultLimit = 50
	MaxLimit     = 100
	// scanFactor bounds the entries one filtered page reads: limit × scanFactor.
	scanFactor = 20
)

// Service answers the reads of the stream. It is safe for concurrent use.
type Service struct{ store Store }

// ErrConfig reports a bad New option.
var ErrConfig = errors.New("events: bad configuration")

// New returns the service over s.
func New(s Store) (*Service, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: no store", ErrConfig)
	}
	return &Service{store: s}, nil
}

// List returns one page of tenant's events after cursor, oldest first, that pass f; next is
// "" when the page reached the end of the stream. cursor is "" (the oldest kept), the next
// cursor of a page of the same tenant and filter, or an event id. A filtered page reads at
// most limit × 20 entries: it may hold fewer than limit events and still have a next cursor.
// The position is a stream id, exact: a walk lists no event twice and skips none.
func (s *Service) List(ctx context.Context, tenant string, f Filter, cursor string, limit int) ([]Event, string, error) {
	scope := f.scope(tenant)
	after, err := listAfter(scope, cursor)
	if err != nil {
		return nil, "", err
	}
	out, next, err := s.list(ctx, tenant, f, after, limit)
	return out, page.Encode(scope, next), err
}

// listAfter is the stream id a List cursor names: an event id is its own.
func listAfter(scope, cursor string) (string, error) {
	if cursor == "" || ValidID(cursor) {
		return cursor, nil
	}
	after, err := page.Decode(scope, cursor)
	if err == nil && !ValidID(after) {
		err = page.BadCursor("names no event")
	}
	return after, err
}

func (s *Service) list(ctx context.Context, tenant string, f Filter, after string, limit int) ([]Event, string, error) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	var out []Event
	for read := 0; read < limit*scanFactor; {
		batch, more, err := s.store.Range(ctx, tenant, after, limit)
		if err != nil {
			return nil, "", err
		}
		read += len(batch)
		for _, e := range batch {
			after = e.ID
			if f.Match(e) {
				out = append(out, e)
				if len(out) == limit {
					if !more && e.ID == batch[len(batch)-1].ID {
						return out, "", nil
					}
					return out, e.ID, nil
				}
			}
		}
		if !more {
			return out, "", nil
		}
	}
	return out, after, nil
}

// Start is where a live stream begins: after last when given (Last-Event-ID), else after the
// newest event now.
func (s *Service) Start(ctx context.Context, tenant, last string) (string, error) {
	if last != "" {
		if !ValidID(last) {
			return "", apperr.New(apperr.Validation, "Last-Event-ID is not an event id (<ms>-<seq>).")
		}
		return last, nil
	}
	return s.store.Last(ctx, tenant)
}

// Next waits up to block for the events after id that pass f and returns them with the id to
// continue from (the last entry read, matched or not).
func (s *Service) Next(ctx context.Context, tenant string, f Filter, after string, max int, block time.Duration) ([]Event, string, error) {
	batch, err := s.store.Wait(ctx, tenant, after, max, block)
	if err != nil {
		return nil, after, err
	}
	out := batch[:0:0]
	for _, e := range batch {
		after = e.ID
		if f.Match(e) {
			out = append(out, e)
		}
	}
	return out, after, nil
}
