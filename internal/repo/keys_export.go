package repo

// Keys of whole objects, for tools that look at the keyspace directly (cmd/bench measures each
// object's memory). The repositories build the same keys (TestExportedKeysMatchRepositories).

// TokenKeyPattern is a SCAN MATCH pattern for the metadata hash of token id under any tenant
// tag (the tag is a keyed hash a tool cannot compute).
func TokenKeyPattern(k Keys, id string) string { return k.Key(tokenObj, "*", id) }

// QuoteKeyPattern is a SCAN MATCH pattern for the summary hash of quote id under any tenant tag
// (its items hash is that key + ":items").
func QuoteKeyPattern(k Keys, id string) string { return k.Key("quote", "*", id) }

// CaseKeyPattern is a SCAN MATCH pattern for the hash of case id under any tenant tag (its
// history stream is that key + ":history").
func CaseKeyPattern(k Keys, id string) string { return k.Key("case", "*", id) }
