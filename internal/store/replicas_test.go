package store

import "testing"

// CLUSTER NODES names a replica by the "slave" flag, whether it is connected or failed.
func TestClusterHasReplica(t *testing.T) {
	t.Parallel()
	masters := "a1 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460\n" +
		"b2 127.0.0.1:7001@17001 master - 0 1 2 connected 5461-16383\n"
	for name, tc := range map[string]struct {
		nodes string
		want  bool
	}{
		"masters only":     {masters, false},
		"replica":          {masters + "c3 127.0.0.1:7002@17002 slave a1 0 1 1 connected\n", true},
		"failed replica":   {masters + "c3 127.0.0.1:7002@17002 slave,fail a1 1 1 1 disconnected\n", true},
		"myself a replica": {"c3 127.0.0.1:7002@17002 myself,slave a1 0 0 1 connected\n", true},
		"empty":            {"", false},
	} {
		if got := clusterHasReplica(tc.nodes); got != tc.want {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
}
