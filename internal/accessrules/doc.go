// Package accessrules is the forward-auth access rules of GATEWAY_ACCESS_RULES: a YAML file
// parsed and validated once (parse.go, errors by line), compiled into host, method and path
// matchers (glob.go) over the normalized path (normalize.go), and decided in memory, first
// match wins, then the default (decide.go). A Holder keeps the current set and reloads it on a
// change of the file or SIGHUP, keeping the last good set when the new one is invalid
// (reload.go).
package accessrules
