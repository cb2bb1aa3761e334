package robustness

import (
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// history records the operations of every client of one model as Porcupine operations:
// call and return times in nanoseconds since the run's start, the input and the output.
//
// An operation whose result the client never learned (a transport failure, a timeout, a 503)
// may or may not have taken effect, at any time after its call: it is recorded with its call
// time and a return time after every other operation (set by ops), so the checker may place
// its effect anywhere later, or at the very end, which is as if it never happened.
type history struct {
	mu      sync.Mutex
	start   time.Time
	ops     []porcupine.Operation
	unknown []int // indexes into ops
	last    int64
}

func newHistory(start time.Time) *history { return &history{start: start} }

// add records one operation; unknown marks an output the client never learned.
func (h *history) add(client int, in, out any, call, ret time.Time, unknown bool) {
	c, r := call.Sub(h.start).Nanoseconds(), ret.Sub(h.start).Nanoseconds()
	h.mu.Lock()
	defer h.mu.Unlock()
	if unknown {
		h.unknown = append(h.unknown, len(h.ops))
	}
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Output: out, Call: c, Return: r})
	h.last = max(h.last, r)
}

// operations returns the history with every unknown operation's return time past the last
// known return.
func (h *history) operations() []porcupine.Operation {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := append([]porcupine.Operation(nil), h.ops...)
	for _, i := range h.unknown {
		out[i].Return = max(h.last, out[i].Call) + 1
	}
	return out
}

// counts is how many operations were recorded and how many of them ended unknown.
func (h *history) counts() (ops, unknown int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ops), len(h.unknown)
}
