package repo

import (
	"github.com/hashgate/hashgate/internal/keyhash"
)

// List indexes (the object_index snippet, lua/object_index.lua, says how scripts keep them): a
// tenant's sorted sets of lexical members `<valueTag>|<orderKey>|<id>` beside its objects, one
// per filter, with a coordinates hash (`where`) naming each object's members. Keys and bounds:
// docs/KEYS.md, "List indexes".

// IndexTagBytes is the width of a value tag: 9 bytes, 12 base64url characters.
const IndexTagBytes = 9

// IndexTag is the value tag of value in the index named index: a keyed hash (never the raw
// value, which may be a customer's or a person's id), fixed width, so one value's members are
// one lexical range. Two values whose tags collide share a range; a list script checks every
// candidate's stored value, so a collision costs reads, never a wrong answer.
func IndexTag(h *keyhash.Hasher, index, value string) string {
	return h.Tag("index-value", IndexTagBytes, index, value)
}

// IndexKeys are the keys of one type's indexes in a tenant, in the order the scripts take them
// (KEYS[first] the coordinates hash, then each index): `<p>:v1:<typ>:{<tag>}:where`, then
// `<p>:v1:<typ>:{<tag>}:<name>` for each name.
func (k Keys) IndexKeys(typ, tag string, names ...string) []string {
	out := make([]string, 0, len(names)+1)
	out = append(out, k.Key(typ, tag, "where"))
	for _, n := range names {
		out = append(out, k.Key(typ, tag, n))
	}
	return out
}
