package main

// The interactive API reference (GET /docs) in a real browser: Debian's Chromium
// (scripts/browser-env.sh installs it; scripts/test.sh exports HASHGATE_TEST_CHROMIUM), driven
// over the DevTools protocol by chromedp, headless, against the whole gateway (serve) on real
// Redis 8.

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/getkin/kin-openapi/openapi3"

	"github.com/hashgate/hashgate/api"
	"github.com/hashgate/hashgate/internal/apperr"
)

const envChromium = "HASHGATE_TEST_CHROMIUM"

// specOperation is one operation of api/openapi.yaml, as the reference must show it.
type specOperation struct{ method, path, id, summary string }

func specOperations(t *testing.T) []specOperation {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	var ops []specOperation
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			ops = append(ops, specOperation{method: strings.ToLower(method), path: path, id: op.OperationID, summary: op.Summary})
		}
	}
	if len(ops) < 40 {
		t.Fatalf("the spec has %d operations: not the contract", len(ops))
	}
	return ops
}

// browserConsole collects what the page reported as an error: console.error calls, uncaught
// exceptions, and the browser's own log entries at error level (a Content-Security-Policy
// violation, a failed load).
type browserConsole struct {
	mu     sync.Mutex
	errors []string
}

func (b *browserConsole) collect(messages iter.Seq2[chromedp.ConsoleMessage, error]) {
	for m, err := range messages {
		if err != nil {
			return // the browser is gone: the test has ended
		}
		if m.Type == chromedp.ConsoleError || m.IsException() {
			b.mu.Lock()
			b.errors = append(b.errors, fmt.Sprintf("%s (%s %s:%d)", m, m.Source, m.URL, m.Line+1))
			b.mu.Unlock()
		}
	}
}

func (b *browserConsole) snapshot() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.errors)
}

// newBrowser starts headless Chromium with the flags this machine needs (root: no sandbox; no
// network but loopback: no background, sync or component traffic) and a fresh profile, and
// collects its console from the start.
func newBrowser(t *testing.T) (context.Context, *browserConsole) {
	t.Helper()
	bin := os.Getenv(envChromium)
	if bin == "" {
		t.Skipf("%s is unset: run scripts/test.sh (scripts/browser-env.sh installs Debian's chromium)", envChromium)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.UserDataDir(t.TempDir()),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1280, 2000),
	)
	// A bound on the whole browser session, so that a hang fails the test instead of the run.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	if err := chromedp.Do(bctx); err != nil { // starts the browser and opens the tab
		bcancel()
		t.Fatalf("start chromium (%s): %v", bin, err)
	}
	console := &browserConsole{}
	done := make(chan struct{})
	messages := chromedp.Console(bctx)
	go func() { defer close(done); console.collect(messages) }()
	t.Cleanup(func() { bcancel(); <-done })
	return bctx, console
}

// renderedOperation is one operation block of the rendered reference.
type renderedOperation struct {
	Method  string `json:"method"`
	Path    string `json:"path"`
	ID      string `json:"id"`
	Summary string `json:"summary"`
}

const renderedOperationsJS = `Array.from(document.querySelectorAll('.opblock')).map(el => ({
  method: (el.querySelector('.opblock-summary-method') || {}).textContent || '',
  path: ((el.querySelector('.opblock-summary-path') || {}).dataset || {}).path || '',
  id: (el.querySelector('.opblock-summary-operation-id') || {}).textContent || '',
  summary: (el.querySelector('.opblock-summary-description') || {}).textContent || '',
}))`

// TestDocsPageListsEveryOperation: /docs, loaded by Chromium from a gateway on Redis 8, renders
// every operation of the spec (method, path, operationId and summary, read from
// api/openapi.yaml) and logs no error: no failed load, no script error, no violation of its
// Content-Security-Policy, which allows only the gateway's own scripts and styles.
func TestDocsPageListsEveryOperation(t *testing.T) {
	t.Parallel()
	ctx, console := newBrowser(t)
	gw, _ := realGateway(t, nil)

	resp, err := http.Get("http://" + gw + "/docs")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	csp := resp.Header.Get("Content-Security-Policy")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
		t.Fatalf("GET /docs: %d %q, Content-Security-Policy %q", resp.StatusCode, resp.Header.Get("Content-Type"), csp)
	}

	err = chromedp.Do(ctx, chromedp.Navigate("http://"+gw+"/docs"),
		chromedp.WaitVisible(chromedp.CSS(`#operations-cases-getCaseHistory`)))
	if err != nil {
		t.Fatalf("load /docs: %v (console: %q)", err, console.snapshot())
	}
	rendered, err := chromedp.Run(ctx, chromedp.Evaluate[[]renderedOperation](renderedOperationsJS))
	if err != nil {
		t.Fatalf("read the rendered operations: %v", err)
	}
	for _, op := range specOperations(t) {
		want := renderedOperation{Method: op.method, Path: op.path, ID: op.id, Summary: op.summary}
		if !slices.ContainsFunc(rendered, func(r renderedOperation) bool {
			r.Method = strings.ToLower(r.Method)
			r.Path = strings.ReplaceAll(r.Path, "\u200b", "") // Swagger UI's word-break hints
			return r == want
		}) {
			t.Errorf("the page does not show %s %s (%s, %q)", op.method, op.path, op.id, op.summary)
		}
	}
	if errs := console.snapshot(); len(errs) > 0 {
		t.Errorf("the page logged errors:\n%s", strings.Join(errs, "\n"))
	}
}

// paste types text into the focused field in one input event, as a paste does (SendKeys sends
// a key event per character, seconds for a JWT).
func paste(text string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, t, input.InsertText, input.InsertTextParams{Text: text})
		return chromedp.Void{}, err
	}
}

// TestDocsTryItOut: through the page, as a person would: "Try it out" on GET /readyz answers
// 200 from the same gateway; then the Authorize button takes the bootstrap token and
// "Try it out" on GET /v1/tokens answers 200 with the tenant's tokens.
func TestDocsTryItOut(t *testing.T) {
	t.Parallel()
	ctx, console := newBrowser(t)
	gw, admin := realGateway(t, nil)

	run := func(step string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v (console: %q)", step, err, console.snapshot())
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("read %s: %v", sel, err)
		}
		return s
	}
	// tryItOut expands the operation, presses "Try it out" and "Execute", and returns the
	// status and body the page shows.
	tryItOut := func(op string) (status, body string) {
		t.Helper()
		sel := "#operations-" + op
		run("try "+op,
			chromedp.Click(chromedp.CSS(sel+` .opblock-summary-control`)),
			chromedp.Click(chromedp.CSS(sel+` .try-out__btn`)),
			chromedp.Click(chromedp.CSS(sel+` .execute`)),
			chromedp.WaitVisible(chromedp.CSS(sel+` .live-responses-table tbody .response-col_status`)),
		)
		return strings.TrimSpace(text(sel + ` .live-responses-table tbody .response-col_status`)),
			text(sel + ` .live-responses-table tbody .response-col_description`)
	}

	run("load /docs", chromedp.Navigate("http://"+gw+"/docs"),
		chromedp.WaitVisible(chromedp.CSS(`#operations-meta-getReadyz`)))
	if status, body := tryItOut("meta-getReadyz"); !strings.HasPrefix(status, "200") || !strings.Contains(body, `"status": "ok"`) {
		t.Fatalf("try GET /readyz: %q %s", status, body)
	}

	run("authorize",
		chromedp.Click(chromedp.CSS(`.auth-wrapper .authorize`)),
		chromedp.WaitVisible(chromedp.CSS(`.modal-ux input`)),
		chromedp.Focus(chromedp.CSS(`.modal-ux input`)),
		paste(admin),
		chromedp.Click(chromedp.CSS(`.modal-ux .auth-btn-wrapper .authorize`)),
		chromedp.Click(chromedp.CSS(`.modal-ux .btn-done`)),
		chromedp.WaitNotPresent(chromedp.CSS(`.modal-ux`)),
	)
	if status, body := tryItOut("tokens-listTokens"); !strings.HasPrefix(status, "200") || !strings.Contains(body, `"items"`) ||
		!strings.Contains(body, `"bootstrap-admin"`) {
		t.Fatalf("try GET /v1/tokens after Authorize: %q %s", status, body)
	}
	if errs := console.snapshot(); len(errs) > 0 {
		t.Errorf("the page logged errors:\n%s", strings.Join(errs, "\n"))
	}
}

// docsOverviewJS reads what a newcomer meets first: the tag sections in order, the operation
// ids that wrap onto a second line (each id's text laid out on more than one line), the
// overview's text, and the problem type links it holds (resolved).
const docsOverviewJS = `(() => {
  const wrapped = [];
  for (const el of document.querySelectorAll('.opblock-summary-operation-id')) {
    const r = document.createRange();
    r.selectNodeContents(el);
    const tops = new Set(Array.from(r.getClientRects()).map(x => Math.round(x.top)));
    if (tops.size > 1) wrapped.push(el.textContent);
  }
  const info = document.querySelector('.information-container .info') || document.body;
  return {
    tags: Array.from(document.querySelectorAll('h3.opblock-tag')).map(e => e.dataset.tag || e.textContent),
    wrapped: wrapped,
    ids: document.querySelectorAll('.opblock-summary-operation-id').length,
    text: info.innerText,
    problems: Array.from(info.querySelectorAll('a')).map(a => a.href).filter(h => h.includes('/problems/')),
    location: location.href,
  };
})()`

type docsOverview struct {
	Tags     []string `json:"tags"`
	Wrapped  []string `json:"wrapped"`
	IDs      int      `json:"ids"`
	Text     string   `json:"text"`
	Problems []string `json:"problems"`
	Location string   `json:"location"`
}

// TestDocsIsANewcomersReference: /docs/ leads to the reference; the first section is an API
// section and meta comes last; no operation id wraps, at a desktop width and a narrow one; the
// overview says which credential goes where, where the MFA code goes, and lists every problem
// type of the gateway, each link leading to that type's page, which shows its title.
func TestDocsIsANewcomersReference(t *testing.T) {
	t.Parallel()
	ctx, console := newBrowser(t)
	gw, _ := realGateway(t, nil)

	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get("http://" + gw + "/docs/")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if loc, _ := resp.Location(); resp.StatusCode/100 != 3 || loc == nil || loc.Path != "/docs" {
		t.Fatalf("GET /docs/: %d, Location %v", resp.StatusCode, loc)
	}

	overview := func(width int64) docsOverview {
		t.Helper()
		err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 2000), chromedp.Navigate("http://"+gw+"/docs/"),
			chromedp.WaitVisible(chromedp.CSS(`#operations-cases-getCaseHistory`)))
		if err != nil {
			t.Fatalf("load /docs/ at %d px: %v (console: %q)", width, err, console.snapshot())
		}
		o, err := chromedp.Run(ctx, chromedp.Evaluate[docsOverview](docsOverviewJS))
		if err != nil {
			t.Fatalf("read the reference: %v", err)
		}
		return o
	}
	for _, width := range []int64{1280, 800} {
		o := overview(width)
		if !strings.HasSuffix(o.Location, "/docs") {
			t.Errorf("/docs/ ended at %s", o.Location)
		}
		if len(o.Tags) < 7 || o.Tags[0] != "sessions" || o.Tags[len(o.Tags)-1] != "meta" {
			t.Errorf("sections in the order %q: want sessions first and meta last", o.Tags)
		}
		if o.IDs < 40 || len(o.Wrapped) > 0 {
			t.Errorf("at %d px, %d of %d operation ids wrap: %q", width, len(o.Wrapped), o.IDs, o.Wrapped)
		}
		if width != 1280 {
			continue
		}
		for _, want := range []string{"Getting started", "Authorization: Bearer", "X-Session-Token", "__Host-hg_session",
			"out of band", "/mfa/challenge", "/mfa/verify", "bootstrap"} {
			if !strings.Contains(o.Text, want) {
				t.Errorf("the overview does not say %q", want)
			}
		}
		linked := map[string]string{}
		for _, h := range o.Problems {
			linked[h[strings.LastIndex(h, "/")+1:]] = h
		}
		for _, k := range apperr.Kinds() {
			if linked[k.Slug] == "" {
				t.Errorf("the overview does not link the problem type %q", k.Slug)
			}
		}
		// Each link leads to its page.
		for _, k := range []*apperr.Kind{apperr.Validation, apperr.PreconditionFailed, apperr.StepUpRequired} {
			h1, err := "", chromedp.Do(ctx, chromedp.Navigate(linked[k.Slug]))
			if err == nil {
				h1, err = chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`h1`)))
			}
			if err != nil || h1 != k.Title {
				t.Errorf("the link %s leads to a page titled %q (%v), want %q", linked[k.Slug], h1, err, k.Title)
			}
		}
	}
	if errs := console.snapshot(); len(errs) > 0 {
		t.Errorf("the pages logged errors:\n%s", strings.Join(errs, "\n"))
	}
}
