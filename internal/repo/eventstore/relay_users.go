package eventstore

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/repo"
)

// relayCallEntries bounds the entries one relay.lua call copies (a tenant's users are split
// into calls of at most this many); relayCalls bounds the calls run at once.
const (
	relayCallEntries = 1000
	relayCalls       = 8
)

// RelayUsers copies the pending events of users (distinct tags) into their tenants' streams
// and deletes what it copied, in a few round trips whatever their number: one pipelined read
// of their outboxes, one relay.lua per tenant (a durable write, relay_confirm.go), one
// pipelined ack. A user whose read or copy failed keeps its events for a later relay; the
// others are relayed all the same. It returns the events copied and the first failure (with
// how many users failed). Safe to run concurrently, on any gateway, any number of times.
func (s *Store) RelayUsers(ctx context.Context, tags []string) (int, error) {
	total := 0
	var errs []error
	for len(tags) > 0 {
		bs, rerrs := s.outbox.read(ctx, tags)
		tags, bs = keepOK(tags, bs, rerrs, &errs)
		n, cerrs := s.copyUsers(ctx, tags, bs)
		total += n
		tags, bs = keepOK(tags, bs, cerrs, &errs)
		aerrs := s.outbox.ack(ctx, tags, bs)
		var more []string
		for i, tag := range tags {
			switch {
			case aerrs[i] != nil:
				errs = append(errs, aerrs[i])
			case bs[i].more:
				more = append(more, tag)
			}
		}
		tags = more
	}
	return total, firstErr(errs)
}

// firstErr is the first non-nil error of errs, naming how many there were.
func firstErr(errs []error) error {
	var first error
	n := 0
	for _, err := range errs {
		if err != nil {
			first = cmp.Or(first, err)
			n++
		}
	}
	if n > 1 {
		return fmt.Errorf("%w (and %d more users' relays failed)", first, n-1)
	}
	return first
}

// keepOK returns the tags (and their batches) whose errs entry is nil, and adds the others'
// errors to all.
func keepOK(tags []string, bs []batch, errs []error, all *[]error) ([]string, []batch) {
	var okTags []string
	var okBs []batch
	for i, err := range errs {
		if err != nil {
			*all = append(*all, err)
			continue
		}
		okTags, okBs = append(okTags, tags[i]), append(okBs, bs[i])
	}
	return okTags, okBs
}

// copyUsers copies the users' batches into their tenants' streams: one relay.lua per tenant
// (per relayCallEntries entries), the calls side by side. errs[i] is user i's failure (its
// events then stay in its outbox); a user with nothing to copy has none.
func (s *Store) copyUsers(ctx context.Context, tags []string, bs []batch) (int, []error) {
	errs := make([]error, len(tags))
	var calls [][]int        // user indexes per relay.lua call
	open := map[string]int{} // tenant → its call being filled
	size := map[int]int{}    // call → entries
	for i, b := range bs {
		if len(b.entries) == 0 {
			continue
		}
		tenant := b.entries[0].FieldValues[events.FieldTenant]
		c, ok := open[tenant]
		if !ok || size[c]+len(b.entries) > relayCallEntries {
			c = len(calls)
			calls = append(calls, nil)
			open[tenant] = c
		}
		calls[c] = append(calls[c], i)
		size[c] += len(b.entries)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	total := 0
	sem := make(chan struct{}, relayCalls)
	for _, users := range calls {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			n, err := s.relayTenant(ctx, tags, bs, users)
			mu.Lock()
			defer mu.Unlock()
			total += n
			for _, i := range users {
				errs[i] = err
			}
		})
	}
	wg.Wait()
	return total, errs
}

// relayTenant runs relay.lua over the batches of users (indexes into tags and bs, all of one
// tenant) and audits the events it copied now.
func (s *Store) relayTenant(ctx context.Context, tags []string, bs []batch, users []int) (int, error) {
	tenant := bs[users[0]].entries[0].FieldValues[events.FieldTenant]
	tag := s.hasher.TenantTag(tenant)
	keys := []string{s.keys.EventStream(tag)}
	mode := "keys"
	if s.checkpointHash {
		keys, mode = append(keys, s.keys.EventRelayedHash(tag)), "hash"
		if s.checkpointHSetex {
			mode = "hsetex"
		}
	}
	args := []string{events.Envelope(ctx, tenant, s.retention), strconv.FormatInt(2*s.retention.MaxAge.Milliseconds(), 10), mode}
	sent := make([][]rueidis.XRangeEntry, len(users))
	for k, i := range users {
		if !s.checkpointHash {
			keys = append(keys, s.keys.EventRelayed(tag, tags[i]))
		}
		args = append(args, tags[i], "")
		at := len(args) - 1
		for _, e := range bs[i].entries {
			if e.FieldValues[events.FieldTenant] != tenant {
				break // (one user, one tenant: never expected)
			}
			args = append(args, e.ID, events.OutboxValue(e.FieldValues))
			sent[k] = append(sent[k], e)
		}
		args[at] = strconv.Itoa(len(sent[k]))
	}
	rep, err := s.runRelay(ctx, keys, args)
	if err != nil {
		return 0, err
	}
	if rep.Code() != repo.CodeOK || rep.Want(len(users)) != nil {
		return 0, fmt.Errorf("events relay: %w", repo.ErrReply)
	}
	total := 0
	for k := range users {
		n, err := rep.Int(k)
		if err != nil || n < 0 || int(n) > len(sent[k]) {
			return total, fmt.Errorf("events relay: %w", repo.ErrReply)
		}
		s.auditCopied(ctx, sent[k][len(sent[k])-int(n):])
		total += int(n)
	}
	return total, nil
}

// auditCopied writes the audit line of each event copied now (so once, on the gateway that
// copied it).
func (s *Store) auditCopied(ctx context.Context, copied []rueidis.XRangeEntry) {
	if s.audit == nil {
		return
	}
	for _, e := range copied {
		if ev, err := events.FromEntry(e.ID, e.FieldValues); err == nil {
			s.audit.Event(ctx, ev)
		}
	}
}
