// Package quotes is the quote-draft domain: its model (a draft, its line items, its totals),
// the rules a draft's fields and amounts obey, and the service the HTTP operations call. The
// drafts are kept by a Store (internal/repo/quotestore implements it) whose scripts recompute
// the totals and compare versions atomically.
package quotes

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/idempotency"
	"github.com/hashgate/hashgate/internal/page"
)

// Store keeps quote drafts (*quotestore.Store implements it). Writes compare ifMatch with the
// draft's stateVersion (AnyVersion: whatever it is) and answer the draft as written.
type Store interface {
	Create(ctx context.Context, in NewQuote) (*Quote, error)
	Get(ctx context.Context, tenant, id string) (*Quote, error)
	Items(ctx context.Context, tenant, id string) ([]Item, *Quote, error)
	Patch(ctx context.Context, tenant, id string, ifMatch int64, p Patch) (*Quote, error)
	PutItem(ctx context.Context, tenant, id string, ifMatch int64, it Item) (*Quote, error)
	DeleteItem(ctx context.Context, tenant, id, itemID string, ifMatch int64) (*Quote, error)
	Submit(ctx context.Context, tenant, id string, ifMatch int64) (*Quote, error)
	Delete(ctx context.Context, tenant, id string) error
	// List answers one page of q (checked and normalized by the service: Statuses sorted,
	// once each, nil for every status).
	List(ctx context.Context, q ListQuery) (Page, error)
}

// ErrConfig reports a bad New argument.
var ErrConfig = errors.New("quotes: bad configuration")

// Service opens, reads, changes and submits quote drafts. It is safe for concurrent use.
type Service struct {
	store Store
	once  *idempotency.Service
}

// New returns the service over store; once runs idempotent creates.
func New(store Store, once *idempotency.Service) (*Service, error) {
	if store == nil || once == nil {
		return nil, fmt.Errorf("%w: quotes need a store and an idempotency service", ErrConfig)
	}
	return &Service{store: store, once: once}, nil
}

// Create opens a DRAFT with zero totals. With an Idempotency-Key a retry replays the first
// response; render makes that response from the new draft.
func (s *Service) Create(ctx context.Context, in NewQuote, key idempotency.Key,
	render func(*Quote) (idempotency.Response, error)) (idempotency.Result, error) {
	return s.once.Do(ctx, "createQuote", in.Tenant, key, IDs, func(id string) (idempotency.Response, error) {
		in.ID, in.Keyed = id, key.Value != nil
		if err := validateNew(in); err != nil {
			return idempotency.Response{}, err
		}
		q, err := s.store.Create(ctx, in)
		if err != nil {
			return idempotency.Response{}, err
		}
		return render(q)
	})
}

// Get returns the tenant's draft (NotFound for another tenant's).
func (s *Service) Get(ctx context.Context, tenant, id string) (*Quote, error) {
	return s.store.Get(ctx, tenant, id)
}

// Items returns a page of the draft's line items ordered by item id (ascending byte order:
// an id is an exact position, so a walk lists no item twice and skips none that stays), with
// the draft they belong to. The store reads the items whole (a draft holds at most the
// store's item maximum) and the page is cut here.
func (s *Service) Items(ctx context.Context, tenant, id, cursor string, limit int) (page.Page[Item], *Quote, error) {
	scope := "quote-items\x00" + tenant + "\x00" + id
	if _, err := page.Decode(scope, cursor); err != nil { // before the read: a wrong cursor costs none
		return page.Page[Item]{}, nil, err
	}
	items, q, err := s.store.Items(ctx, tenant, id)
	if err != nil {
		return page.Page[Item]{}, nil, err
	}
	pg, err := page.Of(items, func(it Item) string { return it.ID }, scope, cursor, limit, false, itemIDPattern.MatchString)
	return pg, q, err
}

// Patch merge-patches the draft at stateVersion ifMatch.
func (s *Service) Patch(ctx context.Context, tenant, id string, ifMatch int64, p Patch) (*Quote, error) {
	if err := checkWrite("quote patch", id, validatePatch(p)); err != nil {
		return nil, err
	}
	return s.store.Patch(ctx, tenant, id, ifMatch, p)
}

// PutItem adds or replaces a line item at stateVersion ifMatch; the totals are recomputed.
func (s *Service) PutItem(ctx context.Context, tenant, id string, ifMatch int64, it Item) (*Quote, error) {
	if err := checkWrite("quote item put", id, validateItem(it)); err != nil {
		return nil, err
	}
	return s.store.PutItem(ctx, tenant, id, ifMatch, it)
}

// checkWrite is the check of a write to the draft id: NotFound (op names the write) for an id
// no draft can have, else bodyErr, the check of what the write sends.
func checkWrite(op, id string, bodyErr error) error {
	if !ValidID(id) {
		return fmt.Errorf("%s: %w", op, apperr.NotFound)
	}
	return bodyErr
}

// DeleteItem removes a line item at stateVersion ifMatch; the totals are recomputed.
func (s *Service) DeleteItem(ctx context.Context, tenant, id, itemID string, ifMatch int64) (*Quote, error) {
	return s.store.DeleteItem(ctx, tenant, id, itemID, ifMatch)
}

// Submit moves the draft from DRAFT to SUBMITTED at stateVersion ifMatch.
func (s *Service) Submit(ctx context.Context, tenant, id string, ifMatch int64) (*Quote, error) {
	return s.store.Submit(ctx, tenant, id, ifMatch)
}

// Delete removes the tenant's draft and its items; unknown ids answer nil (DELETE is idempotent).
func (s *Service) Delete(ctx context.Context, tenant, id string) error {
	return s.store.Delete(ctx, tenant, id)
}
