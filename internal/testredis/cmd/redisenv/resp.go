package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// do sends one command to 127.0.0.1:port on a fresh connection (RESP2, any Redis version)
// and returns its reply: a string for a status, bulk or integer reply; arrays are not needed
// here and are refused.
func do(port int, args ...string) (string, error) {
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(host, strconv.Itoa(port)), 500*time.Millisecond)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second)) // FLUSHALL SYNC of a big test run
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write([]byte(b.String())); err != nil {
		return "", err
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", errors.New("empty reply")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", errors.New(line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "", nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
	return "", fmt.Errorf("unexpected reply %q", line)
}

// ping reports whether a Redis answers PING on port.
func ping(port int) bool {
	r, err := do(port, "PING")
	return err == nil && r == "PONG"
}

// infoField is field of INFO section on port ("" when unknown or unreachable).
func infoField(port int, section, field string) string {
	info, err := do(port, "INFO", section)
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return v
		}
	}
	return ""
}

// configFile is the configuration file of the Redis answering on port; ok is false when none
// answers.
func configFile(port int) (string, bool) {
	if !ping(port) {
		return "", false
	}
	return infoField(port, "server", "config_file"), true
}
