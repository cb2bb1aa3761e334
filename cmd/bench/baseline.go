package main

// The baselines, measured in the same run as the gateway:
//   serve-ceiling  an Echo handler answering GET /v1/authorize with the same JSON and X-Auth-*
//                  headers as the gateway, touching no Redis: the HTTP ceiling.
//   serve-naive    the seed-004 design users write instead: HGETALL the session hash, then
//                  HSET lastSeen + EXPIRE (one pipeline) on every request.
//   redisCeiling   rueidis HMGET alone at the benchmark's concurrency: the Redis ceiling.
// The two servers run as separate processes (this program re-executed), like the gateway.

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/redis/rueidis"
)

// authorizeBody is the gateway's AuthorizeResult for a session caller.
type authorizeBody struct {
	AuthLevel string `json:"authLevel"`
	Kind      string `json:"kind,omitempty"`
	SessionID string `json:"sessionId,omitempty"`
	Subject   string `json:"subject"`
	Tenant    string `json:"tenantId"`
}

const (
	sessionCookie = "__Host-hg_session"
	sessionHeader = "X-Session-Token"
	naiveKeyspace = "naive:session:"
	naiveIdle     = 30 * time.Minute
)

func setAuthHeaders(c echo.Context, b authorizeBody) {
	h := c.Response().Header()
	h.Set("X-Auth-Subject", b.Subject)
	h.Set("X-Auth-Tenant", b.Tenant)
	h.Set("X-Auth-Level", b.AuthLevel)
	if b.SessionID != "" {
		h.Set("X-Auth-Session", b.SessionID)
	}
	h.Set("Cache-Control", "no-store")
}

// ceilingAuthorize is the HTTP ceiling's answer: the gateway's 200 to a session (the same
// headers, each value of the same size, and the same JSON body) from constants.
func ceilingAuthorize() echo.HandlerFunc {
	body := authorizeBody{AuthLevel: "BASIC", Kind: "session", SessionID: "s_AAAAAAAAAAAA_AAAAAAAAAAAAAAAAAA", Subject: "bench-user-000123", Tenant: "default"}
	assertion := ceilingAssertion(body)
	return func(c echo.Context) error {
		setAuthHeaders(c, body)
		h := c.Response().Header()
		h.Set("X-Auth-Kind", body.Kind)
		h.Set("X-Auth-Assertion", assertion)
		h.Set("X-Request-Id", "AAAAAAAAAAAA-1")
		return c.JSON(http.StatusOK, body)
	}
}

// ceilingAssertion stands in for the gateway's X-Auth-Assertion: a JWT shaped and sized as the
// gateway's assertion of the same session (about 510 bytes), so the ceiling's answer is the
// gateway's in size as well as in names. It is made once and never signed: the ceiling does
// none of the gateway's work.
func ceilingAssertion(b authorizeBody) string {
	seg := func(v []byte) string { return base64.RawURLEncoding.EncodeToString(v) }
	header := `{"alg":"EdDSA","kid":"` + strings.Repeat("k", 43) + `","typ":"JWT"}`
	claims := `{"iss":"hashgate","sub":"` + b.Subject + `","aud":["hashgate-upstream"],"exp":1800000060,"iat":1800000000,` +
		`"jti":"` + strings.Repeat("0", 26) + `","tenant":"` + b.Tenant + `","kind":"` + b.Kind + `","level":"` + b.AuthLevel +
		`","sid":"` + b.SessionID + `"}`
	return seg([]byte(header)) + "." + seg([]byte(claims)) + "." + seg(make([]byte, 64))
}

func sessionToken(c echo.Context) string {
	if ck, err := c.Cookie(sessionCookie); err == nil && ck.Value != "" {
		return ck.Value
	}
	return c.Request().Header.Get(sessionHeader)
}

// serveBaseline runs one baseline server until SIGTERM/SIGINT.
func serveBaseline(kind string, args []string) error {
	fs := flag.NewFlagSet(kind, flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	redisURL := fs.String("redis", "", "redis:// URL (serve-naive)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.GET("/healthz", func(c echo.Context) error { return c.String(http.StatusOK, "ok") })
	switch kind {
	case "serve-ceiling":
		e.GET("/v1/authorize", ceilingAuthorize())
	case "serve-naive":
		opt, err := rueidisOption(*redisURL)
		if err != nil {
			return err
		}
		client, err := rueidis.NewClient(opt)
		if err != nil {
			return fmt.Errorf("naive: redis: %w", err)
		}
		defer client.Close()
		n := &naive{client: client}
		e.GET("/v1/authorize", n.authorize)
		e.GET("/metrics", func(c echo.Context) error {
			return c.String(http.StatusOK, fmt.Sprintf("%s %d\n", metricNaiveRT, n.roundTrips.Load()))
		})
	default:
		return fmt.Errorf("unknown baseline %q", kind)
	}
	hs := &http.Server{Addr: *addr, Handler: e, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 15 * time.Second,
		WriteTimeout: 15 * time.Second, IdleTimeout: 120 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.ListenAndServe() }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// rueidisOption is the client the gateway would build, without client-side caching.
func rueidisOption(url string) (rueidis.ClientOption, error) {
	opt, err := rueidis.ParseURL(url)
	if err != nil {
		return opt, fmt.Errorf("redis url: %w", err)
	}
	opt.DisableCache = true
	return opt, nil
}

// naive is seed 004's session check: key session:<raw token>, HGETALL, then touch.
type naive struct {
	client     rueidis.Client
	roundTrips atomic.Int64
}

func (n *naive) authorize(c echo.Context) error {
	tok := sessionToken(c)
	if tok == "" {
		return c.JSON(http.StatusUnauthorized, map[string]string{"title": "Unauthenticated"})
	}
	ctx, key := c.Request().Context(), naiveKeyspace+tok
	m, err := n.client.Do(ctx, n.client.B().Hgetall().Key(key).Build()).AsStrMap()
	n.roundTrips.Add(1)
	if err != nil {
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"title": "Unavailable"})
	}
	if len(m) == 0 {
		return c.JSON(http.StatusUnauthorized, map[string]string{"title": "Unauthenticated"})
	}
	now := time.Now().UnixMilli()
	if abs, _ := strconv.ParseInt(m["absoluteExpiry"], 10, 64); abs > 0 && now > abs {
		_ = n.client.Do(ctx, n.client.B().Del().Key(key).Build()).Error()
		n.roundTrips.Add(1)
		return c.JSON(http.StatusUnauthorized, map[string]string{"title": "Unauthenticated"})
	}
	for _, r := range n.client.DoMulti(ctx,
		n.client.B().Hset().Key(key).FieldValue().FieldValue("lastSeen", strconv.FormatInt(now, 10)).Build(),
		n.client.B().Expire().Key(key).Seconds(int64(naiveIdle/time.Second)).Build()) {
		if r.Error() != nil {
			return c.JSON(http.StatusServiceUnavailable, map[string]string{"title": "Unavailable"})
		}
	}
	n.roundTrips.Add(1)
	b := authorizeBody{AuthLevel: m["authLevel"], SessionID: m["sessionId"], Subject: m["userId"], Tenant: m["tenantId"]}
	setAuthHeaders(c, b)
	return c.JSON(http.StatusOK, b)
}

// seedNaive writes n naive sessions (as the seed's createSession does) and returns their tokens.
func seedNaive(ctx context.Context, c rueidis.Client, n int) ([]string, error) {
	now := time.Now()
	toks := make([]string, n)
	cmds := make(rueidis.Commands, 0, 2*n)
	for i := range toks {
		toks[i] = randomHex(32)
		key := naiveKeyspace + toks[i]
		cmds = append(cmds,
			c.B().Hset().Key(key).FieldValue().
				FieldValue("userId", fmt.Sprintf("bench-user-%d", i)).
				FieldValue("tenantId", "default").
				FieldValue("sessionId", fmt.Sprintf("s_naive_%d", i)).
				FieldValue("authLevel", "BASIC").
				FieldValue("createdAt", strconv.FormatInt(now.UnixMilli(), 10)).
				FieldValue("lastSeen", strconv.FormatInt(now.UnixMilli(), 10)).
				FieldValue("absoluteExpiry", strconv.FormatInt(now.Add(24*time.Hour).UnixMilli(), 10)).Build(),
			c.B().Expire().Key(key).Seconds(int64(naiveIdle/time.Second)).Build())
	}
	for _, r := range c.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			return nil, fmt.Errorf("seed naive sessions: %w", err)
		}
	}
	return toks, nil
}

// ceilingKey is the hash the Redis ceiling reads: the fields a session check needs.
const ceilingKey = "bench:ceiling:session"

var ceilingFields = []string{"userId", "tenantId", "status", "authLevel", "idleExpiresAtMs", "absoluteExpiresAtMs", "schemaVersion", "createdAtMs"}

// redisCeiling runs `conc` goroutines issuing HMGET for warm then d; between runs after the
// warm-up (for the commandstats snapshot).
func redisCeiling(ctx context.Context, url string, conc int, warm, d time.Duration, between func()) (wrkResult, error) {
	opt, err := rueidisOption(url)
	if err != nil {
		return wrkResult{}, err
	}
	c, err := rueidis.NewClient(opt)
	if err != nil {
		return wrkResult{}, err
	}
	defer c.Close()
	fv := c.B().Hset().Key(ceilingKey).FieldValue()
	for _, f := range ceilingFields {
		fv = fv.FieldValue(f, "value-of-"+f)
	}
	if err := c.Do(ctx, fv.Build()).Error(); err != nil {
		return wrkResult{}, err
	}
	cmd := c.B().Hmget().Key(ceilingKey).Field(ceilingFields...).Build().Pin()
	if _, _, err := hmgetLoop(ctx, c, cmd, conc, warm); err != nil {
		return wrkResult{}, err
	}
	between()
	start := time.Now()
	lat, errs, err := hmgetLoop(ctx, c, cmd, conc, d)
	if err != nil {
		return wrkResult{}, err
	}
	el := time.Since(start)
	slices.Sort(lat)
	var sum int64
	for _, l := range lat {
		sum += l
	}
	r := wrkResult{Requests: int64(len(lat)), DurationUS: el.Microseconds(), StatusErrors: errs,
		P50: pct(lat, 50), P99: pct(lat, 99), P999: pct(lat, 99.9)}
	if len(lat) > 0 {
		r.Mean = float64(sum) / float64(len(lat)) / 1e3
		r.Max = float64(lat[len(lat)-1]) / 1e3
	}
	return r, nil
}

// hmgetLoop returns every latency (ns) of d's worth of HMGETs from conc goroutines.
func hmgetLoop(ctx context.Context, c rueidis.Client, cmd rueidis.Completed, conc int, d time.Duration) ([]int64, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var (
		mu   sync.Mutex
		all  []int64
		errs atomic.Int64
		wg   sync.WaitGroup
	)
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]int64, 0, 1<<16)
			for ctx.Err() == nil {
				t := time.Now()
				err := c.Do(ctx, cmd).Error()
				if ctx.Err() != nil {
					break // cut off by the deadline: not a completed request
				}
				if err != nil {
					errs.Add(1)
					continue
				}
				lat = append(lat, int64(time.Since(t)))
			}
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(all) == 0 && errs.Load() > 0 {
		return nil, 0, errors.New("redis ceiling: every HMGET failed")
	}
	return all, errs.Load(), nil
}

// pct is the q-th percentile of sorted nanosecond latencies, in microseconds.
func pct(sorted []int64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q/100*float64(len(sorted))+0.5) - 1
	i = min(max(i, 0), len(sorted)-1)
	return float64(sorted[i]) / 1e3
}
