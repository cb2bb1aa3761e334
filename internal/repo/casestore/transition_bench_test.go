package casestore

import (
	"context"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/cases"
	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/repo/storetest"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// BenchmarkCaseTransition is one case_transition.lua call, an assignment (with its
// case.assigned append), on a private Redis 8 without persistence, reporting the server's time
// per script and the stream's bytes per event; with events off (GATEWAY_EVENTS=false) too, the
// baseline of what the event costs the script:
//
//	go test -run '^$' -bench BenchmarkCaseTransition ./internal/repo/casestore/
func BenchmarkCaseTransition(b *testing.B) {
	s := testredis.PrivateStore(b)
	for _, off := range []bool{false, true} {
		b.Run(map[bool]string{false: "events-on", true: "events-off"}[off], func(b *testing.B) {
			benchTransition(b, s, events.Retention{Off: off})
		})
	}
}

// BenchmarkCaseEscalate is case_transition.lua on the escalate path as make bench's
// case-escalate row runs it (GATEWAY_CASE_MAX_ESCALATION=10, each case escalated ten times,
// then the next), events on and off, on a private Redis 8 without persistence and on one with
// the append-only file as make bench runs it (appendfsync everysec): the server's time per
// script, its CPU per escalation (INFO cpu: with the file, the propagation counts), and (-v)
// the time of each command the script called:
//
//	go test -run '^$' -bench BenchmarkCaseEscalate -benchtime 20000x -v ./internal/repo/casestore/
func BenchmarkCaseEscalate(b *testing.B) {
	for _, aof := range []bool{false, true} {
		b.Run(map[bool]string{false: "no-aof", true: "aof"}[aof], func(b *testing.B) {
			s := testredis.PrivateStore(b)
			if aof {
				s = testredis.Open(b, testredis.Backend{Name: "private-aof", Env: testredis.EnvRedis8,
					URL: testredis.StartServer(b, "--appendfsync", "everysec").URL(), Broadcast: true})
			}
			for _, off := range []bool{false, true} {
				b.Run(map[bool]string{false: "events-on", true: "events-off"}[off], func(b *testing.B) {
					benchEscalate(b, s, events.Retention{Off: off})
				})
			}
		})
	}
}

func benchEscalate(b *testing.B, s *store.Store, ret events.Retention) {
	const maxLevel = 10
	r, err := New(s, Options{Prefix: testredis.Prefix(b), Hasher: storetest.Hasher(b), Retention: ret, MaxEscalation: maxLevel})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	ids := make([]string, b.N/maxLevel+1)
	for i := range ids {
		k, err := r.Create(ctx, cases.NewCase{Tenant: "acme", SubjectRef: "order/42", AssignedTeam: "support", DueAt: time.Now().Add(48 * time.Hour), Reason: "benchmark", Actor: "svc"})
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = k.ID
	}
	testredis.ResetScriptCost(b, s.Client)
	cpu := testredis.ServerCPU(b, s.Client)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := r.Escalate(ctx, cases.Change{Tenant: "acme", ID: ids[i/maxLevel], IfMatch: -1, Reason: "benchmark escalation", Actor: "svc"}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(testredis.ScriptCost(b, s.Client), "server-µs/script")
	b.ReportMetric((testredis.ServerCPU(b, s.Client)-cpu)/float64(b.N), "server-cpu-µs/op")
	b.Logf("per escalation: %s", testredis.CommandCost(b, s.Client, b.N))
}

func benchTransition(b *testing.B, s *store.Store, ret events.Retention) {
	r, err := New(s, Options{Prefix: testredis.Prefix(b), Hasher: storetest.Hasher(b), Retention: ret})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	k, err := r.Create(ctx, cases.NewCase{Tenant: "acme", SubjectRef: "order/42", AssignedTeam: "ops", DueAt: time.Now().Add(time.Hour), Reason: "late", Actor: "svc"})
	if err != nil {
		b.Fatal(err)
	}
	teams := []string{"ops", "l2"}
	testredis.ResetScriptCost(b, s.Client)
	i := 0
	for b.Loop() {
		if _, err := r.Assign(ctx, cases.Change{Tenant: "acme", ID: k.ID, IfMatch: -1, Reason: "hand over", Actor: "svc", AssignedTeam: teams[i%2]}); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(testredis.ScriptCost(b, s.Client), "server-µs/script")
	storetest.ReportStreamBytes(b, s, []string{r.Keys.EventStream(r.TenantTag("acme"))})
}
