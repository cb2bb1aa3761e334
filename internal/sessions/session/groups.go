package session

import "strings"

// Bounds of a session's groups: at most MaxGroups, each 1..MaxGroupBytes characters of
// A-Z a-z 0-9 . _ : @ / + - (no comma or space: the store and X-Auth-Groups join them with
// commas).
const (
	MaxGroups     = 32
	MaxGroupBytes = 64
	// MaxGroupsBytes is the longest joined form: MaxGroups names and the commas between them.
	MaxGroupsBytes = MaxGroups*(MaxGroupBytes+1) - 1
)

// GroupsSep joins a session's groups in its hash and in X-Auth-Groups.
const GroupsSep = ","

// ValidGroup reports whether g is a group name within the bounds and charset.
func ValidGroup(g string) bool {
	if g == "" || len(g) > MaxGroupBytes {
		return false
	}
	for i := 0; i < len(g); i++ {
		c := g[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("._:@/+-", c) >= 0) {
			return false
		}
	}
	return true
}

// JoinGroups is the stored form of groups ("" for none).
func JoinGroups(groups []string) string { return strings.Join(groups, GroupsSep) }

// SplitGroups is the groups of their stored form (nil for "").
func SplitGroups(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, GroupsSep)
}
