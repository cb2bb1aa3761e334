package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/hashgate/hashgate/internal/apperr"
)

// authFailures counts the requests refused before any operation ran, by reason (the refusal's
// problem type: unauthenticated when no credential was sent, invalid-credentials,
// insufficient-scope, ...) and by the credential the request carried (session, bearer, both,
// none): hashgate_auth_failures on /metrics. Like the session service's authentication counts
// they are atomics observed at collection, so a flood of refusals costs no metric work per
// request. A refusal for Redis trouble (503) is not an authentication failure and is not
// counted. Which check refused a session token (unknown, malformed, ...) is
// hashgate_session_authentications' result.
type authFailures struct {
	n [len(failReasons)][len(failCredentials)]atomic.Int64
}

// failReasons are the counted problem types; the last stands for any other.
var failReasons = [...]string{"unauthenticated", "invalid-credentials", "insufficient-scope", "other"}

var failCredentials = [...]string{"none", "session", "bearer", "both"}

// newAuthFailures registers the counter on m (nil: counted, not exported).
func newAuthFailures(m metric.Meter) (*authFailures, error) {
	f := &authFailures{}
	if m == nil {
		return f, nil
	}
	c, err := m.Int64ObservableCounter("hashgate_auth_failures",
		metric.WithDescription("Requests refused by authentication, by reason (problem type) and credential sent (none, session, bearer, both)."))
	if err != nil {
		return nil, fmt.Errorf("handlers: metrics: %w", err)
	}
	var opts [len(failReasons)][len(failCredentials)]metric.ObserveOption
	for i, reason := range failReasons {
		for j, cred := range failCredentials {
			opts[i][j] = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", reason), attribute.String("credential", cred)))
		}
	}
	if _, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for i := range f.n {
			for j := range f.n[i] {
				if v := f.n[i][j].Load(); v > 0 { // no series for what never happened
					o.ObserveInt64(c, v, opts[i][j])
				}
			}
		}
		return nil
	}, c); err != nil {
		return nil, fmt.Errorf("handlers: metrics: %w", err)
	}
	return f, nil
}

// count records the refusal err of request r.
func (f *authFailures) count(r *http.Request, err error) {
	var p *apperr.Error
	if f == nil || !errors.As(err, &p) || p.Kind == apperr.Unavailable {
		return
	}
	reason := len(failReasons) - 1
	for i, name := range failReasons[:len(failReasons)-1] {
		if p.Kind.Slug == name {
			reason = i
			break
		}
	}
	cred := 0
	if r.Header.Get(SessionHeaderName) != "" || cookieValue(r, SessionCookieName) != "" {
		cred = 1
	}
	if r.Header.Get("Authorization") != "" {
		cred += 2
	}
	f.n[reason][cred].Add(1)
}
