package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// Error replies of a slot in transit (or a cluster that is down) are "Redis cannot serve right
// now": 503 with Retry-After, never 500. Script refusals and programming errors are not.
// The replies are real: a script answers each message with redis.error_reply.
func TestClassifyClusterTransitErrors(t *testing.T) {
	t.Parallel()
	s := testredis.Open(t, testredis.Backends()[0])
	tests := []struct {
		msg         string
		unavailable bool
	}{
		{"TRYAGAIN Multiple keys request during rehashing of slot", true},
		{"ASK 3999 127.0.0.1:7001", true},
		{"MOVED 3999 127.0.0.1:7001", true},
		{"CLUSTERDOWN Hash slot not served", true},
		{"ERR Attempted to access a non local key in a cluster node script", true},
		{"ERR Script attempted to access a non local key in a cluster node script", true},
		{"ERR Unable to execute command 'del' in script because undeclared keys were accessed during rehashing of the slot", true},
		{"ERR Can not execute a command 'get' while the cluster is down", true},
		{"CROSSSLOT Keys in request don't hash to the same slot", false},
		{"WRONGTYPE Operation against a key holding the wrong kind of value", false},
		{"ERR session_revoke_all: KEYS do not match the members", false},
		{"MOVEDX not a redirection", false},
	}
	for _, tt := range tests {
		t.Run(tt.msg, func(t *testing.T) {
			t.Parallel()
			err := s.Client.Do(context.Background(),
				s.Client.B().Eval().Script("return redis.error_reply(ARGV[1])").Numkeys(0).Arg(tt.msg).Build()).Error()
			if _, ok := rueidis.IsRedisErr(err); !ok {
				t.Fatalf("want a Redis error reply, got %v", err)
			}
			if got := store.IsUnavailable(err); got != tt.unavailable {
				t.Fatalf("IsUnavailable(%q) = %v, want %v", err, got, tt.unavailable)
			}
			if got := errors.Is(store.Classify(err), store.ErrUnavailable); got != tt.unavailable {
				t.Fatalf("Classify(%q) unavailable = %v, want %v", err, got, tt.unavailable)
			}
		})
	}
}
