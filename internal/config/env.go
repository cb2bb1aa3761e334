package config

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// embeddedAddr is where the embedded gateway listens when GATEWAY_ADDR is unset: it prints an
// admin token, so it is reachable from this machine only.
const embeddedAddr = "127.0.0.1:8080"

// Source says where a setting's value came from.
type Source string

const (
	SourceEnv     Source = "env"
	SourceEnvFile Source = "env file"
	SourceDefault Source = "default"
)

// Env is what the gateway and its CLI read settings from: the process environment first, then
// the assignments of an env file (GATEWAY_ENV_FILE), then the defaults.
type Env struct {
	Lookup   func(string) string // the process environment; nil: os.Getenv
	File     map[string]string   // the env file's assignments; nil: none
	FilePath string              // where File came from, for messages
}

// Get is name's value and where it came from; SourceDefault when neither sets it.
func (e Env) Get(name string) (string, Source) {
	lookup := e.Lookup
	if lookup == nil {
		lookup = os.Getenv
	}
	if v := lookup(name); strings.TrimSpace(v) != "" {
		return v, SourceEnv
	}
	if v := e.File[name]; strings.TrimSpace(v) != "" {
		return v, SourceEnvFile
	}
	return "", SourceDefault
}

// ReadEnvFile reads an env file: NAME=value lines, blank lines and # comments; a leading
// "export " and quotes around the value are allowed, nothing is expanded.
func ReadEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("env file: %w", err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, val, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t\"'") {
			return nil, fmt.Errorf("env file %s line %d: want NAME=value", path, n)
		}
		val = strings.TrimSpace(val)
		if len(val) >= 2 && (val[0] == '"' || val[0] == '\'') && val[len(val)-1] == val[0] {
			val = val[1 : len(val)-1]
		}
		out[name] = val
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("env file %s: %w", path, err)
	}
	return out, nil
}
