package handlers

import (
	"context"
	"encoding/json"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/events"
)

// EventService reads the tenant's event stream (internal/events).
type EventService interface {
	List(ctx context.Context, tenant string, f events.Filter, cursor string, limit int) ([]events.Event, string, error)
	Start(ctx context.Context, tenant, last string) (string, error)
	Next(ctx context.Context, tenant string, f events.Filter, after string, max int, block time.Duration) ([]events.Event, string, error)
}

// eventsCaller is the preamble of an operation that needs events: the caller, then a refusal
// of kind (what says why) on a gateway whose operator turned events off: nothing would be
// listed or delivered.
func (s *Server) eventsCaller(ctx context.Context, kind *apperr.Kind, what string) (*auth.Principal, error) {
	if s.EventsOff {
		return nil, apperr.Newf(kind, "This gateway keeps no events (its operator set GATEWAY_EVENTS=false): %s.", what)
	}
	return caller(ctx), nil
}

// ListEvents answers one page of the caller's tenant's events.
func (s *Server) ListEvents(ctx context.Context, request ListEventsRequestObject) (ListEventsResponseObject, error) {
	p, err := s.eventsCaller(ctx, apperr.NotFound, "there are none to list")
	if err != nil {
		return nil, err
	}
	q := request.Params
	items, next, err := s.Events.List(ctx, p.Tenant, eventFilter(q.Type, q.Subject), deref(q.Cursor), pageSize(q.Limit))
	if err != nil {
		return nil, err
	}
	out := EventPage{Items: views(items, eventBody), NextCursor: stringOrNil(next)}
	return ListEvents200JSONResponse{Body: out, Headers: ListEvents200ResponseHeaders{Link: nextLink(ctx, next)}}, nil
}

// StreamEvents answers the caller's tenant's events as Server-Sent Events (events_sse.go).
func (s *Server) StreamEvents(ctx context.Context, request StreamEventsRequestObject) (StreamEventsResponseObject, error) {
	p, err := s.eventsCaller(ctx, apperr.NotFound, "there are none to stream")
	if err != nil {
		return nil, err
	}
	q := request.Params
	last := deref(q.LastEventID)
	if last == "" {
		last = deref(q.After)
	}
	from, err := s.Events.Start(ctx, p.Tenant, last)
	if err != nil {
		return nil, err
	}
	return &eventStream{s: s, ctx: ctx, tenant: p.Tenant, filter: eventFilter(q.Type, q.Subject), after: from}, nil
}

func eventFilter(types *[]EventType, subject *string) events.Filter {
	f := events.Filter{Subject: deref(subject)}
	for _, t := range deref(types) {
		f.Types = append(f.Types, events.Type(t))
	}
	return f
}

func eventBody(e events.Event) Event {
	var data map[string]any
	if json.Unmarshal(e.Data, &data) != nil || data == nil {
		data = map[string]any{}
	}
	return Event{Id: e.ID, Type: EventType(e.Type), Time: Timestamp{e.Time}, TenantId: e.Tenant, Subject: e.Subject,
		Actor: e.Actor, RequestId: stringOrNil(e.RequestID), TraceId: stringOrNil(e.TraceID), Data: data}
}

// actorOf names the caller as an event's actor: its token or its session.
func actorOf(p *auth.Principal) string {
	if p.Kind == auth.KindSession {
		return events.SessionActor(p.SessionID)
	}
	return events.TokenActor(p.TokenID)
}

// auditFailure logs a refused request in the audit log (aggregated): the caller's tenant,
// actor and keyed id (the subject) when it was authenticated (p), the request and trace id;
// never the credential.
func (s *Server) auditFailure(c echo.Context, typ string, p *auth.Principal) {
	if s.Audit == nil {
		return
	}
	tenant, actor, subject := "", "", ""
	if p != nil {
		tenant, actor, subject = p.Tenant, actorOf(p), refusalSubject(p)
	}
	ctx := c.Request().Context()
	_, trace := events.OriginFrom(ctx)
	s.Audit.Failure(ctx, typ, tenant, actor, subject, requestID(c), trace)
}
