package main

import "github.com/hashgate/hashgate/internal/sessions/session"

// Key names as docs/KEYS.md documents them (<prefix>:v1:<type>:{<tag>}[:<rest>]), built here
// from the ids the API returns: a session id carries its user tag, so the session hash, the
// user's hash, the device index and the MFA counter are named from it; a token's, quote's or
// case's tenant tag is a keyed hash the bench does not compute, so those are found by SCAN.
// The keyspace audit (internal/keyaudit) holds the stores to the same document.

// benchKey is keyPrefix:v1:typ:{tag} followed by :rest parts.
func benchKey(typ, tag string, rest ...string) string {
	k := keyPrefix + ":v1:" + typ + ":{" + tag + "}"
	for _, r := range rest {
		k += ":" + r
	}
	return k
}

// perUserHashObject names, in the memory table, the user's hash of a one-session user in the
// per-user layout (what the session-hash target is read from there).
const perUserHashObject = "user's session hash, one plain session"

// sessionKey is the per-session layout's session hash of session id ("" for an id that is not
// a session id).
func sessionKey(id string) string {
	ref, ok := session.ParseID(id)
	if !ok {
		return ""
	}
	return benchKey("sess", ref.Tag, ref.Part)
}

// Keys named by the user tag a session id carries.
func userSessionsKey(tag string) string   { return benchKey("sess", tag) }      // the per-user layout's hash
func sessionDevicesKey(tag string) string { return benchKey("sessions", tag) }  // the device index
func mfaCounterKey(tag string) string     { return benchKey("rl", tag, "mfa") } // the MFA attempt counter

// userKey is key(tag) for the user session id belongs to ("" for an id that is not a session
// id).
func userKey(id string, key func(tag string) string) string {
	ref, ok := session.ParseID(id)
	if !ok {
		return ""
	}
	return key(ref.Tag)
}

// SCAN MATCH patterns for an object's hash under any tenant tag: a token's metadata, a quote's
// summary (its items are that key + ":items"), a case (its history is that key + ":history").
func tokenKeyPattern(id string) string { return benchKey("token", "*", id) }
func quoteKeyPattern(id string) string { return benchKey("quote", "*", id) }
func caseKeyPattern(id string) string  { return benchKey("case", "*", id) }
