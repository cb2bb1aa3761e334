package webhookstore

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/webhooks"
)

// mapWebhook maps a webhook hash (repo.Objects.Decode classifies it). Schema 2 is the first
// the webhook hash was written in; a previous one has the same fields.
func mapWebhook(f *repo.Fields, _ repo.Outcome) *webhooks.Webhook {
	w := &webhooks.Webhook{ID: f.Str("webhookId"), Tenant: f.Str("tenantId"), URL: f.Str("url"),
		Events: strings.Fields(f.Str("events")), CreatedAt: repo.TimeFromMs(f.Int64("createdAtMs")),
		ExpiresAt: repo.TimeFromMs(f.Int64("expiresAtMs"))}
	f.Int64("updatedAtMs")
	if !webhooks.ValidID(w.ID) {
		f.Flag("webhookId")
	}
	return w
}

// record is a delivery record as stored after the script's "<updatedAtMs>|<nextAttemptAtMs>|".
type record struct {
	MessageID  string `json:"m"`
	EventType  string `json:"t,omitempty"`
	Status     string `json:"s"`
	Attempts   int    `json:"a"`
	StatusCode int    `json:"c,omitempty"`
	LastError  string `json:"e,omitempty"`
}

func encodeRecord(d webhooks.Delivery) string {
	b, _ := json.Marshal(record{MessageID: d.MessageID, EventType: d.EventType, Status: d.Status,
		Attempts: d.Attempts, StatusCode: d.StatusCode, LastError: d.LastError})
	return string(b)
}

// decodeRecord reads a stored record; ok is false for a malformed one.
func decodeRecord(v string) (webhooks.Delivery, bool) {
	upd, rest, ok1 := strings.Cut(v, "|")
	next, body, ok2 := strings.Cut(rest, "|")
	u, e1 := strconv.ParseInt(upd, 10, 64)
	n, e2 := strconv.ParseInt(next, 10, 64)
	var rec record
	if !ok1 || !ok2 || e1 != nil || e2 != nil || json.Unmarshal([]byte(body), &rec) != nil || rec.Status == "" {
		return webhooks.Delivery{}, false
	}
	return webhooks.Delivery{MessageID: rec.MessageID, EventType: rec.EventType, Status: rec.Status,
		Attempts: rec.Attempts, StatusCode: rec.StatusCode, LastError: rec.LastError,
		NextAttemptAt: repo.TimeFromMs(n), UpdatedAt: repo.TimeFromMs(u)}, true
}
