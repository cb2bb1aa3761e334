package webhooks

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// The HTTP client deliveries go out on, guarded against server-side request forgery: a
// webhook URL is the caller's, so the gateway must not become its way into the private
// network. The check is made at dial time, on the address actually dialled (after DNS), so a
// name that resolves to a private address, or re-resolves to one later (DNS rebinding), is
// refused too. Redirects are not followed (a 3xx is a failed attempt, as the specification
// says), proxies from the environment are not used (they would dial for us), every request
// has a timeout, and at most maxResponseBytes of an answer are read.

// ErrPrivateAddress refuses a dial to an address that is not public.
var ErrPrivateAddress = errors.New("the address is private, loopback, link-local or otherwise not public")

// maxResponseBytes bounds what is read of a receiver's answer (its status is what counts).
const maxResponseBytes = 4096

// DefaultTimeout bounds one delivery attempt, connection included.
const DefaultTimeout = 10 * time.Second

// PublicAddr reports whether ip is a public unicast address: not loopback, private (RFC 1918,
// fc00::/7), link-local, multicast, unspecified, CGNAT (100.64.0.0/10) or another special range.
func PublicAddr(ip net.IP) bool {
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return false
	}
	a = a.Unmap()
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() || !a.IsGlobalUnicast() {
		return false
	}
	for _, p := range specialRanges {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// specialRanges are non-public ranges netip does not classify.
var specialRanges = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // this network
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64 (would reach IPv4 private space)
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
}

// NewClient returns the delivery client: timeout per attempt, no redirects, no proxy, and
// unless allowPrivate every dial to a non-public address refused.
func NewClient(timeout time.Duration, allowPrivate bool) *http.Client {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	d := &net.Dialer{Timeout: timeout}
	if !allowPrivate {
		d.Control = func(_, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			if ip := net.ParseIP(host); ip == nil || !PublicAddr(ip) {
				return fmt.Errorf("dial %s: %w", host, ErrPrivateAddress)
			}
			return nil
		}
	}
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            d.DialContext,
		TLSHandshakeTimeout:    timeout,
		ResponseHeaderTimeout:  timeout,
		MaxIdleConns:           64,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 16 << 10,
	}
	return &http.Client{
		Transport:     tr,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
