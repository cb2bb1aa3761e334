package webhookstore

import (
	"context"
	"testing"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/testredis"
	"github.com/hashgate/hashgate/internal/webhooks"
)

// TestCorruptEntriesKeepTypeAndSubject: an entry that does not decode is delivered with what
// it holds rather than lost or blocking the queue — its type (which decides which webhooks
// want it) and subject (which orders it), whether the entry is flat (the tenant's own
// scripts) or one packed field (a session event the relay copied).
func TestCorruptEntriesKeepTypeAndSubject(t *testing.T) {
	t.Parallel()
	r := newTestStore(t, testredis.Open(t, testredis.Backends()[0]), testredis.Prefix(t))
	w := &webhooks.Webhook{ID: "wh_1", Tenant: "acme", Events: []string{"session.revoked", "token.revoked"}}
	got := r.entries(context.Background(), w, []rueidis.XRangeEntry{
		{ID: "1-0", FieldValues: map[string]string{events.FieldType: "token.revoked", events.FieldTime: "not-a-time", events.FieldSubject: "tok_1"}},
		{ID: "2-0", FieldValues: map[string]string{events.FieldPacked: "session.revoked\nnot-a-time\nacme\ns_abc_def"}},
		{ID: "3-0", FieldValues: map[string]string{events.FieldPacked: "session.revoked\n1700000000000\nacme\ns_abc_ghi\ntoken:T\nr\nt\n{}"}},
	})
	want := []struct{ typ, subject string }{{"token.revoked", "tok_1"}, {"session.revoked", "s_abc_def"}, {"session.revoked", "s_abc_ghi"}}
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d", len(got), len(want))
	}
	for i, e := range got {
		if string(e.Event.Type) != want[i].typ || e.Event.Subject != want[i].subject || string(e.Event.Data) != "{}" || !w.Wants(string(e.Event.Type)) {
			t.Errorf("entry %s: %+v, want type %s subject %s", e.StreamID, e.Event, want[i].typ, want[i].subject)
		}
	}
}
