package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/hashgate/hashgate/internal/apperr"
)

// maxJSONDepth bounds nesting; no request schema goes deeper than 4.
const maxJSONDepth = 32

// strictJSON reads a JSON request body once (already bounded by the body limit) and refuses,
// before any validator or handler sees it, what Go's decoder would silently accept: more than
// one value or trailing bytes, invalid UTF-8 (which the decoder turns into U+FFFD), duplicate
// member names (the decoder keeps the last: ambiguous input), and deep nesting. The body is
// then put back for the validator and the handler.
func strictJSON() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if r.Body == nil || r.Body == http.NoBody || !isJSON(r.Header.Get(echo.HeaderContentType)) {
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
			if err := checkJSON(b); err != nil {
				return &apperr.Error{Kind: apperr.Validation, Detail: "The body is not one well-formed JSON value: " + err.Error() + ".",
					Fields: []apperr.FieldError{{Pointer: "/", Detail: err.Error()}}}
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
			r.ContentLength = int64(len(b))
			r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
			return next(c)
		}
	}
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
)

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
			if len(stack) > 0 && stack[len(stack)-1].object && stack[len(stack)-1].expect {
				f := &stack[len(stack)-1]
				if _, dup := f.keys[t]; dup {
					return errDuplicate
				}
				f.keys[t] = struct{}{}
				f.expect = false
			} else if len(stack) > 0 && stack[len(stack)-1].object {
				stack[len(stack)-1].expect = true
			}
		default:
			if len(stack) > 0 && stack[len(stack)-1].object {
				stack[len(stack)-1].expect = true
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
