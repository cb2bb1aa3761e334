package robustness

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// result is one model's check of one run.
type result struct {
	Run, Model, Fault, Durable string
	Seed                       uint64
	Ops, Unknown               int // operations recorded, of which the result was never learned
	Objects                    int
	Violations                 int // objects whose history is not linearizable
	// Lost: of the violating objects, those still not linearizable without the reads made
	// during a cut (faultCounts.Cuts): an acknowledged write lost, not an unconfirmed one read.
	Lost          int
	Undecided     int    // objects the checker did not finish within checkTimeout
	Visualization string // the HTML of the violating objects' histories, if any
	Faults        faultCounts
	Notes         []string // what the check found, beyond the counts
}

// checkTimeout bounds the check of one object's history.
const checkTimeout = 10 * time.Second

// check runs Porcupine over h one object at a time (the operations during a cut marked, for
// the models that tell: markCuts), saves the history as JSON in dir and,
// when an object's history is not linearizable, Porcupine's HTML visualization of every such
// object.
func check(model porcupine.Model, name string, h *history, dir string, r result) (result, error) {
	ops := markCuts(h.operations(), h.start, r.Faults.Cuts)
	r.Model = name
	r.Ops, r.Unknown = h.counts()
	var bad []porcupine.Operation
	parts := model.Partition(ops)
	r.Objects = len(parts)
	for _, part := range parts {
		switch porcupine.CheckOperationsTimeout(model, part, checkTimeout) {
		case porcupine.Illegal:
			r.Violations++
			bad = append(bad, part...)
			if porcupine.CheckOperationsTimeout(model, withoutCutReads(part, h.start, r.Faults.Cuts), checkTimeout) != porcupine.Ok {
				r.Lost++
			}
		case porcupine.Unknown:
			r.Undecided++
		}
	}
	base := filepath.Join(dir, fmt.Sprintf("%s-%s-seed%d", name, strings.NewReplacer("/", "-", "=", "").Replace(r.Run), r.Seed))
	if err := saveHistory(base+".json", ops, model); err != nil {
		return r, err
	}
	if len(bad) > 0 {
		_, info := porcupine.CheckOperationsVerbose(model, bad, checkTimeout)
		r.Visualization = base + ".html"
		if err := porcupine.VisualizePath(model, info, r.Visualization); err != nil {
			return r, err
		}
	}
	return r, nil
}

// reader is an input that only reads its object.
type reader interface{ reads() bool }

// withoutCutReads is part without the reads whose call or return falls within a cut (from a
// partition to its failover; ns from start as the history records them). What such a read saw
// may be a write the cut-off primary applied and could not confirm (answered 503), which the
// failover then undid: linearizability forbids it, but no acknowledged write was lost. An
// acknowledged write the failover lost still shows in the reads and writes after the cut.
func withoutCutReads(part []porcupine.Operation, start time.Time, cuts [][2]time.Time) []porcupine.Operation {
	out := make([]porcupine.Operation, 0, len(part))
	for _, op := range part {
		in, ok := op.Input.(reader)
		drop := false
		for _, c := range cuts {
			from, to := c[0].Sub(start).Nanoseconds(), c[1].Sub(start).Nanoseconds()
			drop = drop || ok && in.reads() && op.Return >= from && op.Call <= to
		}
		if !drop {
			out = append(out, op)
		}
	}
	return out
}

// saveHistory writes the history as JSON lines of call, return (ns since the start; an
// unknown result returns after everything), client and the operation as the model describes
// it (tokens by hash prefix only).
func saveHistory(path string, ops []porcupine.Operation, model porcupine.Model) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, op := range ops {
		line := struct {
			Call, Return int64
			Client       int
			Object, Op   string
		}{op.Call, op.Return, op.ClientId, op.Input.(keyed).key(), model.DescribeOperation(op.Input, op.Output)}
		if err := enc.Encode(line); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// row is r as a line of docs/ROBUSTNESS.md's table.
func (r result) row() string {
	return fmt.Sprintf("| %s | %s | %d | %d | %d | %s | %d | %d | %d |",
		r.Model, r.Run, r.Ops, r.Unknown, r.Objects, r.Faults, r.Violations, r.Lost, r.Undecided)
}
