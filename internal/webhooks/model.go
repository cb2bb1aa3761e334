package webhooks

import (
	"net"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/auth"
)

// Bounds of a webhook.
const (
	// MaxURLBytes bounds a webhook's URL.
	MaxURLBytes = 2048
	// MaxEventTypes bounds the event types (or patterns) one webhook subscribes to.
	MaxEventTypes = 32
	// maxEventTypeBytes bounds one event type or pattern.
	maxEventTypeBytes = 64
	// MaxErrorBytes bounds the last error a delivery record keeps.
	MaxErrorBytes = 200
	// DefaultRecentDeliveries is how many delivery records a webhook keeps, newest first.
	DefaultRecentDeliveries = 100
)

// Webhook is an endpoint a tenant's events are delivered to.
type Webhook struct {
	ID        string
	Tenant    string
	URL       string
	Events    []string // event types; "*" every type, "session.*" every type under session.
	CreatedAt time.Time
	ExpiresAt time.Time
}

// Wants reports whether the webhook subscribes to events of type typ.
func (w *Webhook) Wants(typ string) bool {
	for _, p := range w.Events {
		switch {
		case p == "*", p == typ:
			return true
		case strings.HasSuffix(p, ".*") && strings.HasPrefix(typ, p[:len(p)-1]):
			return true
		}
	}
	return false
}

// Delivery statuses.
const (
	StatusPending   = "PENDING"   // not delivered yet, another attempt at NextAttemptAt
	StatusDelivered = "DELIVERED" // the receiver answered 2xx
	StatusFailed    = "FAILED"    // given up: the retry window passed, or the event left the stream
)

// Delivery is the state of one event's delivery to one webhook.
type Delivery struct {
	MessageID     string // the webhook-id header: the event's id (a ping's own)
	EventType     string
	Status        string
	Attempts      int
	StatusCode    int    // the receiver's last HTTP status, 0 when none answered
	LastError     string // why the last attempt failed, at most MaxErrorBytes
	NextAttemptAt time.Time
	UpdatedAt     time.Time
}

// idPattern guards the keys: a webhook id reaches a key only in this shape.
var idPattern = regexp.MustCompile(`^wh_[0-9a-hjkmnp-tv-z]{26}$`)

// ValidID reports whether id has a webhook id's shape.
func ValidID(id string) bool { return idPattern.MatchString(id) }

// NewID returns a fresh, time-ordered webhook id.
func NewID() string { return "wh_" + auth.NewTokenID(time.Now()) }

// eventTypePattern: dotted lower-case names, optionally ending in ".*", or "*" alone.
var eventTypePattern = regexp.MustCompile(`^(\*|[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*(\.\*)?)$`)

// validateNew checks a webhook's URL and event types; allowPrivate admits a literal private
// or loopback address (the dialer checks every resolved address again at each delivery).
func validateNew(rawURL string, events []string, allowPrivate bool) error {
	if len(rawURL) > MaxURLBytes {
		return apperr.Newf(apperr.Validation, "url is longer than %d bytes.", MaxURLBytes)
	}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.Fragment != "" {
		return apperr.New(apperr.Validation,
			"url must be an absolute http(s) URL without user information or fragment, e.g. https://hooks.example.com/hashgate.")
	}
	if ip := net.ParseIP(u.Hostname()); ip != nil && !allowPrivate && !PublicAddr(ip) {
		return apperr.New(apperr.Validation,
			"url names a private, loopback or link-local address: webhooks go to public addresses (GATEWAY_WEBHOOK_ALLOW_PRIVATE=true admits private ones).")
	}
	if len(events) == 0 || len(events) > MaxEventTypes {
		return apperr.Newf(apperr.Validation,
			"events must list 1 to %d event types, e.g. [\"session.revoked\", \"token.*\"], or [\"*\"] for every type.", MaxEventTypes)
	}
	for i, e := range events {
		if len(e) > maxEventTypeBytes || !eventTypePattern.MatchString(e) {
			return apperr.Newf(apperr.Validation,
				"events[%d] is not an event type: a dotted lower-case name such as session.revoked, a prefix such as token.*, or * for every type.", i)
		}
	}
	return nil
}
