package repo

import (
	"encoding/base64"
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/sessions/session"
)

// BenchmarkAuthMemoGet is the memo's hit (authMemo.get) with 100k and 1M sessions kept (one per
// user, references shaped as real ones), looked up in a random order from GOMAXPROCS
// goroutines: the scale benchmark's memo hits, where most lookups miss the CPU caches.
// B/entry is the heap the kept entries take (the decoded sessions' own bytes included).
//
//	go test -run '^$' -bench BenchmarkAuthMemoGet ./internal/repo/
func BenchmarkAuthMemoGet(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			now := time.Unix(1000, 0)
			refs := make([]session.Ref, n)
			rng := rand.New(rand.NewPCG(1, uint64(n)))
			var buf [24]byte
			for i := range refs {
				binary.LittleEndian.PutUint64(buf[:], rng.Uint64())
				binary.LittleEndian.PutUint64(buf[8:], rng.Uint64())
				binary.LittleEndian.PutUint64(buf[16:], rng.Uint64())
				enc := base64.RawURLEncoding.EncodeToString(buf[:])
				refs[i] = session.Ref{Tag: enc[:session.TagLen], Part: enc[session.TagLen:][:session.PartLen]}
			}
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			m := newAuthMemo("hg:v1:sess:{", int64(n))
			for _, r := range refs {
				m.put(r, &memoEntry{hot: hotSession{idle: 1}, until: now.Add(time.Hour)}, m.version(r), now)
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			order := rng.Perm(n)
			var next atomic.Uint64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := next.Add(1 << 20)
				for pb.Next() {
					i++
					if _, ok := m.get(refs[order[i%uint64(n)]], now); !ok {
						b.Error("miss")
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n), "B/entry")
			runtime.KeepAlive(m)
		})
	}
}
