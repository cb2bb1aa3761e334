package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashgate/hashgate/client"
)

// api calls the gateway: the set-up through the public Go client (package client, generated
// from the contract), the probes of the wrk scripts as raw requests.
type api struct {
	base  string
	token string // bearer for service calls
	hc    *http.Client
	cl    *client.ClientWithResponses // on base, with token
}

func newAPI(base, token string) (*api, error) {
	tr := &http.Transport{MaxIdleConns: 128, MaxIdleConnsPerHost: 128, IdleConnTimeout: 30 * time.Second}
	a := &api{token: token, hc: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
	return a, a.setBase(base)
}

// setBase points the api at another gateway (same keys, same token).
func (a *api) setBase(base string) error {
	cl, err := client.NewClientWithResponses(base, client.WithHTTPClient(a.hc), client.WithBearerToken(a.token))
	if err != nil {
		return fmt.Errorf("client for %s: %w", base, err)
	}
	a.base, a.cl = base, cl
	return nil
}

type apiResponse struct {
	Status int
	Header http.Header
	Body   []byte
}

// do sends one request; body is JSON-encoded unless it is a string (sent as is).
func (a *api) do(ctx context.Context, method, path string, body any, hdr map[string]string) (*apiResponse, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return nil, err
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	return &apiResponse{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// check maps a status outside want to an error naming the operation and the problem.
func (r *apiResponse) check(op string, want ...int) error {
	if slices.Contains(want, r.Status) {
		return nil
	}
	var p struct{ Title, Detail string }
	_ = json.Unmarshal(r.Body, &p)
	msg := strings.TrimSpace(p.Title + ": " + p.Detail)
	if p.Title == "" {
		msg = strings.TrimSpace(string(r.Body))
		if len(msg) > 200 {
			msg = msg[:200]
		}
	}
	return fmt.Errorf("%s: status %d, want %v (%s)", op, r.Status, want, msg)
}

// parallel runs f(0..n-1) on workers goroutines; it returns the first error.
func parallel(parent context.Context, n, workers int, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  = make(chan int)
	)
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(ctx, i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
						cancel()
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(next)
	wg.Wait()
	if first == nil {
		return parent.Err()
	}
	return first
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
