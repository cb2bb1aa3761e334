package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/hashgate/hashgate/internal/apperr"
)

// maxJSONDepth bounds nesting (no request schema goes deeper than 4) and maxJSONArray the
// elements of one array (no request schema allows more than 1000): past either, the body is
// refused before the validator spends memory on every element.
const (
	maxJSONDepth = 32
	maxJSONArray = 1000
)

// strictJSON reads a JSON request body once (already bounded by the body limit) and refuses,
// before any validator or handler sees it, what Go's decoder would silently accept: more than
// one value or trailing bytes, invalid UTF-8 (which the decoder turns into U+FFFD), duplicate
// member names (the decoder keeps the last: ambiguous input), and deep nesting. The body is
// then put back for the validator and the handler.
//
// A request without a body (no Content-Length or Content-Length: 0, not chunked) to an
// operation that defines no request body passes whatever its Content-Type: reverse proxies
// asking GET /v1/authorize (nginx auth_request, Caddy forward_auth) forward the original
// request's headers without its body. The body limit middleware has wrapped r.Body by now, so
// r.Body == http.NoBody cannot tell; the framing can (ContentLength is -1 when chunked).
func strictJSON(o specOp) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if r.ContentLength == 0 && !o.takesBody {
				return next(c)
			}
			ct := r.Header.Get(echo.HeaderContentType)
			form := isForm(ct) && o.form != nil // else the validator answers 415
			if r.Body == nil || r.Body == http.NoBody || !isJSON(ct) && !form {
				return next(c)
			}
			b, err := io.ReadAll(r.Body)
			_ = r.Body.Close()
			if err != nil {
				var he *echo.HTTPError
				if errors.As(err, &he) && he.Code == http.StatusRequestEntityTooLarge {
					return he
				}
				var mbe *http.MaxBytesError
				if errors.As(err, &mbe) {
					return echo.ErrStatusRequestEntityTooLarge
				}
				return apperr.New(apperr.Validation, "The request body could not be read.")
			}
			if form {
				err = checkForm(b, o.form)
			} else {
				err = checkJSON(b)
			}
			if err == errEmpty && o.takesBody {
				// Only white space: the validator says what body the operation takes.
				b, err = nil, nil
			}
			if err != nil {
				return &apperr.Error{Kind: apperr.Validation, Detail: "The body is not well-formed: " + err.Error() + ".",
					Fields: []apperr.FieldError{{Pointer: "/", Detail: err.Error()}}}
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
			r.ContentLength = int64(len(b))
			r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
			return next(c)
		}
	}
}

func isForm(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/x-www-form-urlencoded"
}

// checkForm refuses form bodies that are malformed, repeat a field, name a field the
// operation's schema does not (allowed; nil allows none), or carry invalid UTF-8 or control
// characters.
func checkForm(b []byte, allowed map[string]bool) error {
	vals, err := url.ParseQuery(string(b))
	if err != nil {
		return errors.New("malformed form")
	}
	for k, vs := range vals {
		if len(vs) > 1 {
			return errDuplicate
		}
		if !allowed[k] {
			return errUnknown
		}
		for _, v := range append(vs, k) {
			if !utf8.ValidString(v) {
				return errUTF8
			}
			if hasControl(v) {
				return errControl
			}
		}
	}
	return nil
}

func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

var (
	errTrailing  = errors.New("trailing data after the JSON value")
	errUTF8      = errors.New("invalid UTF-8")
	errDuplicate = errors.New("duplicate member name")
	errDepth     = errors.New("nested too deeply")
	errEmpty     = errors.New("empty body")
	errControl   = errors.New("control character in a string")
	errArray     = errors.New("array too long")
	errUnknown   = errors.New("unknown field")
)

// hasControl reports C0 controls other than tab, newline and carriage return, and DEL: they
// have no place in any field of this API and can smuggle escape sequences into logs and UIs.
func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
			return true
		}
	}
	return false
}

// checkJSON accepts exactly one JSON value with valid UTF-8, unique member names per object
// and at most maxJSONDepth levels.
func checkJSON(b []byte) error {
	if !utf8.Valid(b) {
		return errUTF8
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return errEmpty
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	type frame struct {
		object bool
		keys   map[string]struct{}
		expect bool // in an object: the next string token is a member name
		n      int  // in an array: elements so far
	}
	// element counts one value inside the innermost array.
	element := func(stack []frame) error {
		if len(stack) > 0 && !stack[len(stack)-1].object {
			if stack[len(stack)-1].n++; stack[len(stack)-1].n > maxJSONArray {
				return errArray
			}
		}
		return nil
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			if len(stack) != 0 {
				return errors.New("unexpected end of JSON")
			}
			return nil
		}
		if err != nil {
			return errors.New("malformed JSON")
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if len(stack) > 0 && stack[len(stack)-1].object {
					stack[len(stack)-1].expect = true
				}
				if err := element(stack); err != nil {
					return err
				}
				if len(stack) >= maxJSONDepth {
					return errDepth
				}
				stack = append(stack, frame{object: t == '{', keys: map[string]struct{}{}, expect: t == '{'})
			case '}', ']':
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && stack[len(stack)-1].object {
					stack[len(stack)-1].expect = true
				}
			}
		case string:
			if hasControl(t) {
				return errControl
			}
			if len(stack) > 0 && stack[len(stack)-1].object && stack[len(stack)-1].expect {
				f := &stack[len(stack)-1]
				if _, dup := f.keys[t]; dup {
					return errDuplicate
				}
				f.keys[t] = struct{}{}
				f.expect = false
			} else if len(stack) > 0 && stack[len(stack)-1].object {
				stack[len(stack)-1].expect = true
			} else if err := element(stack); err != nil {
				return err
			}
		default:
			if len(stack) > 0 && stack[len(stack)-1].object {
				stack[len(stack)-1].expect = true
			} else if err := element(stack); err != nil {
				return err
			}
		}
		if len(stack) == 0 {
			// One complete value read: anything but whitespace after it is refused.
			if _, err := dec.Token(); err != io.EOF {
				return errTrailing
			}
			return nil
		}
	}
}
