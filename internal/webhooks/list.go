package webhooks

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashgate/hashgate/internal/page"
)

// The webhook lists page with internal/page: each list is read whole (bounded: the tenant's
// webhook quota, a webhook's DefaultRecentDeliveries records) and cut after the cursor's exact
// position, so a walk lists no entry twice and skips none that stays unchanged meanwhile.

// List is one page of the tenant's webhooks, oldest first (by creation time, then id), at
// most limit, after cursor ("" for the first page).
func (s *Service) List(ctx context.Context, tenant, cursor string, limit int) (page.Page[*Webhook], error) {
	scope := "webhooks\x00" + tenant
	if _, err := page.Decode(scope, cursor); err != nil { // before the read: a wrong cursor costs none
		return page.Page[*Webhook]{}, err
	}
	ws, err := s.store.List(ctx, tenant)
	if err != nil {
		return page.Page[*Webhook]{}, err
	}
	slices.SortFunc(ws, func(a, b *Webhook) int { return strings.Compare(webhookPos(a), webhookPos(b)) })
	return page.Of(ws, webhookPos, scope, cursor, limit, false, validPos(ValidID))
}

// Deliveries is one page of the webhook's recent deliveries, newest first (by last change,
// then message id), at most limit, after cursor. A delivery that changes during a walk moves
// ahead of its cursor: it is not listed twice.
func (s *Service) Deliveries(ctx context.Context, tenant, id, cursor string, limit int) (page.Page[Delivery], error) {
	scope := "webhookdeliveries\x00" + tenant + "\x00" + id
	if _, err := page.Decode(scope, cursor); err != nil {
		return page.Page[Delivery]{}, err
	}
	if _, err := s.Get(ctx, tenant, id); err != nil {
		return page.Page[Delivery]{}, err
	}
	ds, err := s.store.Deliveries(ctx, tenant, id)
	if err != nil {
		return page.Page[Delivery]{}, err
	}
	slices.SortFunc(ds, func(a, b Delivery) int { return strings.Compare(deliveryPos(b), deliveryPos(a)) })
	return page.Of(ds, deliveryPos, scope, cursor, limit, true, validPos(func(id string) bool { return id != "" }))
}

// webhookPos is a webhook's position in its tenant's list: creation time (13 digits of Unix
// ms, so the order of the strings is the order of the times), '|', the id.
func webhookPos(w *Webhook) string { return timePos(w.CreatedAt, w.ID) }

// deliveryPos is a delivery's position in its webhook's list: its last change, '|', its
// message id (the records' order in Redis).
func deliveryPos(d Delivery) string { return timePos(d.UpdatedAt, d.MessageID) }

func timePos(t time.Time, id string) string {
	return fmt.Sprintf("%013d|%s", max(t.UnixMilli(), 0), id)
}

// validPos checks a decoded position's shape: 13 digits, '|', an id that validID admits
// (and that holds no '|').
func validPos(validID func(string) bool) func(string) bool {
	return func(pos string) bool {
		ms, id, ok := strings.Cut(pos, "|")
		return ok && len(ms) == 13 && strings.Trim(ms, "0123456789") == "" && !strings.Contains(id, "|") && validID(id)
	}
}
