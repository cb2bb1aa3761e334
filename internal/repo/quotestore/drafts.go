package quotestore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/quotes"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/redis/rueidis"
)

// The replies of the scripts that create, read and delete a draft (each script's header shows
// them); write.go has the write scripts'.
var (
	createReplies = repo.ReplyShapes{repo.CodeOK: 1, repo.CodeExists: 1, repo.CodeQuota: 1} // {'OK'|'EXISTS', HGETALL summary} | {'QUOTA', ms}
	readReplies   = repo.ReplyShapes{repo.CodeOK: 2, repo.CodeNotFound: 0}                  // {'OK', summary, items} | {'NOT_FOUND'}
	deleteReplies = repo.ReplyShapes{repo.CodeOK: 0, repo.CodeNotFound: 0}
)

// Create writes a new DRAFT with zero totals, counted in its tenant's quota in the same script
// (over it: 429 quota-exceeded, nothing written). When in.ID names a draft that already exists
// for the same tenant (an idempotent create retried after a crash), that draft is returned.
func (r *Store) Create(ctx context.Context, in quotes.NewQuote) (*quotes.Quote, error) {
	if in.ID == "" {
		in.ID = quotes.NewID()
	}
	switch { // the key guards; the draft's rules are the service's (quotes.Service.Create)
	case !quoteIDPattern.MatchString(in.ID):
		return nil, apperr.New(apperr.Validation, "The quote id is malformed.")
	case in.Tenant == "":
		return nil, apperr.New(apperr.Unauthenticated, "The caller has no tenant.")
	}
	rep, err := r.writes.Script(ctx, "quote_create", "quote create", scriptCreate, r.quoteKeys(in.Tenant, in.ID),
		[]string{in.ID, in.Tenant, in.CustomerID, in.SalesChannel, in.Currency, repo.FormatMs(r.ttl.Milliseconds()),
			strconv.Itoa(repo.SchemaVersion), strconv.Itoa(quotes.PricingVersion), strconv.Itoa(r.objects.Quota.Limit),
			r.tags(in.CustomerID, quotes.Draft, in.SalesChannel), r.envelope(ctx, in.Tenant)})
	if err != nil {
		return nil, err
	}
	if err := createReplies.Check(rep); err != nil {
		return nil, repo.BadReply(ctx, r.Metrics, "quote_create", err)
	}
	return r.objects.Created(ctx, "quote_create", rep, in.Tenant, in.ID)
}

// Get returns the tenant's quote, or NotFound (also for another tenant's quote).
func (r *Store) Get(ctx context.Context, tenant, id string) (*quotes.Quote, error) {
	if !quoteIDPattern.MatchString(id) {
		return nil, fmt.Errorf("quote get: %w", apperr.NotFound)
	}
	return r.objects.Read(ctx, r.writes, r.quoteKeys(tenant, id)[0], id)
}

// Items returns the quote's line items ordered by item id, with the stateVersion they belong
// to (summary and items are read in one script, so they are consistent).
func (r *Store) Items(ctx context.Context, tenant, id string) ([]quotes.Item, *quotes.Quote, error) {
	if !quoteIDPattern.MatchString(id) {
		return nil, nil, fmt.Errorf("quote items: %w", apperr.NotFound)
	}
	keys := r.quoteKeys(tenant, id)[:2]
	var rep repo.Reply
	err := r.writes.Read(ctx, keys[0], func(c rueidis.Client) (err error) {
		rep, err = repo.RunScript(ctx, c, r.Metrics, "quote_read", "quote items", scriptRead, keys, []string{tenant})
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	if err := readReplies.Check(rep); err != nil {
		return nil, nil, repo.BadReply(ctx, r.Metrics, "quote_read", err)
	}
	if rep.Code() == repo.CodeNotFound {
		r.Metrics.Read(ctx, "quote", repo.Missing)
		return nil, nil, fmt.Errorf("quote items: %w", rep.Err(""))
	}
	q, err := r.objects.DecodeReply(ctx, "quote_read", rep, id)
	if err != nil {
		return nil, nil, err
	}
	raw, err := rep.StrMap(1)
	if err != nil {
		return nil, nil, repo.BadReply(ctx, r.Metrics, "quote_read", err)
	}
	items, err := decodeItems(raw)
	if err != nil {
		r.Metrics.Read(ctx, "quote_items", repo.Corrupt)
		r.Log.ErrorContext(ctx, "corrupt object", "key", "quote:{q_*}:items", "fields", []string{"item"})
		return nil, nil, err
	}
	return items, q, nil
}

// Delete removes the tenant's draft and its items. Unknown ids and other tenants' quotes are
// left alone and answer nil (DELETE is idempotent and must not reveal existence).
func (r *Store) Delete(ctx context.Context, tenant, id string) error {
	if !quoteIDPattern.MatchString(id) {
		return nil
	}
	rep, err := r.writes.Script(ctx, "quote_delete", "quote delete", scriptDelete, r.quoteKeys(tenant, id), []string{tenant, id, r.envelope(ctx, tenant)})
	if err != nil {
		return err
	}
	// {'OK'} deleted | {'NOT_FOUND'} absent or another tenant's (left alone)
	if err := deleteReplies.Check(rep); err != nil {
		return repo.BadReply(ctx, r.Metrics, "quote_delete", err)
	}
	outcome := "ok"
	if rep.Code() == repo.CodeNotFound {
		outcome = "absent"
	}
	r.Metrics.Transition(ctx, "quote", "delete", outcome)
	return nil
}
