package recent

import (
	"strconv"
	"testing"
	"time"
)

func TestMarks(t *testing.T) {
	t.Parallel()
	w := New(time.Second)
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
