package store

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/store/storeerr"
)

type unavailable struct{ err error }

func (u *unavailable) Error() string        { return "redis unavailable: " + u.err.Error() }
func (u *unavailable) Unwrap() []error      { return []error{storeerr.ErrUnavailable, u.err} }
func (u *unavailable) Is(target error) bool { return target == storeerr.ErrUnavailable }

// Classify wraps err with storeerr.ErrUnavailable when it is a connectivity or availability failure
// (timeout, refused or reset connection, closing client, cluster down, loading, busy script, a
// client-side-cached read aborted by a lost connection or an aborted transaction),
// or a slot in transit on a cluster: TRYAGAIN (a multi-key command or script whose keys are
// split between the migrating and the importing node), an ASK or MOVED redirection the client
// did not follow to the end, and a script refused for touching a key the node does not hold
// ("non local key", "undeclared keys ... during rehashing"). Those last ones are a last line
// of defence: the repositories declare every key a script touches, so Redis refuses the call
// with TRYAGAIN/ASK before running it. Other errors (including Redis nil and script refusals) are returned unchanged.
func Classify(err error) error {
	if err == nil || errors.Is(err, storeerr.ErrUnavailable) {
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
	if errors.Is(err, storeerr.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, rueidis.ErrClosing) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, rueidis.ErrNoSlot) || errors.Is(err, rueidis.ErrDoCacheAborted) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	if e, ok := rueidis.IsRedisErr(err); ok {
		msg := e.Error()
		for _, p := range []string{"LOADING", "BUSY", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "READONLY", "NOREPLICAS",
			"MISCONF", "ASK ", "MOVED "} {
			if strings.HasPrefix(msg, p) {
				return true
			}
		}
		// Script errors of a slot in transit or a cluster that is down: a key this node does not
		// hold ("... non local key in a cluster node"), undeclared keys "during rehashing of the
		// slot", a command refused "while the cluster is down".
		for _, s := range []string{"non local key", "during rehashing of the slot", "while the cluster is down"} {
			if strings.Contains(msg, s) {
				return true
			}
		}
	}
	return false
}
