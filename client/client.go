package client

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"
)

// Header names of the two credentials.
const (
	authorizationHeader = "Authorization"
	sessionTokenHeader  = "X-Session-Token"
)

// BearerAuth authenticates one request with an API token (Authorization: Bearer), the
// credential of backend services: a token from POST /v1/tokens, `gateway token mint`, or the
// bootstrap token.
func BearerAuth(token string) RequestEditorFn {
	return func(_ context.Context, req *http.Request) error {
		req.Header.Set(authorizationHeader, "Bearer "+token)
		return nil
	}
}

// SessionAuth authenticates one request with an end user's session token (the
// X-Session-Token header), the credential of the /v1/session operations: the token
// POST /v1/sessions returned.
func SessionAuth(token string) RequestEditorFn {
	return func(_ context.Context, req *http.Request) error {
		req.Header.Set(sessionTokenHeader, token)
		return nil
	}
}

// WithBearerToken authenticates every request of the client with an API token.
func WithBearerToken(token string) ClientOption { return WithRequestEditorFn(BearerAuth(token)) }

// WithSessionToken authenticates every request of the client with a session token.
func WithSessionToken(token string) ClientOption { return WithRequestEditorFn(SessionAuth(token)) }

// Error makes a Problem an error: "hashgate: 412 Precondition Failed: detail".
func (p *Problem) Error() string {
	if p == nil {
		return "hashgate: no problem"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "hashgate: %d %s", p.Status, p.Title)
	if d := p.DetailText(); d != "" {
		b.WriteString(": ")
		b.WriteString(d)
	}
	return b.String()
}

// The accessors below never panic: a member the gateway (or a proxy in front of it) left out
// reads as its zero value, and so does any member of a nil *Problem.

// Slug is the last segment of the problem's type, e.g. "precondition-failed" for
// /problems/precondition-failed: a short stable name to switch on.
func (p *Problem) Slug() string {
	if p == nil {
		return ""
	}
	return p.Type[strings.LastIndexByte(p.Type, '/')+1:]
}

// DetailText is what was wrong with this request, in the gateway's words ("" when absent).
func (p *Problem) DetailText() string {
	if p == nil || p.Detail == nil {
		return ""
	}
	return *p.Detail
}

// RequestID is the id of the request in the gateway's logs ("" when absent).
func (p *Problem) RequestID() string {
	if p == nil || p.RequestId == nil {
		return ""
	}
	return *p.RequestId
}

// FieldErrors lists the failing fields (JSON pointer or parameter, and what is wrong); nil
// when absent.
func (p *Problem) FieldErrors() []FieldError {
	if p == nil || p.Errors == nil {
		return nil
	}
	return *p.Errors
}

// RetryAfterDuration is how long to wait before retrying (429, 503), zero when absent.
func (p *Problem) RetryAfterDuration() time.Duration {
	if p == nil || p.RetryAfter == nil {
		return 0
	}
	return time.Duration(*p.RetryAfter) * time.Second
}

// Where is the failing field's JSON pointer into the body, or the parameter's name.
func (f FieldError) Where() string {
	switch {
	case f.Pointer != nil:
		return *f.Pointer
	case f.Parameter != nil:
		return *f.Parameter
	}
	return ""
}

// Response is what every generated response type (CreateSessionResponse, GetQuoteResponse,
// ...) has.
type Response interface {
	StatusCode() int
	ContentType() string
	GetBody() []byte
}

// Check returns a call's response with an error: the call's own error when it failed, a
// *Problem when the gateway answered with a 4xx or 5xx status, nil otherwise. It takes the
// call's two results as they come:
//
//	rsp, err := client.Check(c.GetCaseWithResponse(ctx, id))
//
// The problem is the RFC 9457 body the gateway sent; an answer without one (from a proxy in
// front, say) gives a Problem with only the status and its text.
func Check[R Response](rsp R, err error) (R, error) {
	if err != nil {
		return rsp, err
	}
	if code := rsp.StatusCode(); code >= 400 {
		return rsp, problemOf(code, rsp.ContentType(), rsp.GetBody())
	}
	return rsp, nil
}

// problemOf decodes an error answer's body into a Problem, filling in what it lacks.
func problemOf(code int, contentType string, body []byte) *Problem {
	p := &Problem{}
	if mt, _, err := mime.ParseMediaType(contentType); err == nil && (mt == "application/problem+json" || mt == "application/json") {
		if err := json.Unmarshal(body, p); err != nil {
			p = &Problem{}
		}
	}
	if p.Status == 0 {
		p.Status = code
	}
	if p.Title == "" {
		p.Title = http.StatusText(code)
	}
	if p.Type == "" {
		p.Type = "about:blank"
	}
	return p
}
