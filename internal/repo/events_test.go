package repo

import (
	"regexp"
	"strconv"
	"testing"
)

// TestEventOutboxMaxMatchesSnippet: the Go bound of the pending session events of a user's hash
// is the one the scripts apply.
func TestEventOutboxMaxMatchesSnippet(t *testing.T) {
	b, err := sharedLua.ReadFile("lua/event_outbox.lua")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^local EVENT_OUTBOX_MAX = (\d+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("event_outbox.lua sets no EVENT_OUTBOX_MAX")
	}
	if n, _ := strconv.Atoi(string(m[1])); n != EventOutboxMax {
		t.Fatalf("event_outbox.lua bounds the pending events at %d, repo.EventOutboxMax at %d", n, EventOutboxMax)
	}
}
