// Package repo is the kit the stores share; each domain's store is a package below it
// (sessionstore, tokenstore, quotestore, casestore, idemstore) implementing the Store interface
// its service owns. The rules they all keep: one bounded hash per object, every key with a TTL
// set in the same atomic step as its write, every multi-key operation inside one hash tag,
// every transition one Lua script beside the Go that runs it. Key patterns: docs/KEYS.md.
package repo

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/store"
)

// SchemaVersion is written on every hash this version of the gateway creates. Readers accept
// SchemaVersion and SchemaVersion-1.
const SchemaVersion = 2

// schemaCurrent and schemaPrevious are SchemaVersion and SchemaVersion-1 as stored.
var schemaCurrent, schemaPrevious = strconv.Itoa(SchemaVersion), strconv.Itoa(SchemaVersion - 1)

// Keys builds key names: <prefix>:v1:<type>:{<tag>}[:<rest>]. The braces make <tag> the Redis
// Cluster hash tag, so keys with the same tag live in one slot.
type Keys struct{ Prefix string }

// Key returns prefix:v1:typ:{tag} followed by :rest parts.
func (k Keys) Key(typ, tag string, rest ...string) string {
	var b strings.Builder
	b.Grow(len(k.Prefix) + len(typ) + len(tag) + 8 + 24*len(rest))
	b.WriteString(k.Prefix)
	b.WriteString(":v1:")
	b.WriteString(typ)
	b.WriteString(":{")
	b.WriteString(tag)
	b.WriteString("}")
	for _, r := range rest {
		b.WriteByte(':')
		b.WriteString(r)
	}
	return b.String()
}

// Outcome classifies a read, for metrics and for the caller.
type Outcome string

const (
	Found     Outcome = "found"
	Missing   Outcome = "missing"
	Corrupt   Outcome = "corrupt"
	OldSchema Outcome = "old_schema"
)

// Fields is a decoded hash with strict accessors that record what is missing or malformed.
type Fields struct {
	m   map[string]string
	bad []string
}

func NewFields(m map[string]string) *Fields { return &Fields{m: m} }

func (f *Fields) Str(name string) string {
	v, ok := f.m[name]
	if !ok || v == "" {
		f.bad = append(f.bad, name)
	}
	return v
}

func (f *Fields) Opt(name string) string { return f.m[name] }

// Lookup is the value of name and whether the hash holds it (for fields with their own rules).
func (f *Fields) Lookup(name string) (string, bool) {
	v, ok := f.m[name]
	return v, ok
}

// Bad records name as missing or malformed (Err then reports it).
func (f *Fields) Bad(name string) { f.bad = append(f.bad, name) }

// BadNames are the fields recorded missing or malformed, for logs (names, never values).
func (f *Fields) BadNames() []string { return f.bad }

func (f *Fields) Int64(name string) int64 {
	v, ok := f.m[name]
	if !ok {
		f.bad = append(f.bad, name)
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		f.bad = append(f.bad, name)
	}
	return n
}

func (f *Fields) OptInt64(name string) int64 {
	v, ok := f.m[name]
	if !ok || v == "" {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		f.bad = append(f.bad, name)
	}
	return n
}

// Schema checks schemaVersion: current → Found, previous → OldSchema, else corrupt.
func (f *Fields) Schema() Outcome {
	v := f.Int64("schemaVersion")
	switch {
	case len(f.bad) > 0:
		return Corrupt
	case v == SchemaVersion:
		return Found
	case v == SchemaVersion-1:
		return OldSchema
	default:
		f.bad = append(f.bad, "schemaVersion")
		return Corrupt
	}
}

// Err returns a corrupt-object error naming the bad fields (never their values).
func (f *Fields) Err(objType string) error {
	if len(f.bad) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s hash has missing or malformed fields %v", ErrCorrupt, objType, f.bad)
}

// ErrCorrupt marks an object whose hash is missing required fields or holds malformed values
// (apperr.ErrCorrupt, which services test for without importing a store).
var ErrCorrupt = apperr.ErrCorrupt

// CommandError turns a driver error into a domain one: nil → ErrNotFound-wrapped, connectivity →
// storeerr.ErrUnavailable, a key of the wrong type where the operation's object belongs →
// ErrCorrupt (refused, never served), anything else wrapped with the operation name.
func CommandError(op string, err error) error {
	if err == nil {
		return nil
	}
	if rueidis.IsRedisNil(err) {
		return fmt.Errorf("%s: %w", op, apperr.NotFound)
	}
	if re, ok := rueidis.IsRedisErr(err); ok && strings.Contains(re.Error(), "WRONGTYPE") {
		return fmt.Errorf("%s: %w: a key of the wrong type", op, ErrCorrupt)
	}
	return fmt.Errorf("%s: %w", op, store.Classify(err))
}

// FormatMs formats milliseconds for a hash field.
func FormatMs(v int64) string { return strconv.FormatInt(v, 10) }

// TimeFromMs reads a stored millisecond time (zero for 0 or absent).
func TimeFromMs(v int64) time.Time {
	if v <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

// PayloadBytes is the size of a decoded hash, for the payload metric.
func PayloadBytes(m map[string]string) int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v)
	}
	return n
}
