package testredis

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
)

// Recorder wraps a client the way a rueidis hook would and records what the code above it asks
// of Redis, for tests that count commands and round trips or prove that nothing was written.
// It is the one command recorder of the test suite; put it where a store's Client goes:
//
//	rec := testredis.NewRecorder(s.Client)
//	cp := *s
//	cp.Client = rec
//
// It counts:
//   - calls: one per Do, DoMulti, DoCache, DoMultiCache, DoStream or DoMultiStream (what
//     rueidisotel makes one span for);
//   - trips: round trips to Redis (a pipeline is one; a client-side cache hit is none; a
//     DoMultiCache with at least one miss is one);
//   - hits: client-side cache hits (each command of a DoMultiCache counts);
//   - commands: every command that reached Redis (a script is one EVALSHA; a cache hit is not
//     one), kept in order with its arguments.
//
// What runs on a connection from Dedicated or Dedicate is recorded like the client's own calls
// (Do calls After).
//
// NewCounter makes one that only counts (no command kept, no allocation, no lock), for
// benchmarks that report commands per operation.
type Recorder struct {
	rueidis.Client
	// After, when set, is called with each Do command's arguments once Redis has answered it,
	// so a test can act between two commands of one repository call.
	After func(args []string)

	keep                     bool
	calls, trips, hits, sent atomic.Int64
	mu                       sync.Mutex
	cmds                     []Command
}

// Command is one command that reached Redis.
type Command struct {
	Args     []string // the command name first, as sent
	ReadOnly bool     // rueidis marks it read-only (a script never is)
}

// Name is the command's name in upper case (EVALSHA, HGETALL, ...).
func (c Command) Name() string {
	if len(c.Args) == 0 {
		return ""
	}
	return strings.ToUpper(c.Args[0])
}

// String is the command as one line: its arguments joined by spaces.
func (c Command) String() string { return strings.Join(c.Args, " ") }

// NewRecorder wraps c, keeping every command sent.
func NewRecorder(c rueidis.Client) *Recorder { return &Recorder{Client: c, keep: true} }

// NewCounter wraps c, only counting: Commands, Names and Writes stay empty.
func NewCounter(c rueidis.Client) *Recorder { return &Recorder{Client: c} }

// command copies what the test needs out of cmd: rueidis recycles a command once it has been
// sent, so this runs before the call.
func (r *Recorder) command(cmd rueidis.Completed) Command {
	if !r.keep && r.After == nil {
		return Command{}
	}
	return Command{Args: slices.Clone(cmd.Commands()), ReadOnly: cmd.IsReadOnly()}
}

func (r *Recorder) cacheable(cmd rueidis.Cacheable) Command {
	if !r.keep {
		return Command{}
	}
	return Command{Args: slices.Clone(cmd.Commands()), ReadOnly: true}
}

// noteMulti is note for a pipeline; it allocates nothing when commands are not kept.
func (r *Recorder) noteMulti(cmds []rueidis.Completed) {
	if !r.keep {
		r.calls.Add(1)
		r.trips.Add(1)
		r.sent.Add(int64(len(cmds)))
		return
	}
	cs := make([]Command, len(cmds))
	for i, cmd := range cmds {
		cs[i] = r.command(cmd)
	}
	r.note(cs...)
}

// note counts one call of one round trip that sent cmds.
func (r *Recorder) note(cmds ...Command) {
	r.calls.Add(1)
	r.trips.Add(1)
	r.sent.Add(int64(len(cmds)))
	if r.keep {
		r.mu.Lock()
		r.cmds = append(r.cmds, cmds...)
		r.mu.Unlock()
	}
}

// Do records cmd and sends it.
func (r *Recorder) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c := r.command(cmd)
	r.note(c)
	res := r.Client.Do(ctx, cmd)
	if r.After != nil {
		r.After(c.Args)
	}
	return res
}

// DoMulti records cmds (one round trip) and sends them.
func (r *Recorder) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	r.noteMulti(cmds)
	return r.Client.DoMulti(ctx, cmds...)
}

// DoStream records cmd and sends it.
func (r *Recorder) DoStream(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResultStream {
	r.note(r.command(cmd))
	return r.Client.DoStream(ctx, cmd)
}

// DoMultiStream records cmds (one round trip) and sends them.
func (r *Recorder) DoMultiStream(ctx context.Context, cmds ...rueidis.Completed) rueidis.MultiRedisResultStream {
	r.noteMulti(cmds)
	return r.Client.DoMultiStream(ctx, cmds...)
}

// DoCache sends cmd through the client-side cache and records it only when it reached Redis.
func (r *Recorder) DoCache(ctx context.Context, cmd rueidis.Cacheable, ttl time.Duration) rueidis.RedisResult {
	c := r.cacheable(cmd)
	res := r.Client.DoCache(ctx, cmd, ttl)
	r.calls.Add(1)
	if res.IsCacheHit() {
		r.hits.Add(1)
		return res
	}
	r.trips.Add(1)
	r.sent.Add(1)
	if r.keep {
		r.mu.Lock()
		r.cmds = append(r.cmds, c)
		r.mu.Unlock()
	}
	return res
}

// DoMultiCache sends multi through the client-side cache and records the commands that
// reached Redis (one round trip when any did).
func (r *Recorder) DoMultiCache(ctx context.Context, multi ...rueidis.CacheableTTL) []rueidis.RedisResult {
	cs := make([]Command, len(multi))
	for i, m := range multi {
		cs[i] = r.cacheable(m.Cmd)
	}
	res := r.Client.DoMultiCache(ctx, multi...)
	r.calls.Add(1)
	var sent []Command
	for i, x := range res {
		if x.IsCacheHit() {
			r.hits.Add(1)
		} else {
			sent = append(sent, cs[i])
		}
	}
	if len(sent) > 0 {
		r.trips.Add(1)
		r.sent.Add(int64(len(sent)))
	}
	if r.keep && len(sent) > 0 {
		r.mu.Lock()
		r.cmds = append(r.cmds, sent...)
		r.mu.Unlock()
	}
	return res
}

// Dedicated hands fn a dedicated connection whose Do and DoMulti are recorded (and call
// After) like the client's; taking the connection is no call and no round trip of its own.
func (r *Recorder) Dedicated(fn func(rueidis.DedicatedClient) error) error {
	return r.Client.Dedicated(func(dc rueidis.DedicatedClient) error {
		return fn(&recordedDedicated{DedicatedClient: dc, r: r})
	})
}

// Dedicate is Dedicated's form with a release function (store.Durable.Run takes its
// connection so), recorded the same way.
func (r *Recorder) Dedicate() (rueidis.DedicatedClient, func()) {
	dc, release := r.Client.Dedicate()
	return &recordedDedicated{DedicatedClient: dc, r: r}, release
}

// recordedDedicated records what runs on a dedicated connection.
type recordedDedicated struct {
	rueidis.DedicatedClient
	r *Recorder
}

func (d *recordedDedicated) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c := d.r.command(cmd)
	d.r.note(c)
	res := d.DedicatedClient.Do(ctx, cmd)
	if d.r.After != nil {
		d.r.After(c.Args)
	}
	return res
}

// DoMulti records cmds (one round trip), sends them, then calls After for each in order.
func (d *recordedDedicated) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	var args [][]string
	if d.r.After != nil { // copied first: rueidis recycles commands once sent
		for _, c := range cmds {
			args = append(args, slices.Clone(c.Commands()))
		}
	}
	d.r.noteMulti(cmds)
	res := d.DedicatedClient.DoMulti(ctx, cmds...)
	for _, a := range args {
		d.r.After(a)
	}
	return res
}

// Calls is the number of client calls since the last Reset.
func (r *Recorder) Calls() int64 { return r.calls.Load() }

// Trips is the number of round trips to Redis since the last Reset.
func (r *Recorder) Trips() int64 { return r.trips.Load() }

// Hits is the number of client-side cache hits since the last Reset.
func (r *Recorder) Hits() int64 { return r.hits.Load() }

// Sent is the number of commands that reached Redis since the last Reset.
func (r *Recorder) Sent() int64 { return r.sent.Load() }

// Commands returns the commands that reached Redis since the last Reset, in order.
func (r *Recorder) Commands() []Command {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.cmds)
}

// Names returns the names of the commands that reached Redis since the last Reset, in order.
func (r *Recorder) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.names()
}

// Writes returns the commands since the last Reset that are not read-only (a script counts as
// a write; so does DEDICATED).
func (r *Recorder) Writes() []Command {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.writes()
}

// Reset forgets everything recorded and returns the names of the commands it forgot.
func (r *Recorder) Reset() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.reset()
	return r.names()
}

// TakeWrites returns Writes and then Resets.
func (r *Recorder) TakeWrites() []Command {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.reset()
	return r.writes()
}

// names are the recorded commands' names, in order; the caller holds mu.
func (r *Recorder) names() []string {
	out := make([]string, len(r.cmds))
	for i, c := range r.cmds {
		out[i] = c.Name()
	}
	return out
}

func (r *Recorder) writes() []Command {
	var out []Command
	for _, c := range r.cmds {
		if !c.ReadOnly {
			out = append(out, c)
		}
	}
	return out
}

func (r *Recorder) reset() {
	r.calls.Store(0)
	r.trips.Store(0)
	r.hits.Store(0)
	r.sent.Store(0)
	r.cmds = nil
}
