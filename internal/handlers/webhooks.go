package handlers

import (
	"context"
	"strings"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/page"
	"github.com/hashgate/hashgate/internal/webhooks"
)

// WebhookService is what the webhooks operations call (*webhooks.Service implements it).
type WebhookService interface {
	Create(ctx context.Context, tenant, url string, events []string) (webhooks.Created, error)
	Get(ctx context.Context, tenant, id string) (*webhooks.Webhook, error)
	List(ctx context.Context, tenant, cursor string, limit int) (page.Page[*webhooks.Webhook], error)
	Delete(ctx context.Context, tenant, id string) error
	Deliveries(ctx context.Context, tenant, id, cursor string, limit int) (page.Page[webhooks.Delivery], error)
	Ping(ctx context.Context, tenant, id string) (webhooks.Delivery, error)
}

var _ WebhookService = (*webhooks.Service)(nil)

// CreateWebhook registers a webhook and shows its signing secret once.
func (s *Server) CreateWebhook(ctx context.Context, request CreateWebhookRequestObject) (CreateWebhookResponseObject, error) {
	p, err := s.eventsCaller(ctx, apperr.Conflict, "a webhook would receive none")
	if err != nil {
		return nil, err
	}
	if err := s.checkSessionTypes(request.Body.Events); err != nil {
		return nil, err
	}
	c, err := s.Webhooks.Create(ctx, p.Tenant, request.Body.Url, request.Body.Events)
	if err != nil {
		return nil, err
	}
	v := webhookView(c.Webhook)
	loc := "/v1/webhooks/" + c.ID
	return CreateWebhook201JSONResponse{Body: WebhookCreated{WebhookId: v.WebhookId, Url: v.Url, Events: v.Events,
		CreatedAt: v.CreatedAt, ExpiresAt: v.ExpiresAt, Secret: c.Secret},
		Headers: CreateWebhook201ResponseHeaders{Location: &loc, CacheControl: &noStore}}, nil
}

// ListWebhooks answers one page of the tenant's webhooks, oldest first.
func (s *Server) ListWebhooks(ctx context.Context, request ListWebhooksRequestObject) (ListWebhooksResponseObject, error) {
	pg, err := s.Webhooks.List(ctx, caller(ctx).Tenant, deref(request.Params.Cursor), pageSize(request.Params.Limit))
	if err != nil {
		return nil, err
	}
	out := WebhookList{Items: views(pg.Items, webhookView), NextCursor: stringOrNil(pg.NextCursor)}
	return ListWebhooks200JSONResponse{Body: out, Headers: ListWebhooks200ResponseHeaders{Link: nextLink(ctx, pg.NextCursor)}}, nil
}

// GetWebhook answers one webhook (never its secret).
func (s *Server) GetWebhook(ctx context.Context, request GetWebhookRequestObject) (GetWebhookResponseObject, error) {
	w, err := s.Webhooks.Get(ctx, caller(ctx).Tenant, request.WebhookId)
	if err != nil {
		return nil, err
	}
	return GetWebhook200JSONResponse{Body: webhookView(w)}, nil
}

// DeleteWebhook removes a webhook (idempotent).
func (s *Server) DeleteWebhook(ctx context.Context, request DeleteWebhookRequestObject) (DeleteWebhookResponseObject, error) {
	return DeleteWebhook204Response{}, s.Webhooks.Delete(ctx, caller(ctx).Tenant, request.WebhookId)
}

// PingWebhook sends a signed webhook.ping now and answers the attempt.
func (s *Server) PingWebhook(ctx context.Context, request PingWebhookRequestObject) (PingWebhookResponseObject, error) {
	d, err := s.Webhooks.Ping(ctx, caller(ctx).Tenant, request.WebhookId)
	if err != nil {
		return nil, err
	}
	return PingWebhook200JSONResponse{Body: deliveryView(d)}, nil
}

// ListWebhookDeliveries answers one page of the webhook's recent deliveries, newest first.
func (s *Server) ListWebhookDeliveries(ctx context.Context, request ListWebhookDeliveriesRequestObject) (ListWebhookDeliveriesResponseObject, error) {
	pg, err := s.Webhooks.Deliveries(ctx, caller(ctx).Tenant, request.WebhookId, deref(request.Params.Cursor), pageSize(request.Params.Limit))
	if err != nil {
		return nil, err
	}
	out := WebhookDeliveries{Items: views(pg.Items, deliveryView), NextCursor: stringOrNil(pg.NextCursor)}
	return ListWebhookDeliveries200JSONResponse{Body: out, Headers: ListWebhookDeliveries200ResponseHeaders{Link: nextLink(ctx, pg.NextCursor)}}, nil
}

func webhookView(w *webhooks.Webhook) Webhook {
	return Webhook{WebhookId: w.ID, Url: w.URL, Events: w.Events, CreatedAt: ts(w.CreatedAt), ExpiresAt: ts(w.ExpiresAt)}
}

func deliveryView(d webhooks.Delivery) WebhookDelivery {
	v := WebhookDelivery{MessageId: d.MessageID, EventType: stringOrNil(d.EventType), Status: WebhookDeliveryStatus(d.Status),
		Attempts: d.Attempts, LastError: stringOrNil(d.LastError), UpdatedAt: ts(d.UpdatedAt)}
	if d.StatusCode != 0 {
		v.StatusCode = &d.StatusCode
	}
	if d.Status == webhooks.StatusPending {
		v.NextAttemptAt = tsOrNil(d.NextAttemptAt)
	}
	return v
}

// checkSessionTypes refuses a webhook that names session event types this gateway does not
// write (GATEWAY_SESSION_EVENTS): it would never receive them. The session.* prefix needs all
// of them; "*" and other types register.
func (s *Server) checkSessionTypes(types []string) error {
	if s.SessionEvents == events.SessionEventsAll {
		return nil
	}
	for _, t := range types {
		if !strings.HasPrefix(t, "session.") || s.SessionEvents.Writes(events.Type(t)) {
			continue
		}
		if s.SessionEvents == events.SessionEventsEnds {
			return apperr.Newf(apperr.Conflict, "This gateway writes only the session events that end a session (%s: "+
				"GATEWAY_SESSION_EVENTS=ends, the default), so a webhook for %s would receive none of the others: name "+
				"those types, or ask the operator for GATEWAY_SESSION_EVENTS=all. Every session change is in the audit log.",
				joinTypes(events.SessionEnds()), t)
		}
		return apperr.Newf(apperr.Conflict, "This gateway writes no session events (its operator set GATEWAY_SESSION_EVENTS=off), "+
			"so a webhook for %s would receive none: leave the session types out, or ask for GATEWAY_SESSION_EVENTS=ends "+
			"or all. Session changes are in the audit log meanwhile.", t)
	}
	return nil
}

// joinTypes is types joined with ", ".
func joinTypes(types []events.Type) string {
	s := make([]string, len(types))
	for i, t := range types {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}
