package repo

import (
	"context"
	"embed"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/page"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

//go:embed testdata/index_harness.lua
var harnessFiles embed.FS

// indexHarness runs the object_index snippet through testdata/index_harness.lua (composed as
// the stores' scripts are, but never registered for preloading).
var indexHarness = func() *rueidis.Lua {
	sub, err := fsSub(harnessFiles, "testdata")
	if err != nil {
		panic(err)
	}
	body, err := ComposeScript(sub, "index_harness")
	if err != nil {
		panic(err)
	}
	return rueidis.NewLuaScript(body)
}()

type harness struct {
	t    *testing.T
	c    rueidis.Client
	keys []string // quota, where, indexes...
}

func (h harness) run(args ...string) []string {
	h.t.Helper()
	out, err := indexHarness.Exec(context.Background(), h.c, h.keys, args).AsStrSlice()
	if err != nil {
		h.t.Fatalf("harness %v: %v", args, err)
	}
	return out
}

func (h harness) zset(i int) []string {
	h.t.Helper()
	m, err := h.c.Do(context.Background(), h.c.B().Zrange().Key(h.keys[1+i]).Min("0").Max("-1").Build()).AsStrSlice()
	if err != nil {
		h.t.Fatal(err)
	}
	return m
}

func (h harness) where() map[string]string {
	h.t.Helper()
	m, err := h.c.Do(context.Background(), h.c.B().Hgetall().Key(h.keys[1]).Build()).AsStrMap()
	if err != nil {
		h.t.Fatal(err)
	}
	return m
}

func (h harness) now() int64 {
	h.t.Helper()
	n, err := timeScript.Exec(context.Background(), h.c, nil, nil).AsInt64()
	if err != nil {
		h.t.Fatal(err)
	}
	return n
}

func newHarness(t *testing.T, s *store.Store, prefix string) harness {
	k := Keys{Prefix: prefix}
	keys := append([]string{k.Key("quota", "T1", "things")}, k.IndexKeys("thingidx", "T1", "all", "color")...)
	// The test type "thing" is no documented key: leave nothing for the keyspace audit (one tag,
	// so one DEL on a cluster too).
	t.Cleanup(func() { s.Client.Do(context.Background(), s.Client.B().Del().Key(keys...).Build()) })
	return harness{t: t, c: s.Client, keys: keys}
}

// A write replaces an object's old members exactly (the coordinates hash names them), a
// delete removes every one, and every key lives as long as the longest-lived object in it.
func TestIndexSetReplacesAndDrops(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		h := newHarness(t, s, prefix)
		now := h.now()
		exp := strconv.FormatInt(now+60_000, 10)
		a1, red1 := IndexMember("", now, "a"), IndexMember("RED", now, "a")
		h.run("set", "a", exp, "60000", a1, red1)
		if got := h.zset(1); !slices.Equal(got, []string{a1}) {
			t.Fatalf("all = %v", got)
		}
		if got := h.where()["a"]; got != a1+" "+red1 {
			t.Fatalf("where[a] = %q", got)
		}
		// Moved in time and out of the color index: the old members leave.
		a2 := IndexMember("", now+5, "a")
		h.run("set", "a", exp, "60000", a2, "")
		if got := h.zset(1); !slices.Equal(got, []string{a2}) {
			t.Fatalf("all after move = %v", got)
		}
		if got := h.zset(2); len(got) != 0 {
			t.Fatalf("color after leaving = %v", got)
		}
		if got := h.where()["a"]; got != a2+" -" {
			t.Fatalf("where[a] = %q", got)
		}
		blue := IndexMember("BLUE", now+5, "a")
		h.run("set", "a", exp, "60000", a2, blue)
		for i, key := range h.keys[1:3] {
			pttl, err := s.Client.Do(context.Background(), s.Client.B().Pttl().Key(key).Build()).AsInt64()
			if err != nil || pttl < 50_000 || pttl > 60_000 {
				t.Fatalf("key %d PTTL = %d, %v: want the object's expiry", i, pttl, err)
			}
		}
		// A later-expiring object stretches the keys; an earlier one never shortens them.
		h.run("set", "b", strconv.FormatInt(now+120_000, 10), "120000", IndexMember("", now+6, "b"), "")
		h.run("set", "c", strconv.FormatInt(now+10_000, 10), "10000", IndexMember("", now+7, "c"), "")
		pttl, _ := s.Client.Do(context.Background(), s.Client.B().Pttl().Key(h.keys[2]).Build()).AsInt64()
		if pttl < 110_000 {
			t.Fatalf("all index PTTL %d: shortened below the longest-lived object", pttl)
		}
		h.run("drop", "a")
		if got := h.zset(1); slices.ContainsFunc(got, func(m string) bool { return strings.HasSuffix(m, "|a") }) {
			t.Fatalf("all after drop = %v", got)
		}
		if got := h.zset(2); len(got) != 0 {
			t.Fatalf("color after drop = %v", got)
		}
		if _, ok := h.where()["a"]; ok {
			t.Fatal("where still lists a dropped object")
		}
		h.run("drop", "zzz") // unknown: nothing
	})
}

// An expired object leaves the indexes with its quota member, in the same call, bounded per
// call; the quota counts only live members, so a prune left for later never refuses a create.
func TestIndexQuotaPruneLeavesNothingOrphaned(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		h := newHarness(t, s, prefix)
		now := h.now()
		for i := range 100 {
			id := "x" + strconv.Itoa(i)
			h.run("set", id, strconv.FormatInt(now+60_000, 10), "60000", IndexMember("", now, id), IndexMember("RED", now, id))
			if err := s.Client.Do(context.Background(), s.Client.B().Zadd().Key(h.keys[0]).ScoreMember().ScoreMember(float64(now-1000), id).Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
		h.run("set", "live", strconv.FormatInt(now+60_000, 10), "60000", IndexMember("", now, "live"), "")
		// 100 expired + 1 live, limit 2: the create is allowed (one live), and 64 are pruned.
		if got := h.run("full", strconv.FormatInt(now, 10), "2"); got[0] != "-1" {
			t.Fatalf("full = %v: expired members counted", got)
		}
		if n := len(h.zset(1)); n != 101-64 {
			t.Fatalf("all index holds %d after one bounded prune, want %d", n, 101-64)
		}
		if got := h.run("full", strconv.FormatInt(now, 10), "1"); got[0] == "-1" {
			t.Fatal("full with one live member and limit 1 allowed")
		}
		if got := h.run("prune", strconv.FormatInt(now, 10), "1000"); got[0] != "0" {
			t.Fatalf("prune after full pruned %v more", got)
		}
		for i, z := range [][]string{h.zset(1), h.zset(2)} {
			want := map[int]int{0: 1, 1: 0}[i]
			if len(z) != want {
				t.Fatalf("index %d holds %v after the prunes, want %d members", i, z, want)
			}
		}
		if w := h.where(); len(w) != 1 || w["live"] == "" {
			t.Fatalf("where = %v, want only the live object", w)
		}
		q, _ := s.Client.Do(context.Background(), s.Client.B().Zcard().Key(h.keys[0]).Build()).AsInt64()
		if q != 1 {
			t.Fatalf("quota set holds %d, want 1", q)
		}
	})
}

// index_range: newest first or earliest first, within one value tag, from a cursor (exclusive)
// and a since bound (inclusive); ties in time are ordered by id, so a cursor never repeats or
// skips one.
func TestIndexRange(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		h := newHarness(t, s, prefix)
		now := h.now()
		exp := strconv.FormatInt(now+60_000, 10)
		var red []string
		for i := range 6 {
			id := "r" + strconv.Itoa(i)
			m := IndexMember("RED", now+int64(i/2)*10, id) // pairs share a time
			red = append(red, m)
			h.run("set", id, exp, "60000", IndexMember("", now, id), m)
		}
		for _, id := range []string{"b0", "b1"} { // another value, on both sides lexically
			h.run("set", id, exp, "60000", IndexMember("", now, id), IndexMember("BLUE", now+100, id))
			h.run("set", id+"z", exp, "60000", IndexMember("", now, id), IndexMember("RES", now+100, id+"z"))
		}
		rev := slices.Clone(red)
		slices.Reverse(rev)
		var walked []string
		cursor := ""
		for range 10 {
			page := h.run("range", "2", "RED", cursor, "", "4", "1")
			walked = append(walked, page...)
			if len(page) < 4 {
				break
			}
			cursor = page[len(page)-1]
		}
		if !slices.Equal(walked, rev) {
			t.Fatalf("newest-first walk = %v, want %v", walked, rev)
		}
		if got := h.run("range", "2", "RED", "", "", "100", ""); !slices.Equal(got, red) {
			t.Fatalf("earliest first = %v", got)
		}
		if got := h.run("range", "2", "RED", "", strconv.FormatInt(now+20, 10), "100", "1"); !slices.Equal(got, rev[:2]) {
			t.Fatalf("since = %v, want %v", got, rev[:2])
		}
		if got := h.run("range", "2", "RED", red[2], strconv.FormatInt(now+10, 10), "100", ""); !slices.Equal(got, red[3:]) {
			t.Fatalf("forward from cursor, since = %v", got)
		}
		if got := h.run("id", red[0]); got[0] != "r0" {
			t.Fatalf("index_id = %v", got)
		}
	})
}

func TestCursorRoundTripAndRefusals(t *testing.T) {
	t.Parallel()
	h, err := keyhash.New([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	tag := IndexTag(h, "customer", "c-1")
	if len(tag) != 12 || tag == IndexTag(h, "customer", "c-2") || tag == IndexTag(h, "channel", "c-1") {
		t.Fatalf("tag %q: not a fixed-width per-index keyed hash", tag)
	}
	m := IndexMember(tag, 1_700_000_000_123, "q_1")
	c := page.Encode("quotes/customer", m)
	if got, err := DecodeCursor(c, "quotes/customer", tag); err != nil || got != m {
		t.Fatalf("round trip = %q, %v", got, err)
	}
	if got, err := DecodeCursor("", "quotes/customer", tag); err != nil || got != "" {
		t.Fatalf("empty = %q, %v", got, err)
	}
	if page.Encode("x", "") != "" {
		t.Fatal("no member must be no cursor")
	}
	for name, bad := range map[string]string{
		"other scope":  page.Encode("quotes/all", m),
		"other value":  page.Encode("quotes/customer", IndexMember(IndexTag(h, "customer", "c-2"), 1, "q_1")),
		"not base64":   "***",
		"no separator": page.Encode("quotes/customer", "")[:0] + "cXVvdGVz",
		"short time":   page.Encode("quotes/customer", tag+"|123|q_1"),
		"empty id":     page.Encode("quotes/customer", tag+"|0000000000001|"),
		"spaced id":    page.Encode("quotes/customer", tag+"|0000000000001|a b"),
	} {
		_, err := DecodeCursor(bad, "quotes/customer", tag)
		var ae *apperr.Error
		if !asAppErr(err, &ae) || ae.Kind != apperr.Validation || len(ae.Fields) != 1 || ae.Fields[0].Parameter != "query:cursor" {
			t.Errorf("%s: %v, want a 400 naming the cursor", name, err)
		}
	}
}

// IndexMember is the member index_member writes: tag, the order time in ms zero-padded to 13
// digits, id.
func IndexMember(tag string, orderMs int64, id string) string {
	return fmt.Sprintf("%s|%013d|%s", tag, orderMs, id)
}
