package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/store/storeerr"
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
			if got := errors.Is(store.Classify(err), storeerr.ErrUnavailable); got != tt.unavailable {
				t.Fatalf("Classify(%q) unavailable = %v, want %v", err, got, tt.unavailable)
			}
		})
	}
}

// A client-side-cached read whose connection drops while other callers wait for the same key
// fails those callers with rueidis.ErrDoCacheAborted (rueidis does not retry it). It means the
// answer is unknown because the connection was lost: unavailable (503), never a miss or a 500.
func TestClassifyCachedReadAbortedByLostConnection(t *testing.T) {
	t.Parallel()
	if !store.IsUnavailable(fmt.Errorf("token state: %w", rueidis.ErrDoCacheAborted)) {
		t.Fatal("IsUnavailable(ErrDoCacheAborted) = false")
	}
	// The same error as rueidis makes it: a cut reaching readers that wait for one cached read.
	// The cut must land while they wait, which a loaded machine can delay past it: a few tries.
	srv := testredis.StartServer(t)
	front := testredis.StartProxy(t, srv.Addr(), 0)
	ctx := context.Background()
	s, err := store.Open(ctx, store.Options{URL: fmt.Sprintf("redis://127.0.0.1:%d", front.Port), Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for try := range 5 {
		if abortedReads(t, s, front, srv, fmt.Sprintf("hg:classify:{x}:%d", try)) > 0 {
			return
		}
	}
	t.Fatal("no read was aborted in 5 tries: the cut never reached a cached read in flight")
}

// abortedReads pauses srv, starts one cached read of key and four that wait for it, cuts the
// connection, and counts the reads that failed with ErrDoCacheAborted; every failure must be
// one IsUnavailable recognises.
func abortedReads(t *testing.T, s *store.Store, front *testredis.Proxy, srv *testredis.Server, key string) int {
	t.Helper()
	ctx := context.Background()
	srv.Pause()
	defer srv.Resume()
	read := func() error {
		return s.Client.DoCache(ctx, s.Client.B().Hmget().Key(key).Field("f").Cache(), time.Minute).Error()
	}
	errs := make(chan error, 5)
	go func() { errs <- read() }() // fetches the key for the cache
	time.Sleep(200 * time.Millisecond)
	for range 4 {
		go func() { errs <- read() }() // wait for that fetch
	}
	time.Sleep(200 * time.Millisecond)
	front.Cut()
	srv.Resume()
	aborted := 0
	for range 5 {
		err := <-errs
		if errors.Is(err, rueidis.ErrDoCacheAborted) {
			aborted++
		}
		if err != nil && !store.IsUnavailable(err) {
			t.Errorf("IsUnavailable(%v) = false", err)
		}
	}
	return aborted
}
