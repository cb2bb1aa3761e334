package sessionstore

import (
	"encoding/base64"
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/sessions/session"
)

// BenchmarkAuthMemoGet is the memo's hit (authMemo.get) with 100k and 1M sessions kept (one per
// user, references shaped as real ones), looked up in a random order from GOMAXPROCS
// goroutines: the scale benchmark's memo hits, where most lookups miss the CPU caches.
// B/entry is the heap the memo holds per entry once the requests' strings are gone (the
// decoded sessions' own bytes included, and whatever of the callers' strings it keeps).
//
//	go test -run '^$' -bench BenchmarkAuthMemoGet ./internal/repo/
func BenchmarkAuthMemoGet(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			now := time.Unix(1000, 0)
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			refs := make([]session.Ref, n)
			rng := rand.New(rand.NewPCG(1, uint64(n)))
			var buf [40]byte
			for i := range refs {
				for j := 0; j < len(buf); j += 8 {
					binary.LittleEndian.PutUint64(buf[j:], rng.Uint64())
				}
				enc := base64.RawURLEncoding.EncodeToString(buf[:])
				// As a request parses them: the tag a slice of the 60-byte token, the part a
				// string of its own.
				token := "hgs_" + enc[:session.TagLen] + "_" + enc[:43]
				refs[i] = session.Ref{Tag: token[4 : 4+session.TagLen], Part: strings.Clone(enc[13 : 13+session.PartLen])}
			}
			m := newAuthMemo("hg:v1:sess:{", int64(n))
			for _, r := range refs {
				m.put(r, &memoEntry{hot: hotSession{idle: 1}, until: now.Add(time.Hour)}, m.version(r), now)
			}
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
			refs, order = nil, nil // what the memo keeps of the requests' strings stays counted
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n), "B/entry")
			runtime.KeepAlive(m)
		})
	}
}
