package testredis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// Slots and their migration between a cluster's masters (the slot-migration fault tests).

// KeySlot is the cluster slot of key.
func (c *Cluster) KeySlot(ctx context.Context, key string) (int, error) {
	s, err := c.Do(ctx, 0, "CLUSTER", "KEYSLOT", key).AsInt64()
	return int(s), err
}

// Owner is the index of the node that serves slot, as node 0 sees it.
func (c *Cluster) Owner(ctx context.Context, slot int) (int, error) {
	ranges, err := c.Do(ctx, 0, "CLUSTER", "SLOTS").ToArray()
	if err != nil {
		return -1, err
	}
	for _, r := range ranges {
		parts, err := r.ToArray()
		if err != nil || len(parts) < 3 {
			return -1, errors.New("CLUSTER SLOTS: unexpected reply")
		}
		lo, _ := parts[0].AsInt64()
		hi, _ := parts[1].AsInt64()
		if int64(slot) < lo || int64(slot) > hi {
			continue
		}
		master, err := parts[2].ToArray()
		if err != nil || len(master) < 2 {
			return -1, errors.New("CLUSTER SLOTS: unexpected node entry")
		}
		port, _ := master[1].AsInt64()
		for i, n := range c.Nodes {
			if n.Port == int(port) || n.AnnouncePort == int(port) {
				return i, nil
			}
		}
	}
	return -1, fmt.Errorf("slot %d has no owner", slot)
}

// CountKeysInSlot is how many keys of slot node i holds.
func (c *Cluster) CountKeysInSlot(ctx context.Context, i, slot int) (int64, error) {
	return c.Do(ctx, i, "CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(slot)).AsInt64()
}

// Migration moves one slot the way redis-cli --cluster reshard does: the target is marked
// IMPORTING and the source MIGRATING, keys are moved with MIGRATE in batches, then every master
// is told the new owner (target first, then source, then the others). Between every batch
// After (when set) runs, so a test can let its load run against each intermediate state.
type Migration struct {
	Slot, From, To int
	// Batch is the number of keys per MIGRATE (default 10).
	Batch int
	// Order, when set, picks the keys of the next batch from the keys still on the source;
	// default: CLUSTER GETKEYSINSLOT's order.
	Order func(left []string) []string
	// After runs after each MIGRATE with the number of keys moved so far.
	After func(moved int)
}

// Migrate runs m. It stops at the first error, leaving the slot in its intermediate state.
func (c *Cluster) Migrate(ctx context.Context, m Migration) (moved int, err error) {
	if m.Batch <= 0 {
		m.Batch = 10
	}
	slot := strconv.Itoa(m.Slot)
	src, dst := c.Nodes[m.From], c.Nodes[m.To]
	if err := c.Do(ctx, m.To, "CLUSTER", "SETSLOT", slot, "IMPORTING", src.ID).Error(); err != nil {
		return 0, fmt.Errorf("setslot importing: %w", err)
	}
	if err := c.Do(ctx, m.From, "CLUSTER", "SETSLOT", slot, "MIGRATING", dst.ID).Error(); err != nil {
		return 0, fmt.Errorf("setslot migrating: %w", err)
	}
	for {
		left, err := c.Do(ctx, m.From, "CLUSTER", "GETKEYSINSLOT", slot, "100000").AsStrSlice()
		if err != nil {
			return moved, fmt.Errorf("getkeysinslot: %w", err)
		}
		if len(left) == 0 {
			break
		}
		batch := left
		if m.Order != nil {
			batch = m.Order(left)
		}
		batch = batch[:min(len(batch), m.Batch)]
		args := append([]string{"MIGRATE", "127.0.0.1", strconv.Itoa(dst.Port), "", "0", "5000", "KEYS"}, batch...)
		if err := c.Do(ctx, m.From, args...).Error(); err != nil {
			return moved, fmt.Errorf("migrate: %w", err)
		}
		moved += len(batch)
		if m.After != nil {
			m.After(moved)
		}
	}
	order := []int{m.To, m.From}
	for i := range c.Nodes {
		if i != m.To && i != m.From {
			order = append(order, i)
		}
	}
	for _, i := range order {
		if err := c.Do(ctx, i, "CLUSTER", "SETSLOT", slot, "NODE", dst.ID).Error(); err != nil {
			return moved, fmt.Errorf("setslot node on node %d: %w", i, err)
		}
	}
	return moved, c.WaitAgreed(ctx)
}
