package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/store/storeerr"
	"github.com/hashgate/hashgate/internal/testredis"
)

// TestDurableRunBoundedWhilePrimaryFrozen: with the primary frozen (SIGSTOP: its sockets stay
// open and answer nothing), every Durable.Run — a confirmed read or a write, started one after
// another as requests arrive — returns unavailable within the store's timeout (plus slack for a
// loaded machine), never waits for a connection the frozen server will not answer.
func TestDurableRunBoundedWhilePrimaryFrozen(t *testing.T) {
	t.Parallel()
	primary, _ := testredis.StartPrimaryWithReplica(t)
	const timeout = 500 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := store.Open(ctx, store.Options{URL: primary.URL(), Timeout: timeout,
		Durability: &store.Durability{Replicas: store.DurableAuto, Timeout: 300 * time.Millisecond, NoAOF: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	key := testredis.Prefix(t) + "frozen"
	if err := durableSet(s, key); err != nil {
		t.Fatalf("durable write with the replica in sync: %v", err)
	}
	read := func(c rueidis.Client) (bool, error) {
		if err := store.Ready(context.Background(), c, key); err != nil {
			return false, err
		}
		return true, c.Do(context.Background(), c.B().Get().Key(key).Build()).Error()
	}
	write := func(c rueidis.Client) (bool, error) {
		return true, setScript.Exec(context.Background(), c, []string{key}, []string{"v"}).Error()
	}

	primary.Pause()
	defer primary.Resume()
	const bound = timeout + time.Second
	var (
		mu      sync.Mutex
		slowest time.Duration
		bad     []string
		wg      sync.WaitGroup
	)
	end := time.Now().Add(3 * time.Second)
	for time.Now().Before(end) {
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				op := read
				if i%2 == 1 {
					op = write
				}
				start := time.Now()
				err := s.Durable.Run(context.Background(), s.Client, op)
				took := time.Since(start)
				mu.Lock()
				defer mu.Unlock()
				slowest = max(slowest, took)
				if !errors.Is(store.Classify(err), storeerr.ErrUnavailable) || took > bound {
					if len(bad) < 5 {
						bad = append(bad, took.Round(time.Millisecond).String()+": "+errString(err))
					}
				}
			}()
		}
		time.Sleep(100 * time.Millisecond)
	}
	wg.Wait()
	t.Logf("slowest Durable.Run with the primary frozen: %v", slowest)
	if len(bad) > 0 {
		t.Fatalf("with the primary frozen, Durable.Run answered otherwise than unavailable within %v: %v", bound, bad)
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
