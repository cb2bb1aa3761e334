package testredis

import (
	"net"
	"os"
	"strconv"
	"testing"
	"time"
)

// A connection both sides have closed leaves no descriptor open in the proxy: a long run
// with reconnecting clients (Sentinels, gateways during partitions) otherwise runs the test
// process out of descriptors ("too many open files").
func TestProxyClosesFinishedConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				buf := make([]byte, 64)
				for {
					if _, err := c.Read(buf); err != nil {
						c.Close()
						return
					}
				}
			}()
		}
	}()
	p := StartProxy(t, ln.Addr().String(), 0)
	before := openFiles(t)
	const n = 200
	for range n {
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(p.Port))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte("PING\r\n")); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for openFiles(t) > before+n/10 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := openFiles(t); got > before+n/10 {
		t.Fatalf("%d descriptors open after %d connections came and went (%d before)", got, n, before)
	}
}

func openFiles(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(fds)
}
