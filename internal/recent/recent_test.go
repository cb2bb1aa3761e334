package recent

import (
	"strconv"
	"testing"
	"time"
)

func TestMarks(t *testing.T) {
	t.Parallel()
	w := New(time.Second, 0)
	now := time.Unix(1000, 0)
	type obj struct{ group, id string }
	a, b := obj{"AAAAAAAAAAAA", "p1"}, obj{"AAAAAAAAAAAA", "p2"}
	other := obj{"BBBBBBBBBBBB", "p1"}
	if w.Marked(a.group, a.id, now) {
		t.Fatal("marked before any write")
	}
	w.Mark(a.group, a.id, now)
	if !w.Marked(a.group, a.id, now.Add(999*time.Millisecond)) || w.Marked(b.group, b.id, now) || w.Marked(other.group, other.id, now) {
		t.Fatal("a mark covers exactly that object for one TTL")
	}
	if w.Marked(a.group, a.id, now.Add(time.Second)) {
		t.Fatal("mark outlived its TTL")
	}
	if w.live.Load() != 0 {
		t.Fatalf("expired mark kept: %d live", w.live.Load())
	}
	w.Mark(a.group, "", now)
	if !w.Marked(a.group, a.id, now) || !w.Marked(b.group, b.id, now) || w.Marked(other.group, other.id, now) {
		t.Fatal("a group mark covers every object of that group only")
	}
	for i := range 4000 { // a write every millisecond for 4 TTLs
		w.Mark("CCCCCCCCCCCC", strconv.Itoa(i), now.Add(time.Duration(i)*time.Millisecond))
	}
	// A steady stream of writes keeps at most about two TTLs' worth of marks, not all of them.
	if n := w.live.Load(); n > 2100 {
		t.Fatalf("%d marks kept under a stream of writes; expired ones should have been swept", n)
	}
	// Once the newest mark has expired, the next look clears them all, read again or not, and
	// the fast path (no mark live) applies again.
	if w.Marked(other.group, other.id, now.Add(time.Hour)) || w.live.Load() != 0 {
		t.Fatalf("%d marks left after all expired", w.live.Load())
	}
	var nilW *Writes
	nilW.Mark(a.group, a.id, now)
	if nilW.Marked(a.group, a.id, now) {
		t.Fatal("nil (cache off) marks nothing")
	}
}

// A burst of writes to more distinct objects than the marks may hold keeps the set at its
// bound, and stays safe: every object written within the TTL is still distrusted (past the
// bound, everything is, until the newest mark expires), and trust returns after the TTL.
func TestMarksBounded(t *testing.T) {
	t.Parallel()
	const max = 64
	w := New(time.Second, max)
	now := time.Unix(1000, 0)
	for i := range 10 * max {
		w.Mark("g", strconv.Itoa(i), now.Add(time.Duration(i)*time.Microsecond))
	}
	if n := w.live.Load(); n > max {
		t.Fatalf("%d marks kept, bound %d", n, max)
	}
	at := now.Add(500 * time.Millisecond)
	for i := range 10 * max {
		if !w.Marked("g", strconv.Itoa(i), at) {
			t.Fatalf("object %d written within the TTL is trusted past the bound", i)
		}
	}
	if later := now.Add(2 * time.Second); w.Marked("g", "0", later) || w.Marked("other", "x", later) {
		t.Fatal("still distrusted after every mark expired")
	}
	if w.Marked("other", "x", now.Add(2*time.Second)) {
		t.Fatal("overflow outlived the TTL")
	}
}
