package auth

import (
	"crypto/rand"
	"encoding/binary"
	"time"
)

// crockford is Crockford's base32 alphabet in lower case; it is in ASCII
// order, so encoded IDs sort like the underlying bytes.
const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

// NewTokenID returns a ULID-style, time-sortable token ID: a 48-bit Unix
// millisecond timestamp followed by 80 random bits, encoded as 26 lower-case
// Crockford base32 characters. IDs from different milliseconds sort
// lexicographically by time; within one millisecond the order is random.
func NewTokenID(now time.Time) string {
	var b [16]byte
	ms := uint64(now.UnixMilli())
	binary.BigEndian.PutUint16(b[0:2], uint16(ms>>32))
	binary.BigEndian.PutUint32(b[2:6], uint32(ms))
	_, _ = rand.Read(b[6:]) // crypto/rand.Read never returns an error
	return TokenIDFrom(b)
}

// TokenIDFrom encodes 16 bytes as an ID of NewTokenID's shape (26 lower-case Crockford base32
// characters); for ids derived from a keyed hash, which are not time-ordered.
func TokenIDFrom(b [16]byte) string {
	hi := binary.BigEndian.Uint64(b[0:8])
	lo := binary.BigEndian.Uint64(b[8:16])

	// 26 chars * 5 bits = 130 bits: the 128-bit value with two leading zero
	// bits. Emit from the least significant 5-bit group upwards.
	var out [26]byte
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&0x1f]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
}
