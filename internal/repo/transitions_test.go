package repo

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/testredis"
)

// TestReplyShapes: a quote, case or idempotency caller accepts only the replies its script
// declares (code and payload length) and a refusal's value only as a string.
func TestReplyShapes(t *testing.T) {
	t.Parallel()
	s := testredis.Open(t, testredis.Backends()[0])
	ctx := context.Background()
	call := func(body string) Reply {
		t.Helper()
		rep, err := callScript(ctx, s.Client, "test_shapes", rueidis.NewLuaScript(body), nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		return rep
	}
	shapes := ReplyShapes{CodeOK: 1, CodeNotFound: 0, CodeStale: 1}
	for body, want := range map[string]string{
		"return {'OK', {'a', '1'}}":     "",
		"return {'NOT_FOUND'}":          "",
		"return {'STALE', '7'}":         "7",
		"return {'OK', 'not a map'}":    "", // OK's payload is its caller's to read
		"return {'STALE', 'not a num'}": "not a num",
	} {
		got, err := shapes.Read(call(body))
		if err != nil || got != want {
			t.Errorf("%s: read = %q, %v; want %q", body, got, err, want)
		}
	}
	for _, body := range []string{
		"return {'OK'}",                    // payload too short
		"return {'NOT_FOUND', 'x'}",        // a payload where none is declared
		"return {'STALE', 7}",              // a refusal's value that is not a string
		"return {'STALE', false}",          // nil
		"return {'STALE', '7', '8'}",       // too long
		"return {'EXISTS', {'a', '1'}}",    // a code of the table the script does not answer
		"return {'INVALID_STATUS', 'X'}",   // likewise
		"return {'CLAIMED', 'v', 1}",       // likewise
		"return {'NOT_FOUND', {'a', '1'}}", // likewise a payload
	} {
		if _, err := shapes.Read(call(body)); !errors.Is(err, ErrReply) {
			t.Errorf("%s: read err = %v, want ErrReply", body, err)
		}
	}
	// check looks at codes and lengths only: a CLAIMED payload is its caller's to read.
	if err := (ReplyShapes{CodeClaimed: 2}).Check(call("return {'CLAIMED', 'v', 1}")); err != nil {
		t.Errorf("check: %v", err)
	}

	// STALE's value becomes the current ETag when it is an integer; a 412 either way.
	var e *apperr.Error
	if !errors.As(StaleError("12"), &e) || e.Kind != apperr.PreconditionFailed || e.Extra["currentETag"] != `"12"` {
		t.Errorf("staleError(12) = %+v", e)
	}
	if !errors.As(StaleError("1.5"), &e) || e.Kind != apperr.PreconditionFailed || e.Extra["currentETag"] != nil {
		t.Errorf("staleError(1.5) = %+v", e)
	}
}
