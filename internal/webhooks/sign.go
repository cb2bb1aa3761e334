package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"time"

	"github.com/hashgate/hashgate/internal/keyhash"
)

// Signing, as the Standard Webhooks specification says: the receiver gets
//
//	webhook-id: <message id>             (the event's id: the same on every retry)
//	webhook-timestamp: <unix seconds>    (of this attempt)
//	webhook-signature: v1,<base64 of HMAC-SHA256(secret, id "." timestamp "." body)>
//
// and verifies it with the secret's bytes (the base64 after whsec_).
//
// The secret is not stored anywhere: it is a keyed function of the webhook, HMAC-SHA256 under
// GATEWAY_HMAC_KEY (purpose "webhook-secret") of the tenant and the webhook id, 32 bytes.
// Create shows it once; every replica derives it again to sign. A Redis dump or write access
// to Redis yields no secret and cannot forge one. The price: a secret cannot be rotated on its
// own (create a new webhook, delete the old one), and changing GATEWAY_HMAC_KEY changes every
// secret (as it changes every tenant tag, and with them every key).

// secretPurpose separates webhook secrets from the hasher's other uses.
const secretPurpose = "webhook-secret"

// SecretPrefix is how a secret is shown.
const SecretPrefix = "whsec_"

// Secret is the signing secret of the tenant's webhook id.
func Secret(h *keyhash.Hasher, tenant, id string) []byte {
	return h.Sum(secretPurpose, tenant, id)
}

// FormatSecret is the secret as the caller sees it: whsec_<base64>.
func FormatSecret(secret []byte) string {
	return SecretPrefix + base64.StdEncoding.EncodeToString(secret)
}

// Sign is the webhook-signature header of body sent as msgID at ts.
func Sign(secret []byte, msgID string, ts time.Time, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(msgID))
	m.Write([]byte{'.'})
	m.Write(strconv.AppendInt(nil, ts.Unix(), 10))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}
