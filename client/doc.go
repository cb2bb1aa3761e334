// Package client is the Go client of hashgate, generated from the gateway's contract
// (api/openapi.yaml) by oapi-codegen, plus a thin hand-written layer.
//
// NewClientWithResponses returns a client with one method per operation of the contract
// (CreateSessionWithResponse, GetQuoteWithResponse, EscalateCaseWithResponse, ...), each
// taking typed parameters and bodies and returning a typed response: JSON200, JSON201, ...
// hold the decoded success bodies, HTTPResponse the raw answer (headers such as ETag).
//
// The hand-written layer adds:
//
//   - the two credentials: WithBearerToken (an API token, as backend services call) and
//     WithSessionToken (an end user's session token, as a frontend calls) for a whole client,
//     or BearerAuth and SessionAuth for one request;
//   - problems as errors: Check turns a call's answer into an error when the gateway refused
//     it, and that error is a *Problem (RFC 9457) that errors.As finds; its accessors
//     (DetailText, RequestID, FieldErrors, RetryAfterDuration) never panic on a member the
//     answer left out.
//
// A call then reads:
//
//	c, err := client.NewClientWithResponses("http://localhost:8080", client.WithBearerToken(token))
//	...
//	rsp, err := client.Check(c.GetQuoteWithResponse(ctx, quoteID))
//	var p *client.Problem
//	switch {
//	case errors.As(err, &p) && p.Status == http.StatusNotFound:
//		// no such quote in this tenant
//	case err != nil:
//		return err // another refusal (p.DetailText() says why), or no answer at all
//	}
//	quote, etag := rsp.JSON200, rsp.HTTPResponse.Header.Get("ETag")
//
// The generated code is client.gen.go; `go generate ./...` regenerates it from the spec.
package client
