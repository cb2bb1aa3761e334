package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestLogsCarryIncomingTraceIDWithoutExporter: a gateway with no span exporter configured
// still writes the W3C traceparent's trace id (and the parent's span id) on the log lines of
// that request, next to the request id; an invalid traceparent is ignored (no ids logged).
func TestLogsCarryIncomingTraceIDWithoutExporter(t *testing.T) {
	for _, k := range []string{"OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		t.Setenv(k, "")
	}
	addr, stdout, stderr := startGateway(t, map[string]string{"GATEWAY_LOG_LEVEL": "debug"})
	m := regexp.MustCompile(`export HG_TOKEN=(\S+)`).FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("no bootstrap token printed:\n%s", stdout)
	}
	const traceID, spanID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	do := func(rid, token, traceparent string) {
		req, _ := http.NewRequest("GET", "http://"+addr+"/v1/tokens", nil)
		req.Header.Set("X-Request-Id", rid)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if traceparent != "" {
			req.Header.Set("traceparent", traceparent)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	do("rid-ok", m[1], "00-"+traceID+"-"+spanID+"-01")
	do("rid-unsampled", m[1], "00-"+traceID+"-"+spanID+"-00")
	do("rid-401", "", "00-"+traceID+"-"+spanID+"-01")
	do("rid-bad", m[1], "00-"+strings.Repeat("0", 32)+"-"+spanID+"-01")
	do("rid-garbage", m[1], "not a traceparent")

	lines := map[string][]map[string]any{}
	sc := bufio.NewScanner(strings.NewReader(stderr.String()))
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		if rid, _ := line["request_id"].(string); rid != "" {
			lines[rid] = append(lines[rid], line)
		}
	}
	for _, rid := range []string{"rid-ok", "rid-unsampled", "rid-401"} {
		if len(lines[rid]) == 0 {
			t.Fatalf("%s: no log line with its request id:\n%s", rid, stderr)
		}
		for _, l := range lines[rid] {
			if l["trace_id"] != traceID || l["span_id"] != spanID {
				t.Errorf("%s: line %v: want trace_id %s span_id %s", rid, l, traceID, spanID)
			}
		}
	}
	for _, rid := range []string{"rid-bad", "rid-garbage"} {
		if len(lines[rid]) == 0 {
			t.Fatalf("%s: no log line with its request id", rid)
		}
		for _, l := range lines[rid] {
			if _, ok := l["trace_id"]; ok {
				t.Errorf("%s: an invalid traceparent reached the log: %v", rid, l)
			}
		}
	}
}
