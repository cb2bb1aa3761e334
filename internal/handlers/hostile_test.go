package handlers

// Hostile input: every operation of the contract (paths × methods, read from the embedded spec)
// is sent wrong JSON types for each property of its request schema, oversized and invalid
// strings, deep nesting, duplicate members, NUL bytes, wrong content types, hostile path, query
// and header parameters and hostile session credentials. Every answer must be a 4xx problem,
// and the keys under the test's prefix — with their values and TTLs — must be exactly as before.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

const (
	// hostileHuge is over the 64 KiB body limit (413); hostileLarge is under it, so the
	// validator must refuse it on its own (400).
	hostileHuge  = 1 << 20
	hostileLarge = 60 << 10
	// hostileDepth is the nesting depth of the deep-nesting bodies Go's JSON parser refuses;
	// hostileValueDepth that of the deep values inside a body, kept low so that a gateway that
	// lets them reach schema validation fails TestHostileRefusalCost rather than exhausting
	// memory here.
	hostileDepth      = 10000
	hostileValueDepth = 200
	// hostileArray is the length of the huge arrays (every array of the contract has
	// maxItems ≤ 1000).
	hostileArray = 8192
	// hostileRealStride: each real backend runs every hostileRealStride-th case, starting at a
	// different offset, so the real backends together still cover the whole matrix.
	hostileRealStride = 4
)

var hostileAllScopes = []string{"sessions:read", "sessions:write", "tokens:read", "tokens:write",
	"quotes:read", "quotes:write", "cases:read", "cases:write", "events:read", "webhooks:read", "webhooks:write"}

// hostileNames is the names of cmds, space-separated (their arguments may hold secrets).
func hostileNames(cmds []testredis.Command) string {
	names := make([]string, len(cmds))
	for i, c := range cmds {
		names[i] = c.Name()
	}
	return strings.Join(names, " ")
}

// --- requests --------------------------------------------------------------------------------

// hostileReq is one request of the matrix. target is already percent-encoded; header values
// are set verbatim (they may hold bytes a real client library would refuse to send).
type hostileReq struct {
	name   string
	method string
	target string
	ct     string
	body   []byte
	// chunked sends the body without a Content-Length.
	chunked bool
	hdr     []string
	// want is the exact status; 0 accepts any 4xx.
	want int
}

func (h *harness) sendHostile(r hostileReq) *httptest.ResponseRecorder {
	var rd io.Reader
	if r.body != nil {
		rd = bytes.NewReader(r.body)
	}
	req := httptest.NewRequest(r.method, r.target, rd)
	if r.chunked {
		req.ContentLength = -1
		req.Body = io.NopCloser(bytes.NewReader(r.body))
	}
	if r.ct != "" {
		req.Header.Set("Content-Type", r.ct)
	}
	for i := 0; i+1 < len(r.hdr); i += 2 {
		k := http.CanonicalHeaderKey(r.hdr[i])
		req.Header[k] = append(req.Header[k], r.hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.e.ServeHTTP(rec, req)
	return rec
}

// hostileHandlerStatus are the refusals only a handler gives (after validation let the request in).
var hostileHandlerStatus = map[int]bool{http.StatusNotFound: true, http.StatusConflict: true, http.StatusGone: true,
	http.StatusPreconditionFailed: true, http.StatusUnprocessableEntity: true, http.StatusPreconditionRequired: true,
	http.StatusTooManyRequests: true}

// hostileRefusal reports (as a string, "" when fine) whether rec is a refusal as r expects.
func hostileRefusal(r hostileReq, rec *httptest.ResponseRecorder) string {
	body := rec.Body.String()
	if len(body) > 240 {
		body = body[:240] + "…"
	}
	switch {
	case r.want == http.StatusBadRequest && hostileHandlerStatus[rec.Code]:
		return fmt.Sprintf("status %d, want 400: the validator let it through to the handler: %s", rec.Code, body)
	case r.want != 0 && rec.Code != r.want:
		return fmt.Sprintf("status %d, want %d: %s", rec.Code, r.want, body)
	case rec.Code < 400 || rec.Code > 499:
		return fmt.Sprintf("status %d, want 4xx: %s", rec.Code, body)
	case rec.Header().Get("Content-Type") != "application/problem+json":
		return fmt.Sprintf("status %d with content type %q: %s", rec.Code, rec.Header().Get("Content-Type"), body)
	}
	var p problem
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		return fmt.Sprintf("status %d, problem body does not decode (%v): %s", rec.Code, err, body)
	}
	if p.Type == "" || p.Title == "" || p.Status != rec.Code {
		return fmt.Sprintf("status %d, incomplete problem: %s", rec.Code, body)
	}
	return ""
}

// --- fixtures --------------------------------------------------------------------------------

// hostileEnv is a wired harness with one live object of every kind, created before the hostile
// phase: a request that got past validation would act on them, and the snapshot would show it.
type hostileEnv struct {
	h *harness
	// raw is the store without the recorder (snapshots read through it).
	raw       *store.Store
	rec       *testredis.Recorder
	bearer    string // "Bearer <all scopes>"
	session   SessionToken
	device    SessionToken // alice's second session: the target of session-id paths
	challenge MfaChallenge
	tokenID   string
	quoteID   string
	quoteETag string
	caseID    string
	caseETag  string
	webhookID string
}

func newHostileEnv(t *testing.T, b testredis.Backend) *hostileEnv {
	t.Helper()
	env := &hostileEnv{}
	// Every domain service as the gateway wires it (internal/app, its configuration defaults),
	// over the harness's store with every command recorded.
	env.raw = testredis.Open(t, b)
	if err := env.raw.LoadScripts(context.Background(), repo.ScriptBodies()...); err != nil {
		t.Fatal(err)
	}
	env.rec = testredis.NewRecorder(env.raw.Client)
	recorded := *env.raw
	recorded.Client = env.rec
	h := newHarnessOn(t, &recorded, testredis.Prefix(t), nil, nil)
	env.h, env.bearer = h, h.bearer("acme", hostileAllScopes...)
	auth := []string{"Authorization", env.bearer}
	created := func(rec *httptest.ResponseRecorder, what string, v any) {
		t.Helper()
		if rec.Code != http.StatusCreated && rec.Code != http.StatusOK {
			t.Fatalf("fixture %s: %d %s", what, rec.Code, rec.Body)
		}
		decode(t, rec, v)
	}
	newSession := map[string]any{"userId": "alice", "authLevel": "BASIC"}
	created(h.do("POST", "/v1/sessions", newSession, auth...), "session", &env.session)
	created(h.do("POST", "/v1/sessions", newSession, auth...), "second session", &env.device)
	created(h.do("POST", "/v1/sessions/"+string(env.device.SessionId)+"/mfa/challenge", nil, auth...), "challenge", &env.challenge)
	var issued TokenIssued
	created(h.do("POST", "/v1/tokens", tokenRequest(3600, "quotes:read"), auth...), "token", &issued)
	env.tokenID = string(issued.TokenId)
	var q quoteJSON
	created(h.do("POST", "/v1/quotes", quoteBody, auth...), "quote", &q)
	rec := h.do("PUT", "/v1/quotes/"+q.QuoteId+"/items/a", map[string]any{"sku": "SKU-1", "quantity": 1, "unitPriceMinor": 100},
		append(auth, "If-Match", `"1"`)...)
	created(rec, "quote item", &q)
	env.quoteID, env.quoteETag = q.QuoteId, rec.Header().Get("ETag")
	var c caseJSON
	rec = h.do("POST", "/v1/cases", caseBody(time.Now().Add(time.Hour)), auth...)
	created(rec, "case", &c)
	env.caseID, env.caseETag = c.CaseId, rec.Header().Get("ETag")
	// A webhook whose pings fail at once: localhost resolves to loopback, refused at dial.
	var wh struct{ WebhookId string }
	created(h.do("POST", "/v1/webhooks", map[string]any{"url": "http://localhost:1/hook", "events": []string{"*"}}, auth...), "webhook", &wh)
	env.webhookID = wh.WebhookId
	return env
}

// The current ETags of the fixtures, substituted into header values when a request is sent
// (a write that got through changes them, and later cases must not fail for a stale ETag).
const (
	hostileQuoteETag = "\x01quote-etag"
	hostileCaseETag  = "\x01case-etag"
)

// resolve substitutes the fixtures' current ETags.
func (env *hostileEnv) resolve(r hostileReq) hostileReq {
	rp := strings.NewReplacer(hostileQuoteETag, env.quoteETag, hostileCaseETag, env.caseETag)
	r.hdr = slices.Clone(r.hdr)
	for i := 1; i < len(r.hdr); i += 2 {
		r.hdr[i] = rp.Replace(r.hdr[i])
	}
	return r
}

// refresh re-reads the fixtures' ETags after a write got through.
func (env *hostileEnv) refresh() {
	auth := []string{"Authorization", env.bearer}
	if rec := env.h.do("GET", "/v1/quotes/"+env.quoteID, nil, auth...); rec.Code == http.StatusOK {
		env.quoteETag = rec.Header().Get("ETag")
	}
	if rec := env.h.do("GET", "/v1/cases/"+env.caseID, nil, auth...); rec.Code == http.StatusOK {
		env.caseETag = rec.Header().Get("ETag")
	}
}

func (env *hostileEnv) operations(t *testing.T, spec *openapi3.T) []hostileOp {
	t.Helper()
	var ops []hostileOp
	for _, path := range spec.Paths.InMatchingOrder() {
		item := spec.Paths.Value(path)
		for method, op := range item.Operations() {
			// The embedded spec may carry Go-cased operation ids; the contract's are lower camel case.
			id := strings.ToLower(op.OperationID[:1]) + op.OperationID[1:]
			o := hostileOp{id: id, method: method, path: path, op: op}
			o.params = append(slices.Clone(item.Parameters), op.Parameters...)
			if op.RequestBody != nil {
				for _, ct := range []string{"application/json", "application/merge-patch+json"} {
					if mt := op.RequestBody.Value.Content.Get(ct); mt != nil {
						o.body, o.bodyCT = mt.Schema.Value, ct
					}
				}
				o.form = op.RequestBody.Value.Content.Get("application/x-www-form-urlencoded") != nil
				if o.body == nil {
					t.Fatalf("%s: no JSON request body schema", o.id)
				}
			}
			security := spec.Security
			if op.Security != nil {
				security = *op.Security
			}
			for _, req := range security {
				if _, ok := req["bearerAuth"]; ok {
					o.creds = append(o.creds, []string{"Authorization", env.bearer})
				}
				if _, ok := req["sessionHeader"]; ok {
					o.creds = append(o.creds, []string{"X-Session-Token", env.session.Token})
				}
			}
			if len(o.creds) == 0 {
				o.creds = [][]string{nil}
			}
			for _, p := range o.params {
				if p.Value.Name == "If-Match" {
					etag := hostileQuoteETag
					if strings.HasPrefix(path, "/v1/cases") {
						etag = hostileCaseETag
					}
					o.headers = append(o.headers, "If-Match", etag)
				}
			}
			ops = append(ops, o)
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].id < ops[j].id })
	return ops
}

// target fills the path template with fixture ids, except override (name → raw, encoded).
func (env *hostileEnv) target(o hostileOp, override map[string]string) string {
	p := o.path
	for _, prm := range o.params {
		if prm.Value.In != "path" {
			continue
		}
		v, ok := override[prm.Value.Name]
		if !ok {
			v = url.PathEscape(env.pathValue(prm.Value.Name))
		}
		p = strings.ReplaceAll(p, "{"+prm.Value.Name+"}", v)
	}
	return p
}

// hostileStrayBodies are sent to operations without a request body, together with a hostile
// parameter: the parameter must be refused whatever the body.
var hostileStrayBodies = []struct{ ct, body string }{
	{"application/json", `{{{`},
	{"application/json", `{"userId":"a","userId":"b"}`},
	{"application/json", hostileNested(hostileDepth)},
	{"text/plain", "\x00\xff\xfe"},
	{"application/json", `null`},
	{"application/json", "{\"reason\":\"\xff\"}"},
}

// cases builds every hostile request for o.
func (env *hostileEnv) cases(t *testing.T, o hostileOp) []hostileReq {
	t.Helper()
	var out []hostileReq
	stray := 0
	add := func(cred []string, r hostileReq) {
		r.method = o.method
		if r.target == "" {
			r.target = env.target(o, nil)
		}
		if o.body == nil && r.body == nil && r.want != http.StatusRequestEntityTooLarge {
			s := hostileStrayBodies[stray%len(hostileStrayBodies)]
			stray++
			r.ct, r.body = s.ct, []byte(s.body)
		}
		hdr := slices.Clone(cred)
		for i := 0; i+1 < len(o.headers); i += 2 {
			if !slices.Contains(r.hdr, o.headers[i]) {
				hdr = append(hdr, o.headers[i], o.headers[i+1])
			}
		}
		r.hdr = append(hdr, r.hdr...)
		out = append(out, r)
	}
	cred := o.creds[0]
	valid := []byte(nil)
	if o.body != nil {
		valid = env.bodyCases(t, o, func(r hostileReq) { add(cred, r) })
	}
	// The body limit holds for every operation, with or without a body.
	add(cred, hostileReq{name: "1 MiB body", ct: "application/json", body: []byte(`{"x":` + hostileHugeString + `}`),
		want: http.StatusRequestEntityTooLarge})
	for _, c := range o.creds {
		env.paramCases(o, valid, func(r hostileReq) { add(c, r) })
	}
	if o.creds[0] != nil && o.creds[0][0] == "X-Session-Token" {
		env.credentialCases(o, valid, func(r hostileReq) { add(nil, r) })
	}
	return out
}

// bodyCases adds the body mutations of o and returns o's valid body.
func (env *hostileEnv) bodyCases(t *testing.T, o hostileOp, add func(hostileReq)) []byte {
	t.Helper()
	base := env.baseBody(o.id)
	if base == nil {
		t.Fatalf("%s has a request body but no base body in the hostile test: add one to baseBody", o.id)
	}
	if v, err := base.toAny(); err != nil {
		t.Fatal(err)
	} else if err := o.body.VisitJSON(v, openapi3.VisitAsRequest(), openapi3.MultiErrors()); err != nil {
		t.Fatalf("%s: the base body is not valid, so its mutations prove nothing: %v", o.id, err)
	}
	valid := base.encode()
	ct := o.bodyCT
	body := func(name, raw string, want int) {
		add(hostileReq{name: name, ct: ct, body: []byte(raw), want: want})
	}
	bad := http.StatusBadRequest
	body("empty body", "", bad)
	body("null", "null", bad)
	body("unterminated", "{{{", bad)
	body("top-level string", `"x"`, bad)
	body("top-level array", `[]`, bad)
	body("top-level number", `1`, bad)
	body("top-level true", `true`, bad)
	body("empty object", `{}`, bad)
	body("400-digit number", hostile400Digits, bad)
	body("huge array", hostileArrayOf(hostileArray, "0"), bad)
	body("10,000 unclosed [", strings.Repeat("[", hostileDepth), bad)
	body("10,001 nested arrays", hostileNested(hostileDepth+1), bad)
	body("200 nested objects", strings.Repeat(`{"a":`, hostileValueDepth)+"1"+strings.Repeat("}", hostileValueDepth), bad)
	body("raw NUL before the body", "\x00"+string(valid), bad)
	nul := strings.Replace(string(valid), `":"`, "\":\"\x00", 1)
	if nul == string(valid) { // no string member: the first string of an array
		nul = strings.Replace(nul, `["`, "[\"\x00", 1)
	}
	body("raw NUL in a string", nul, bad)
	body("invalid UTF-8 outside strings", "{\xff:1}", bad)
	body("byte order mark", "\xef\xbb\xbf"+string(valid), bad)
	body("comment", "/* x */"+string(valid), bad)
	body("single quotes", `{'a':'b'}`, bad)
	body("NaN", `{"a":NaN}`, bad)
	body("trailing garbage", string(valid)+" x", bad)
	body("two JSON values", string(valid)+string(valid), bad)
	body("60 KiB unknown member", string(base.with([]string{"zz"}, jraw(hostileLargeString)).encode()), bad)
	body("case-folded member name", string(base.with([]string{strings.ToUpper(base[0].name)}, base[0].value).encode()), bad)
	body("1 MiB string", string(base.with([]string{base[0].name}, jraw(hostileHugeString)).encode()), http.StatusRequestEntityTooLarge)
	add(hostileReq{name: "1 MiB string, chunked", ct: ct, chunked: true,
		body: base.with([]string{base[0].name}, jraw(hostileHugeString)).encode(), want: http.StatusRequestEntityTooLarge})

	media := http.StatusUnsupportedMediaType
	for _, other := range []string{"text/plain", "application/xml", "multipart/form-data; boundary=x",
		"application/x-www-form-urlencoded", "application/json", "application/merge-patch+json", "", "application/octet-stream"} {
		if other == ct || other == "application/x-www-form-urlencoded" && o.form {
			continue
		}
		add(hostileReq{name: "content type " + strconv.Quote(other), ct: other, body: valid, want: media})
	}
	if o.form {
		form := func(name, raw string) {
			add(hostileReq{name: "form: " + name, ct: "application/x-www-form-urlencoded", body: []byte(raw), want: bad})
		}
		form("empty", "")
		form("empty token", "token=")
		form("unknown field", "token=a&zz=1")
		form("60 KiB token", "token="+strings.Repeat("a", hostileLarge))
		form("invalid UTF-8 token", "token=%FF%FE%FD")
		form("NUL in token", "token=a%00b")
		form("duplicate token", "token=a&token=b")
		form("not a form", "{{{")
	}

	for _, p := range hostileProps(o.body, nil) {
		name := strings.Join(p.path, ".")
		set := func(what string, v jraw) {
			body(name+": "+what, string(base.with(p.path, v).encode()), bad)
		}
		for _, w := range hostileWrongTypes(p.schema) {
			set("wrong type "+string(w), w)
		}
		set("60 KiB string", jraw(hostileLargeString))
		set("400-digit number", jraw(hostile400Digits))
		set("huge array", jraw(hostileArrayOf(hostileArray, `"x"`)))
		set("200 nested arrays", jraw(hostileNested(hostileValueDepth)))
		if p.schema.Type.Is("string") {
			set("invalid UTF-8", "\"ab\xff\xfe\xc0\xafcd\"")
			set("escaped NUL and control characters", `"ab\u0000cd\u001b[2J"`)
			set("raw NUL", "\"ab\x00cd\"")
		}
		// Repeated member names are ambiguous (encoding/json keeps the last, other parsers the
		// first): refused whatever the values, so a valid last value cannot hide the first.
		wrong := hostileWrongTypes(p.schema)[0]
		if v := base.get(p.path); v != nil {
			body(name+": duplicate member, same value twice", string(base.dup(p.path, v).encode()), bad)
			body(name+": duplicate member, the first of the wrong type", string(base.with(p.path, wrong).dup(p.path, v).encode()), bad)
		}
		body(name+": duplicate member, the last of the wrong type", string(base.dup(p.path, wrong).encode()), bad)
	}
	return valid
}

// hostilePathValues are invalid for every path parameter of the contract (each has a
// maxLength under 8 KiB and an ASCII pattern). 8 KiB, not 60: the router matches the whole
// path against every route's regular expression, and 8 KiB is already over what most proxies
// let through.
var hostilePathValues = []struct{ name, raw string }{
	{"8 KiB", strings.Repeat("A", 8<<10)},
	{"invalid UTF-8", "%FF%FE%FD"},
	{"NUL", "a%00b"},
	{"hash tag", "%7Bx%7D:y"},
	{"traversal", "..%2F..%2Fx"},
	{"JSON object", "%7B%22a%22:1%7D"},
	{"empty", ""},
}

// paramCases adds hostile path, query and header parameters; the body is o's valid body (a
// stray hostile body for operations without one).
func (env *hostileEnv) paramCases(o hostileOp, valid []byte, add func(hostileReq)) {
	req := func(r hostileReq) {
		if valid != nil {
			r.ct, r.body = o.bodyCT, valid
		}
		add(r)
	}
	for _, prm := range o.params {
		p := prm.Value
		switch p.In {
		case "path":
			for _, v := range hostilePathValues {
				req(hostileReq{name: "path " + p.Name + ": " + v.name, target: env.target(o, map[string]string{p.Name: v.raw})})
			}
		case "query":
			v1, v2 := env.twoValid(p.Name)
			values := []struct{ name, raw string }{
				{"60 KiB", strings.Repeat("A", hostileLarge)},
				{"invalid UTF-8", "%FF%FE%FD"},
				{"NUL", v1 + "%00"},
				{"braces", "%7B%7D"},
			}
			if !p.Schema.Value.Type.Is("array") { // an array parameter is given several times
				values = append(values, struct{ name, raw string }{"duplicate", url.QueryEscape(v1) + "&" + p.Name + "=" + url.QueryEscape(v2)})
			}
			if p.Schema.Value.Type.Is("integer") {
				values = append(values, []struct{ name, raw string }{{"letters", "abc"}, {"fraction", "1.5"},
					{"negative", "-1"}, {"over the maximum", "101"}, {"400 digits", hostile400Digits}, {"array", "[1]"}}...)
			}
			if len(p.Schema.Value.Enum) > 0 {
				values = append(values, []struct{ name, raw string }{{"not in the enum", "SUPER"}, {"lower case", "mfa"}}...)
			}
			for _, v := range values {
				req(hostileReq{name: "query " + p.Name + ": " + v.name, target: env.target(o, nil) + "?" + p.Name + "=" + v.raw,
					want: http.StatusBadRequest})
			}
		case "header":
			v1, v2 := env.twoValid(p.Name)
			values := []struct {
				name string
				vals []string
			}{
				{"60 KiB", []string{strings.Repeat("A", hostileLarge)}},
				{"invalid UTF-8", []string{"\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8"}},
				{"NUL", []string{"abcdefgh\x00ijk"}},
				{"two values", []string{v1, v2}},
			}
			if p.Name == "If-Match" {
				values = append(values, []struct {
					name string
					vals []string
				}{{"not a number", []string{`"abc"`}}, {"weak", []string{"W/" + hostileQuoteETag}}, {"unterminated", []string{`"2`}},
					{"unquoted", []string{"1"}}, {"huge version", []string{`"` + hostile400Digits[:30] + `"`}},
					{"negative", []string{`"-1"`}}, {"list", []string{hostileQuoteETag + `, "7"`}}}...)
			} else {
				values = append(values, []struct {
					name string
					vals []string
				}{{"too short", []string{"abc"}}, {"space", []string{"hostile key 1"}}}...)
			}
			for _, v := range values {
				var hdr []string
				for _, one := range v.vals {
					hdr = append(hdr, p.Name, one)
				}
				want := http.StatusBadRequest
				if p.Name == "If-Match" && !strings.HasPrefix(v.name, "60") && v.name != "two values" {
					want = 0 // 400 or 412: either refuses
				}
				req(hostileReq{name: "header " + p.Name + ": " + v.name, hdr: hdr, want: want})
			}
		}
	}
}

// credentialCases adds hostile session tokens for the end-user operations.
func (env *hostileEnv) credentialCases(o hostileOp, valid []byte, add func(hostileReq)) {
	tok := env.session.Token
	for _, c := range []struct{ name, header, value string }{
		{"60 KiB session token", "X-Session-Token", strings.Repeat("A", hostileLarge)},
		{"invalid UTF-8 session token", "X-Session-Token", "hgs_\xff\xfe\xfd"},
		{"NUL in session token", "X-Session-Token", tok + "\x00"},
		{"session token with a flipped character", "X-Session-Token", tok[:len(tok)-1] + string(tok[len(tok)-1]^1)},
		{"session token with braces", "X-Session-Token", "hgs_{x}_y"},
		{"60 KiB session cookie", "Cookie", SessionCookieName + "=" + strings.Repeat("A", hostileLarge)},
		{"junk session cookie", "Cookie", SessionCookieName + "=\"\xff\""},
	} {
		// Only the credential is hostile: the body is the valid one, or none (not a stray body:
		// the hot routes refuse a body before they authenticate).
		r := hostileReq{name: c.name, hdr: []string{c.header, c.value}, body: []byte{}, want: http.StatusUnauthorized}
		if valid != nil {
			r.ct, r.body = o.bodyCT, valid
		}
		add(r)
	}
}

// --- the tests -------------------------------------------------------------------------------

// TestHostileInput sends every operation its hostile matrix on every backend: each answer is a
// 4xx problem and nothing under the prefix changes. The embedded store takes the whole matrix;
// each real backend a quarter of it (offset per backend, so the real backends cover it all).
func TestHostileInput(t *testing.T) {
	t.Parallel()
	spec, err := GetSwagger()
	if err != nil {
		t.Fatal(err)
	}
	for bi, b := range testredis.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			env := newHostileEnv(t, b)
			before := hostileSnapshot(t, env.raw, env.h.prefix)
			if len(before) == 0 {
				t.Fatal("the fixtures wrote nothing under the prefix: the services are not on h.prefix")
			}
			env.rec.TakeWrites()
			n, sent, snaps := 0, 0, 0
			for _, o := range env.operations(t, spec) {
				t.Run(o.id, func(t *testing.T) {
					for _, r := range env.cases(t, o) {
						n++
						if b.Real() && n%hostileRealStride != bi%hostileRealStride {
							continue
						}
						sent++
						rec := env.h.sendHostile(env.resolve(r))
						if msg := hostileRefusal(r, rec); msg != "" {
							t.Errorf("%s %s [%s]: %s", o.method, o.path, r.name, msg)
						}
						if w := env.rec.TakeWrites(); len(w) > 0 {
							snaps++
							if d := hostileDiff(before, hostileSnapshot(t, env.raw, env.h.prefix)); d != "" {
								t.Errorf("%s %s [%s] (status %d, sent %s) wrote to Redis: %s", o.method, o.path, r.name, rec.Code,
									hostileNames(w), d)
								env.refresh()
								env.rec.TakeWrites()
								before = hostileSnapshot(t, env.raw, env.h.prefix)
							}
						}
					}
					// Whatever the recorder saw, nothing under the prefix changed.
					after := hostileSnapshot(t, env.raw, env.h.prefix)
					if d := hostileDiff(before, after); d != "" {
						t.Errorf("%s %s: a request wrote to Redis without a write command being recorded: %s", o.method, o.path, d)
						before = after
					}
				})
			}
			t.Logf("%s: %d hostile requests of %d, %d snapshots after a possible write", b.Name, sent, n, snaps)

			// The detector is live: a valid write after the hostile phase shows up.
			auth := []string{"Authorization", env.bearer}
			if rec := env.h.do("POST", "/v1/quotes", quoteBody, auth...); rec.Code != http.StatusCreated {
				t.Fatalf("control write: %d %s", rec.Code, rec.Body)
			}
			if hostileDiff(before, hostileSnapshot(t, env.raw, env.h.prefix)) == "" {
				t.Fatal("a valid create changed nothing in the snapshot: the write detector is blind")
			}
			// The fixtures are untouched and still usable.
			for _, path := range []string{"/v1/quotes/" + env.quoteID, "/v1/cases/" + env.caseID} {
				if rec := env.h.do("GET", path, nil, auth...); rec.Code != http.StatusOK {
					t.Errorf("fixture %s: %d %s", path, rec.Code, rec.Body)
				}
			}
			if rec := env.h.do("GET", "/v1/session", nil, "X-Session-Token", env.session.Token); rec.Code != http.StatusOK {
				t.Errorf("fixture session: %d %s", rec.Code, rec.Body)
			}
		})
	}
}

// TestHostileRefusalCost bounds what refusing one hostile body costs the gateway: memory in
// proportion to the body, not to the square of its nesting depth (Go's parser accepts 10,000
// levels) nor thousands of bytes per array element.
// It counts the allocations of the whole process, so it does not run in parallel with other
// tests (Go runs the sequential top-level tests before resuming the parallel ones).
func TestHostileRefusalCost(t *testing.T) {
	env := newHostileEnv(t, testredis.Backends()[0])
	const depth = 2000
	for _, tt := range []struct {
		name, target, body string
	}{
		{"nested objects", "/v1/cases/" + env.caseID + "/escalate", strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth)},
		{"nested arrays in a property", "/v1/cases/" + env.caseID + "/escalate", `{"reason":` + hostileNested(depth) + `}`},
		{"huge array", "/v1/tokens", `{"subject":"s","scopes":` + hostileArrayOf(hostileArray, `"x"`) + `,"ttlSeconds":60,"tokenType":"service"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := hostileReq{name: tt.name, method: "POST", target: tt.target, ct: "application/json", body: []byte(tt.body),
				hdr: []string{"Authorization", env.bearer}, want: http.StatusBadRequest}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			rec := env.h.sendHostile(r)
			runtime.ReadMemStats(&after)
			if msg := hostileRefusal(r, rec); msg != "" {
				t.Fatal(msg)
			}
			// Parsing and validating such a body allocate about 75 bytes per input byte; the
			// limit leaves room for that, the HTTP stack and rendering the refusal, but not for
			// a cost that grows with the square of the depth.
			allocated := after.TotalAlloc - before.TotalAlloc
			if limit := uint64(256*len(tt.body) + 1<<20); allocated > limit {
				t.Errorf("refusing a %d-byte body allocated %d MiB (limit %d MiB)", len(tt.body), allocated>>20, limit>>20)
			}
		})
	}
}

// TestHostileBodyWhereNoneIsDefined sends a body, with otherwise valid requests on the live
// fixtures, to every operation whose contract defines none: the gateway must refuse it rather
// than act on a request whose content it silently dropped. Operations that delete run last, so
// one that ignores the body does not take the fixtures from the others.
func TestHostileBodyWhereNoneIsDefined(t *testing.T) {
	t.Parallel()
	spec, err := GetSwagger()
	if err != nil {
		t.Fatal(err)
	}
	env := newHostileEnv(t, testredis.Backends()[0])
	ops := env.operations(t, spec)
	last := map[string]int{"deleteQuote": 2, "revokeMyDevice": 2, "deleteSession": 3, "revokeUserSessions": 4, "logout": 5}
	rank := func(o hostileOp) int {
		if o.method != http.MethodDelete {
			return 0
		}
		return max(1, last[o.id])
	}
	sort.SliceStable(ops, func(i, j int) bool { return rank(ops[i]) < rank(ops[j]) })
	before := hostileSnapshot(t, env.raw, env.h.prefix)
	for _, o := range ops {
		if o.body != nil || o.path == "/metrics" { // /metrics is outside the validator: a scrape
			continue
		}
		r := hostileReq{name: "unexpected body", method: o.method, target: env.target(o, nil), ct: "application/json",
			body: []byte(`{"hostile":true}`), hdr: slices.Concat(o.creds[0], o.headers), want: http.StatusBadRequest}
		rec := env.h.sendHostile(env.resolve(r))
		msg := hostileRefusal(r, rec)
		after := hostileSnapshot(t, env.raw, env.h.prefix)
		if d := hostileDiff(before, after); d != "" {
			msg += "; wrote to Redis: " + d
			env.refresh()
			after = hostileSnapshot(t, env.raw, env.h.prefix)
		}
		if msg != "" {
			t.Errorf("%s %s with a body: %s", o.method, o.path, msg)
		}
		before = after
	}
}
