package handlers

import (
	"context"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/telemetry"
	"github.com/hashgate/hashgate/internal/telemetry/redistrace"
	"github.com/hashgate/hashgate/internal/testredis"
)

// tracedHarness is a harness whose Redis client is traced through rueidisotel into an
// in-memory exporter.
func tracedHarness(t *testing.T, b testredis.Backend, configure func(h *harness, d *Deps)) (*harness, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{ServiceName: "hashgate-test"},
		telemetry.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(exp)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	s := testredis.Open(t, b, func(o *store.Options) {
		o.NewClient = redistrace.For(tel)
	})
	exp.Reset()
	return newHarnessOn(t, s, testredis.Prefix(t), tel, configure), exp
}

func TestRequestSpanHasChildSpanPerRedisCommand(t *testing.T) {
	t.Parallel()
	for _, b := range testredis.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			h, exp := tracedHarness(t, b, nil)
			const secret = "hgs_SECRETSECRET_totallysecretsessiontokenvalue123456789"
			bearer := h.bearer("acme", allScopes...)
			exp.Reset()
			rec := h.do("GET", "/readyz", nil, "Authorization", bearer, "X-Session-Token", secret, "Cookie", SessionCookieName+"="+secret)
			if rec.Code != 200 {
				t.Fatalf("readyz %d %s", rec.Code, rec.Body)
			}
			spans := exp.GetSpans()
			var server *tracetest.SpanStub
			for i := range spans {
				if spans[i].SpanKind == trace.SpanKindServer {
					server = &spans[i]
				}
			}
			if server == nil {
				t.Fatalf("no server span among %d spans", len(spans))
			}
			children := 0
			for _, s := range spans {
				if s.Parent.SpanID() == server.SpanContext.SpanID() && s.SpanKind == trace.SpanKindClient {
					children++
					if s.Name != "PING" {
						t.Errorf("child span %q, want PING", s.Name)
					}
				}
			}
			if want := 1; b.Name == "cluster" {
				if children < 3 { // one PING per master
					t.Errorf("cluster readyz has %d redis spans, want one per master", children)
				}
			} else if children != want {
				t.Errorf("readyz has %d redis child spans, want %d", children, want)
			}
			assertNoSecretInSpans(t, spans, secret, strings.TrimPrefix(bearer, "Bearer "))
		})
	}
}

// assertNoSecretInSpans fails when any span name, attribute, event or status holds a secret.
func assertNoSecretInSpans(t *testing.T, spans tracetest.SpanStubs, secrets ...string) {
	t.Helper()
	for _, s := range spans {
		var texts []string
		texts = append(texts, s.Name, s.Status.Description)
		for _, a := range s.Attributes {
			texts = append(texts, a.Value.String())
		}
		for _, e := range s.Events {
			texts = append(texts, e.Name)
			for _, a := range e.Attributes {
				texts = append(texts, a.Value.String())
			}
		}
		for _, txt := range texts {
			for _, sec := range secrets {
				if sec != "" && strings.Contains(txt, sec[:min(len(sec), 24)]) {
					t.Fatalf("span %q carries a secret: %q", s.Name, txt)
				}
			}
		}
	}
}
