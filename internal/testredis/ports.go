package testredis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Ports found free are released before a server binds them, so a parallel test's server can
// take one first: the server meant for it exits, or another process answers there. Every
// start notices (errPortTaken) and starts over on new ports.

// errPortTaken: the server listening on a port is not the process the test started.
var errPortTaken = errors.New("the port is served by another process")

// PortTaken reports whether err says another process took the port (WaitOwn): the server
// is to start again on another.
func PortTaken(err error) bool { return errors.Is(err, errPortTaken) }

// freePorts reserves n distinct free loopback ports (all held open at once, then released).
// A variable: a test hands out a taken port to see a cluster start over.
var freePorts = reservePorts

func reservePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// Exited reports whether cmd's process has ended (a zombie not yet waited for, on Linux).
func Exited(cmd *exec.Cmd) bool {
	if cmd.Process == nil {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/stat")
	if err != nil {
		return os.IsNotExist(err)
	}
	// pid (comm) state ...: the state follows the last ')'.
	i := strings.LastIndexByte(string(stat), ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// waitListening polls until something accepts connections on port; it gives up with
// errPortTaken as soon as cmd (the process meant to listen there, nil if none) has exited.
func waitListening(ctx context.Context, port int, cmd *exec.Cmd) error {
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for {
		conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			conn.Close()
			return nil
		}
		if cmd != nil && Exited(cmd) {
			return fmt.Errorf("the server for %s exited (%w?)", addr, errPortTaken)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("nothing listens on %s: %w", addr, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// WaitOwn waits until cmd's server listens on port and is the one listening there:
// errPortTaken when it exited or another process listens. It asks the kernel, not the server
// (which may require a password).
func WaitOwn(ctx context.Context, port int, cmd *exec.Cmd) error {
	if err := waitListening(ctx, port, cmd); err != nil {
		return err
	}
	own, err := ListensOn(cmd.Process.Pid, port)
	if err != nil {
		return err
	}
	if !own {
		return fmt.Errorf("127.0.0.1:%d: %w", port, errPortTaken)
	}
	return nil
}

// ListensOn reports whether process pid holds the socket listening on 127.0.0.1:port (Linux:
// /proc/net/tcp names each socket's inode, /proc/<pid>/fd the process's sockets). A test that
// starts a server on a port found free asks it: another process may have taken the port.
func ListensOn(pid, port int) (bool, error) {
	table, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return false, err
	}
	local := fmt.Sprintf("0100007F:%04X", port)
	inode := ""
	for _, line := range strings.Split(string(table), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 9 && f[1] == local && f[3] == "0A" { // 0A: LISTEN
			inode = f[9]
		}
	}
	if inode == "" {
		return false, nil
	}
	fds, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		return false, nil // (the process is gone)
	}
	for _, fd := range fds {
		if target, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + fd.Name()); target == "socket:["+inode+"]" {
			return true, nil
		}
	}
	return false, nil
}
