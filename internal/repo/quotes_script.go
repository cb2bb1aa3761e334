package repo

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"
)

// Script replies shared by the quote, case and idempotency scripts: every script answers an
// array whose first element is a status code ('OK', 'STALE', 'NOT_FOUND', ...) followed by
// the code's arguments. Anything else is an error.

var errReplyShape = errors.New("script reply has an unexpected shape")

// scriptReply splits a script reply into its code and arguments.
func scriptReply(res rueidis.RedisResult) (string, []rueidis.RedisMessage, error) {
	arr, err := res.ToArray()
	if err != nil {
		return "", nil, err
	}
	if len(arr) == 0 {
		return "", nil, errReplyShape
	}
	code, err := arr[0].ToString()
	if err != nil {
		return "", nil, fmt.Errorf("%w: %v", errReplyShape, err)
	}
	return code, arr[1:], nil
}

// argString returns argument i as a string ("" when absent or not a string/integer).
func argString(rest []rueidis.RedisMessage, i int) string {
	if i >= len(rest) {
		return ""
	}
	if s, err := rest[i].ToString(); err == nil {
		return s
	}
	if n, err := rest[i].AsInt64(); err == nil {
		return strconv.FormatInt(n, 10)
	}
	return ""
}

// argInt returns argument i as an integer, whether the script sent a number or a string.
func argInt(rest []rueidis.RedisMessage, i int) (int64, bool) {
	if i >= len(rest) {
		return 0, false
	}
	if n, err := rest[i].AsInt64(); err == nil {
		return n, true
	}
	return 0, false
}
