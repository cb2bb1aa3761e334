package webhookstore

import (
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/hashgate/hashgate/internal/webhooks"
)

var errShape = errors.New("unexpected XAUTOCLAIM reply")

// decodeEvent reads an entry of the tenant's event stream (the fields event_append writes:
// type, timeMs, tenant, subject, actor, requestId, traceId, data) into what a delivery
// sends: the body is the event as GET /v1/events shows it, in the Standard Webhooks payload
// shape (type, timestamp, data) with the event's id, subject and origin beside them.
func decodeEvent(id string, f map[string]string) (webhooks.Event, bool) {
	ms, err := strconv.ParseInt(f["timeMs"], 10, 64)
	ok := err == nil && f["type"] != ""
	data := json.RawMessage(f["data"])
	if !json.Valid(data) {
		data, ok = json.RawMessage("{}"), false
	}
	body, _ := json.Marshal(struct {
		ID        string          `json:"id"`
		Type      string          `json:"type"`
		Timestamp string          `json:"timestamp"`
		Subject   string          `json:"subject,omitempty"`
		Actor     string          `json:"actor,omitempty"`
		RequestID string          `json:"requestId,omitempty"`
		TraceID   string          `json:"traceId,omitempty"`
		Data      json.RawMessage `json:"data"`
	}{id, f["type"], time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z"), f["subject"], f["actor"],
		f["requestId"], f["traceId"], data})
	return webhooks.Event{ID: id, Type: f["type"], Subject: f["subject"], Body: body}, ok
}
