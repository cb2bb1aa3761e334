package robustness

import (
	"net"
	"testing"
)

// A port found free can be taken before the gateway binds it: the gateway process exits with
// "address already in use", or, taken by another gateway, /readyz answers 200 from that one.
// Either way the process starts again on another port, and the test talks to its own.
func TestGatewayProcessesGoOnWhenTheirPortIsTaken(t *testing.T) {
	if testredisUnset(t) {
		t.Skip("the gateway's build and start are checked with the Redis environment (make test)")
	}
	bin := buildGateway(t, t.TempDir())
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	other := startProcesses(t, bin, gatewaySpec{})[0]
	for name, taken := range map[string]string{"by a listener": listener.Addr().String(), "by another gateway": other.proc.addr} {
		t.Run(name, func(t *testing.T) {
			pick := freeAddr
			defer func() { freeAddr = pick }()
			calls := 0
			freeAddr = func(t *testing.T) string {
				if calls++; calls == 1 {
					return taken
				}
				return pick(t)
			}
			g := startProcesses(t, bin, gatewaySpec{})[0]
			if g.proc.addr == taken || calls < 2 {
				t.Fatalf("the gateway was started on the taken address %s (%d picks)", taken, calls)
			}
		})
	}
}
