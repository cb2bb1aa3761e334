package webhooks

import (
	"encoding/json"
	"time"

	"github.com/hashgate/hashgate/internal/events"
)

// body is what a delivery POSTs: the event exactly as GET /v1/events answers it (the spec's
// Event schema), so one schema describes both; webhook-id is its id.
type body struct {
	ID        string          `json:"id"`
	Type      events.Type     `json:"type"`
	Time      string          `json:"time"`
	Tenant    string          `json:"tenant"`
	Subject   string          `json:"subject"`
	Actor     string          `json:"actor"`
	RequestID string          `json:"requestId,omitempty"`
	TraceID   string          `json:"traceId,omitempty"`
	Data      json.RawMessage `json:"data"`
}

// Body renders e for a delivery (a data object that is not valid JSON goes as {}).
func Body(e events.Event) []byte {
	data := json.RawMessage(e.Data)
	if !json.Valid(data) {
		data = json.RawMessage("{}")
	}
	b, _ := json.Marshal(body{ID: e.ID, Type: e.Type, Time: e.Time.UTC().Format("2006-01-02T15:04:05.000Z"),
		Tenant: e.Tenant, Subject: e.Subject, Actor: e.Actor, RequestID: e.RequestID, TraceID: e.TraceID, Data: data})
	return b
}

// pingEvent is the event a ping sends.
func pingEvent(id, tenant, webhookID string, now time.Time) events.Event {
	data, _ := json.Marshal(map[string]string{"webhookId": webhookID})
	return events.Event{ID: id, Type: PingType, Time: now, Tenant: tenant, Subject: webhookID, Actor: "system", Data: data}
}
