package repo

import "github.com/hashgate/hashgate/internal/ratelimit"

// Keys of whole objects, for tools that look at the keyspace directly (cmd/bench measures each
// object's memory). The repositories build the same keys (TestExportedKeysMatchRepositories);
// with SessionKey and session.ParseID these are the only key names a tool needs.

// SessionDevicesKey is the user's device index (the user's live sessions).
func SessionDevicesKey(k Keys, userTag string) string { return k.Key(sessKeyDevices, userTag) }

// MFACounterKey is the user's MFA attempt counter.
func MFACounterKey(k Keys, userTag string) string {
	return ratelimit.Key(k.Prefix, userTag, MFAPolicyName)
}

// TokenKeyPattern is a SCAN MATCH pattern for the metadata hash of token id under any tenant
// tag (the tag is a keyed hash a tool cannot compute).
func TokenKeyPattern(k Keys, id string) string { return k.Key(tokenObj, "*", id) }
