package robustness

import "time"

// The durability settings' matrix (-robustness.settings; docs/ROBUSTNESS.md, "What the
// settings guarantee"): every scenario that can lose an acknowledged write, run under each
// setting, so the table of acknowledged-then-lost objects per scenario and setting is
// measured. A run already in the suite under the same name is that cell (partition/durable=0
// is the control).

// replDelay is what the crash-delayed scenario's replication link holds each byte for: the
// replica runs that far behind, so a crash loses what the primary acknowledged in the last
// replDelay unless the write waited for the replica.
const replDelay = 200 * time.Millisecond

// settingsMatrix is the matrix's runs by name (scenario/setting).
func settingsMatrix() map[string]runCase {
	scenarios := []struct {
		name string
		rc   runCase
	}{
		{"crash-delayed", runCase{fault: "crash", linkDelay: replDelay}},
		{"partition", runCase{fault: "partition"}},
		{"sentinel-split", runCase{fault: "sentinel-split", sentinel: true}},
		{"stall", runCase{fault: "stall"}},
		{"sentinel-zombie", runCase{fault: "sentinel-zombie", sentinel: true, processes: 1}},
	}
	settings := []struct {
		name, durable string
		env           map[string]string
		redis         []string
		unsafe        bool
	}{
		// Nothing confirmed.
		{name: "durable=0", durable: "0", unsafe: true},
		// WAIT 1 alone (no WAITAOF): what a failover needs.
		{name: "wait-only", durable: "auto", env: map[string]string{"GATEWAY_DURABLE_AOF": "off"}},
		// The defaults: WAIT 1 and WAITAOF 1 0, reads confirmed too.
		{name: "durable=auto", durable: "auto"},
		// Writes confirmed, reads not (GATEWAY_DURABLE_READS=off): a read may show a write
		// answered 503 that the failover then undoes (finding 14).
		{name: "reads-off", durable: "auto", env: map[string]string{"GATEWAY_DURABLE_READS": "off"}, unsafe: true},
		// The servers' min-replicas-to-write 1 (lag 1 s) alone, nothing confirmed by the gateway.
		{name: "min-replicas-only", durable: "0", redis: minReplicas, unsafe: true},
	}
	out := map[string]runCase{}
	for _, sc := range scenarios {
		for _, st := range settings {
			rc := sc.rc
			rc.durable, rc.env, rc.redis, rc.unsafe, rc.settings = st.durable, st.env, st.redis, st.unsafe, true
			out[sc.name+"/"+st.name] = rc
		}
	}
	return out
}
