package config

import (
	"fmt"
	"reflect"
	"strings"
)

// Fields renders the config for the start-up log with secrets masked: set secrets show as
// "***", a URL keeps only its scheme and hosts.
func (c Config) Fields() []any {
	v := reflect.ValueOf(c)
	t := v.Type()
	out := make([]any, 0, 2*t.NumField())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		out = append(out, f.Tag.Get("env"), maskField(f, fmt.Sprint(v.Field(i).Interface())))
	}
	return out
}

// maskField is val as f may be shown: a set secret as "***", a URL without its passwords.
func maskField(f reflect.StructField, val string) string {
	switch f.Tag.Get("secret") {
	case "true":
		if val != "" {
			return "***"
		}
	case "url":
		return MaskURL(val)
	}
	return val
}

// MaskURL hides the password of a redis URL: redis://user:***@host:port.
func MaskURL(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return u
	}
	rest, query, hasQuery := strings.Cut(rest, "?")
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		user, _, _ := strings.Cut(rest[:at], ":")
		rest = user + ":***@" + rest[at+1:]
	}
	if hasQuery {
		// The Sentinels' password travels as a query parameter.
		params := strings.Split(query, "&")
		for i, p := range params {
			if k, _, ok := strings.Cut(p, "="); ok && strings.Contains(strings.ToLower(k), "password") {
				params[i] = k + "=***"
			}
		}
		rest += "?" + strings.Join(params, "&")
	}
	return scheme + "://" + rest
}
