package keyaudit

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/redis/rueidis"
)

// List indexes (internal/repo/lua/object_index.lua): a family is a tenant's coordinates hash
// `<p>:v1:<type>idx:{<tag>}:where` (field = object id, value = its member in each index) and
// its sorted sets `<p>:v1:<type>idx:{<tag>}:<name>` of members `<valueTag>|<orderKey>|<id>`;
// the objects are `<p>:v1:<type>:{<tag>}:<id>`. CheckIndex holds a family to that: every
// member is the one the hash names for its id (nothing orphaned, nothing forgotten), and, with
// live, every id listed is a live object and every live object is listed: what a list answers
// after its prune (an expired object keeps its entries until a prune, so the scan after the
// suite checks only the first part).

var indexKeyPattern = regexp.MustCompile(`^(.+):v1:([a-z]+)idx:\{([^:{}]+)\}:([a-z]+)$`)

// IndexFamily is one tenant's indexes of one type.
type IndexFamily struct {
	Where   string   // the coordinates hash
	Indexes []string // the sorted sets
	Objects string   // the objects' key prefix, `<p>:v1:<type>:{<tag>}:`
}

// IndexFamilyOf is the family key belongs to, by name (ok false: not an index key).
func IndexFamilyOf(key string) (fam IndexFamily, name string, ok bool) {
	m := indexKeyPattern.FindStringSubmatch(key)
	if m == nil {
		return IndexFamily{}, "", false
	}
	base := m[1] + ":v1:" + m[2] + "idx:{" + m[3] + "}:"
	return IndexFamily{Where: base + "where", Objects: m[1] + ":v1:" + m[2] + ":{" + m[3] + "}:"}, m[4], true
}

// CheckIndex checks fam (members are matched by value, so Indexes may come in any order and
// leave out an index that is empty, hence absent). With live, every listed id must name an existing object and every existing object (keys
// `<Objects><id>` with no further ':' part, found by SCAN on c) must be listed.
func CheckIndex(ctx context.Context, c rueidis.Client, fam IndexFamily, live bool) ([]Violation, error) {
	var out []Violation
	add := func(key, format string, args ...any) {
		out = append(out, Violation{Key: key, Rule: "index", Msg: fmt.Sprintf(format, args...)})
	}
	where, err := c.Do(ctx, c.B().Hgetall().Key(fam.Where).Build()).AsStrMap()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", fam.Where, err)
	}
	// member → how many indexes the coordinates hash names it in (two indexes of one object
	// may hold the same member: a case's by updatedAt and by dueAt when the two times are equal)
	named := map[string]int{}
	for id, v := range where {
		for _, m := range strings.Fields(v) {
			if m == "-" {
				continue
			}
			if !strings.HasSuffix(m, "|"+id) {
				add(fam.Where, "%s names a member of another id", id)
			}
			named[m]++
		}
	}
	for _, key := range fam.Indexes {
		members, err := c.Do(ctx, c.B().Zrange().Key(key).Min("0").Max("-1").Build()).AsStrSlice()
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", key, err)
		}
		for _, m := range members {
			if named[m] == 0 {
				add(key, "member %q is not one the coordinates hash names (orphaned)", m)
				continue
			}
			if named[m]--; named[m] == 0 {
				delete(named, m)
			}
		}
	}
	for m := range named {
		add(fam.Where, "names %q, which no index holds", m)
	}
	if !live {
		return out, nil
	}
	objects, err := scanObjects(ctx, c, fam.Objects)
	if err != nil {
		return nil, err
	}
	for id := range where {
		if !objects[id] {
			add(fam.Where, "lists %s, which is gone (expired or deleted)", id)
		}
	}
	for id := range objects {
		if _, ok := where[id]; !ok {
			add(fam.Objects+id, "a live object no index lists")
		}
	}
	return out, nil
}

// scanObjects is the ids of the keys `<prefix><id>` (no further ':' part) on every master.
func scanObjects(ctx context.Context, c rueidis.Client, prefix string) (map[string]bool, error) {
	ids := map[string]bool{}
	for addr, node := range c.Nodes() {
		var cursor uint64
		for {
			e, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match(globEscape(prefix)+"*").Count(500).Build()).AsScanEntry()
			if err != nil {
				if strings.Contains(err.Error(), "READONLY") || strings.Contains(err.Error(), "MOVED") {
					break
				}
				return nil, fmt.Errorf("scan %s: %w", addr, err)
			}
			for _, k := range e.Elements {
				if id := strings.TrimPrefix(k, prefix); !strings.Contains(id, ":") {
					ids[id] = true
				}
			}
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
	return ids, nil
}

// globEscape escapes SCAN MATCH's special characters in s.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// indexFamilies gathers the index keys a scan met into families.
type indexFamilies map[string]*IndexFamily

func (f indexFamilies) add(key string) {
	fam, name, ok := IndexFamilyOf(key)
	if !ok {
		return
	}
	cur := f[fam.Where]
	if cur == nil {
		cur = &fam
		f[fam.Where] = cur
	}
	if name != "where" {
		cur.Indexes = append(cur.Indexes, strings.TrimSuffix(fam.Where, "where")+name)
	}
}

// check runs the structural check of every family the scan met.
func (f indexFamilies) check(ctx context.Context, c rueidis.Client) []Violation {
	var out []Violation
	for _, fam := range f {
		vs, err := CheckIndex(ctx, c, *fam, false)
		if err != nil {
			out = append(out, Violation{Key: fam.Where, Rule: "error", Msg: err.Error()})
		}
		out = append(out, vs...)
	}
	return out
}
