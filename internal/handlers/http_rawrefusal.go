package handlers

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/hashgate/hashgate/internal/apperr"
)

// ShapeRefusals wraps ln so that the refusals net/http writes by itself, before any handler
// runs, reach the client as RFC 9457 problems like every other refusal instead of plain text:
//
//   - 431 for a request head over http.Server.MaxHeaderBytes (maxHeaderBytes, for the detail),
//   - 400 for a malformed request line or header field, a missing or malformed Host, a
//     conflicting Content-Length,
//   - 501 for a transfer coding other than chunked, 505 for an unsupported HTTP version,
//   - 417 for an Expect header other than 100-continue.
//
// net/http writes each of these in one Write on the connection, with a fixed set of headers no
// handler response has (handler responses carry Date and Content-Length, sorted), just before
// it closes the connection; the wrapper recognises exactly those writes and replaces them with
// a problem with the same status. Every other write passes through untouched. publicURL is
// the base of the problem type URIs (Deps.PublicURL).
func ShapeRefusals(ln net.Listener, maxHeaderBytes int, publicURL string) net.Listener {
	return &refusalListener{Listener: ln, maxHeaderBytes: maxHeaderBytes, publicURL: publicURL}
}

type refusalListener struct {
	net.Listener
	maxHeaderBytes int
	publicURL      string
}

func (l *refusalListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &refusalConn{Conn: c, maxHeaderBytes: l.maxHeaderBytes, publicURL: l.publicURL}, nil
}

// refusalConn is a connection whose server-level refusals are rewritten into problems.
type refusalConn struct {
	net.Conn
	maxHeaderBytes int
	publicURL      string
}

func (c *refusalConn) Write(p []byte) (int, error) {
	if out, ok := shapeRefusal(p, c.maxHeaderBytes, c.publicURL); ok {
		if _, err := c.Conn.Write(out); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// CloseWrite keeps net/http's half-close (it sends the 431 and then waits for the client to
// stop writing before closing, so the client reads the answer rather than a reset).
func (c *refusalConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// netHTTPErrorHeaders are the headers net/http's conn.serve writes with its plain-text refusals.
const netHTTPErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// shapeRefusal returns the problem response replacing p when p is one of net/http's own
// refusals (see ShapeRefusals).
func shapeRefusal(p []byte, maxHeaderBytes int, publicURL string) ([]byte, bool) {
	const proto = "HTTP/1.1 "
	// Every response of the gateway passes here: decide on the first line and what follows it,
	// without allocating, before parsing anything.
	if len(p) < len(proto)+4 || string(p[:len(proto)]) != proto {
		return nil, false
	}
	line := bytes.IndexByte(p, '\r')
	if line < len(proto)+3 {
		return nil, false
	}
	status := string(p[len(proto) : len(proto)+3])
	var reason string // net/http's fixed reason text, if any ("missing required Host header")
	switch {
	case bytes.HasPrefix(p[line:], []byte(netHTTPErrorHeaders)):
		if _, r, ok := strings.Cut(string(p[len(proto)+3:line]), ": "); ok {
			reason = r
		}
	case status == "417" && bytes.HasSuffix(p, []byte("\r\nContent-Length: 0\r\n\r\n")):
		// sendExpectationFailed: written through the response, so with Date and an empty body;
		// no handler of this gateway answers 417.
	default:
		return nil, false
	}
	code, err := strconv.Atoi(status)
	if err != nil {
		return nil, false
	}
	var detail string
	var kind *apperr.Kind
	switch code {
	case 400:
		kind, detail = apperr.MalformedRequest, "The request line or a header field is not well-formed HTTP/1.1."
		if reason != "" {
			detail = "The request is not well-formed HTTP/1.1: " + bounded(reason, 100) + "."
		}
	case 417:
		kind, detail = apperr.ExpectationFailed, "Only the Expect value 100-continue is supported."
	case 431:
		kind, detail = apperr.HeaderTooLarge, "The request line and header fields exceed "+strconv.Itoa(maxHeaderBytes)+" bytes."
	case 501:
		kind, detail = apperr.UnsupportedTransferCoding, "Only the chunked transfer coding is supported."
	case 505:
		kind, detail = apperr.HTTPVersionNotSupported, "Send HTTP/1.1 (or HTTP/1.0)."
	default:
		return nil, false
	}
	body, err := json.Marshal(problemBody{Type: kind.Type(publicURL), Title: kind.Title, Status: kind.Status, Detail: detail})
	if err != nil {
		return nil, false
	}
	var b bytes.Buffer
	b.Grow(256 + len(body))
	b.WriteString(proto)
	b.WriteString(strconv.Itoa(kind.Status))
	b.WriteByte(' ')
	b.WriteString(http.StatusText(kind.Status))
	b.WriteString("\r\nCache-Control: no-store\r\nConnection: close\r\nContent-Type: application/problem+json\r\nContent-Length: ")
	b.WriteString(strconv.Itoa(len(body)))
	b.WriteString("\r\n\r\n")
	b.Write(body)
	return b.Bytes(), true
}
