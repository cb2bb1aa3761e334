package webhooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"
)

// result is what one attempt got: the receiver's status (0 when none answered), why it
// failed (empty on a 2xx), and the Retry-After it asked for.
type result struct {
	status     int
	err        string
	retryAfter time.Duration
}

func (r result) ok() bool { return r.status >= 200 && r.status < 300 }

// userAgent names the sender to receivers.
const userAgent = "hashgate-webhooks/1"

// send POSTs body to url as message msgID, signed with secret at the attempt's time, and
// reads at most maxResponseBytes of the answer.
func send(ctx context.Context, c *http.Client, url string, secret []byte, msgID string, body []byte) result {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return result{err: clip("bad request: " + err.Error())}
	}
	now := time.Now()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("webhook-id", msgID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("webhook-signature", Sign(secret, msgID, now, body))
	resp, err := c.Do(req)
	if err != nil {
		return result{err: clip(attemptError(err))}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBytes))
	r := result{status: resp.StatusCode}
	switch {
	case r.ok():
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		r.err = fmt.Sprintf("HTTP %d: redirects are not followed; register the final URL", resp.StatusCode)
	default:
		r.err = fmt.Sprintf("HTTP %d", resp.StatusCode)
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			r.retryAfter = time.Duration(min(s, 86400)) * time.Second
		}
	}
	return r
}

// attemptError says why no answer came, without the URL's query (it may carry a token).
func attemptError(err error) string {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			err = inner
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timeout: no answer in time"
	}
	return err.Error()
}

// clip bounds s to MaxErrorBytes on a rune boundary.
func clip(s string) string {
	if len(s) <= MaxErrorBytes {
		return s
	}
	s = s[:MaxErrorBytes]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
