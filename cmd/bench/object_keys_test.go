package main

import "testing"

// The patterns are the documented key names with the tenant tag left open.
func TestObjectKeyPattern(t *testing.T) {
	t.Parallel()
	for typ, want := range map[string]string{"quote": "hg:v1:quote:{*}:q_1", "case": "hg:v1:case:{*}:q_1"} {
		if got := objectKeyPattern(typ, "q_1"); got != want {
			t.Errorf("objectKeyPattern(%q) = %q, want %q", typ, got, want)
		}
	}
}
