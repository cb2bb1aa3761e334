package main

// objectKeyPattern is a SCAN MATCH pattern for the hash of the object of type typ ("quote",
// "case") named id under any tenant tag, as docs/KEYS.md documents it:
// <prefix>:v1:<typ>:{<tenantTag>}:<id>. The tenant tag is a keyed hash the bench cannot
// compute; the object's second key is that key + ":items" (a quote) or ":history" (a case).
func objectKeyPattern(typ, id string) string { return keyPrefix + ":v1:" + typ + ":{*}:" + id }
