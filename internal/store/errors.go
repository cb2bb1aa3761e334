package store

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/redis/rueidis"
)

// ErrUnavailable marks an error that means "Redis cannot serve right now": the caller should
// answer 503 with Retry-After, not 500.
var ErrUnavailable = errors.New("redis unavailable")

type unavailable struct{ err error }

func (u *unavailable) Error() string        { return "redis unavailable: " + u.err.Error() }
func (u *unavailable) Unwrap() []error      { return []error{ErrUnavailable, u.err} }
func (u *unavailable) Is(target error) bool { return target == ErrUnavailable }

// Classify wraps err with ErrUnavailable when it is a connectivity or availability failure
// (timeout, refused or reset connection, closing client, cluster down, loading, busy script).
// Other errors (including Redis nil and script refusals) are returned unchanged.
func Classify(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) {
		return err
	}
	if IsUnavailable(err) {
		return &unavailable{err: err}
	}
	return err
}

// IsUnavailable reports whether err means Redis cannot serve right now.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, rueidis.ErrClosing) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, rueidis.ErrNoSlot) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	if e, ok := rueidis.IsRedisErr(err); ok {
		msg := e.Error()
		for _, p := range []string{"LOADING", "BUSY", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "READONLY", "NOREPLICAS", "MISCONF"} {
			if strings.HasPrefix(msg, p) {
				return true
			}
		}
	}
	return false
}
