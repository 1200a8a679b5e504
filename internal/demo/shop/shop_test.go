package shop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"golang.org/x/crypto/bcrypt"
)

// fastOptions turns the simulations off, so functional tests run quickly.
func fastOptions() Options {
	return Options{Workers: 4, DBLatency: -1, CPUWork: -1, BcryptCost: bcrypt.MinCost}
}

// logBuffer collects a shop's log; tests fail if the shop logged an error.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startShop serves a new Shop on 127.0.0.1 for the length of the test.
func startShop(t testing.TB, opts Options) (*Shop, *httptest.Server) {
	t.Helper()
	var log logBuffer
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(&log, nil))
	}
	s, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		srv.Close()
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if strings.Contains(log.String(), "level=ERROR") {
			t.Errorf("the shop logged errors:\n%s", log.String())
		}
	})
	return s, srv
}

func TestGuestCheckoutJourney(t *testing.T) {
	s, srv := startShop(t, fastOptions())
	ctx := t.Context()
	g := newGuest(srv.URL, srv.Client().Transport)

	number, err := g.checkout(ctx, 3, "guest-1@example.com")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("order stored", func(t *testing.T) {
		id, err := strconv.ParseInt(strings.TrimPrefix(number, "R"), 10, 64)
		if err != nil || !strings.HasPrefix(number, "R") {
			t.Fatalf("order number %q is not R followed by digits", number)
		}
		var email string
		var items, total, lines int64
		err = s.store.read.QueryRowContext(ctx, `SELECT email, item_count, total_cents,
			(SELECT COUNT(*) FROM order_items WHERE order_id = orders.id AND product_id = 3)
			FROM orders WHERE id = ?`, id).Scan(&email, &items, &total, &lines)
		if err != nil {
			t.Fatalf("order %s not in the database: %v", number, err)
		}
		want := seedProduct(3).PriceCents
		if email != "guest-1@example.com" || items != 1 || total != want || lines != 1 {
			t.Errorf("order %s = email %q, %d items, %d cents, %d lines of product 3; want guest-1@example.com, 1, %d, 1",
				number, email, items, total, lines, want)
		}
	})

	t.Run("cart emptied", func(t *testing.T) {
		resp, err := g.do(ctx, http.MethodGet, "/cart", nil)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := resp.document()
		if err != nil {
			t.Fatal(err)
		}
		if doc.Find("#empty-cart").Length() != 1 || doc.Find("#cart-count").Text() != "0" {
			t.Errorf("cart after checkout is not empty:\n%s", resp.body)
		}
	})

	t.Run("second checkout is 422", func(t *testing.T) {
		// An empty cart has no checkout form; the home page has the token.
		token, err := g.page(ctx, "/", `input[name="authenticity_token"]`)
		if err == nil {
			var resp response
			resp, err = g.do(ctx, http.MethodPost, "/checkout", url.Values{"authenticity_token": {token}, "email": {"guest-1@example.com"}})
			if err == nil && resp.status != http.StatusUnprocessableEntity {
				err = fmt.Errorf("status %d, want 422", resp.status)
			}
		}
		if err != nil {
			t.Error(err)
		}
	})
}

func TestSessionCookie(t *testing.T) {
	_, srv := startShop(t, fastOptions())
	g := newGuest(srv.URL, srv.Client().Transport)
	ctx := t.Context()

	first, err := g.do(ctx, http.MethodGet, "/", nil)
	if err != nil {
		t.Fatal(err)
	}
	cookie := first.header.Get("Set-Cookie")
	for _, want := range []string{sessionCookie + "=", "HttpOnly", "SameSite=Lax", "Path=/"} {
		if !strings.Contains(cookie, want) {
			t.Errorf("Set-Cookie %q lacks %q", cookie, want)
		}
	}
	second, err := g.do(ctx, http.MethodGet, "/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := second.header.Get("Set-Cookie"); c != "" {
		t.Errorf("a known session got a new cookie: %q", c)
	}
	tokens := map[string]bool{}
	for _, resp := range []response{first, second} {
		doc, err := resp.document()
		if err != nil {
			t.Fatal(err)
		}
		meta, _ := doc.Find(`meta[name="csrf-token"]`).Attr("content")
		tokens[meta] = true
		doc.Find(`input[name="authenticity_token"]`).Each(func(_ int, input *goquery.Selection) {
			value, _ := input.Attr("value")
			tokens[value] = true
		})
	}
	if len(tokens) != 1 || tokens[""] {
		t.Errorf("the session's pages carry tokens %v, want one non-empty token", tokens)
	}
}

func TestPages(t *testing.T) {
	_, srv := startShop(t, fastOptions())
	tests := []struct {
		name       string
		path       string
		accept     string
		wantStatus int
		wantType   string
		wantBody   string
	}{
		{"health", "/health", "", 200, "text/plain", "ok"},
		{"home", "/", "", 200, "text/html", `href="/products/20"`},
		{"product", "/products/3", "", 200, "text/html", `name="product_id" value="3"`},
		{"product as JSON", "/products/3", "application/json", 200, "application/json", `"id":3`},
		{"unknown product", "/products/999", "", 404, "text/html", "no such product"},
		{"product id not a number", "/products/abc", "", 404, "text/html", "no such product"},
		{"API product", "/api/products/3", "", 200, "application/json", `"price_cents":`},
		{"API unknown product", "/api/products/999", "", 404, "application/json", `"error"`},
		{"empty cart", "/cart", "", 200, "text/html", `id="empty-cart"`},
		{"unknown route", "/nope", "", 404, "text/plain", "not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.accept != "" {
				req.Header.Set("Accept", tt.accept)
			}
			resp, err := newGuest(srv.URL, srv.Client().Transport).send(req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.status != tt.wantStatus {
				t.Errorf("status %d, want %d", resp.status, tt.wantStatus)
			}
			if ct := resp.header.Get("Content-Type"); !strings.HasPrefix(ct, tt.wantType) {
				t.Errorf("Content-Type %q, want %s", ct, tt.wantType)
			}
			if !strings.Contains(string(resp.body), tt.wantBody) {
				t.Errorf("body lacks %q:\n%s", tt.wantBody, resp.body)
			}
			if tt.path != "/health" && resp.header.Get("Server-Timing") == "" {
				t.Errorf("no Server-Timing header")
			}
		})
	}

	t.Run("API product fields", func(t *testing.T) {
		resp, err := newGuest(srv.URL, srv.Client().Transport).do(t.Context(), http.MethodGet, "/api/products/3", nil)
		if err != nil {
			t.Fatal(err)
		}
		var got product
		if err := json.Unmarshal(resp.body, &got); err != nil {
			t.Fatalf("decode %s: %v", resp.body, err)
		}
		if want := seedProduct(3); got != want {
			t.Errorf("got %+v, want %+v", got, want)
		}
	})
}

func TestAddToCart(t *testing.T) {
	_, srv := startShop(t, fastOptions())
	ctx := t.Context()
	other := newGuest(srv.URL, srv.Client().Transport)
	otherToken, err := other.page(ctx, "/", `input[name="authenticity_token"]`)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name       string
		noSession  bool                    // skip visiting the home page first
		form       func(string) url.Values // from the guest's own token
		header     string                  // X-CSRF-Token
		wantStatus int
	}{
		{"valid token", false, func(tok string) url.Values { return url.Values{"authenticity_token": {tok}, "product_id": {"2"}} }, "", 303},
		{"token in header", false, func(string) url.Values { return url.Values{"product_id": {"2"}} }, "own", 303},
		{"no session cookie", true, func(string) url.Values { return url.Values{"authenticity_token": {otherToken}, "product_id": {"2"}} }, "", 422},
		{"no token", false, func(string) url.Values { return url.Values{"product_id": {"2"}} }, "", 422},
		{"wrong token", false, func(string) url.Values { return url.Values{"authenticity_token": {"forged"}, "product_id": {"2"}} }, "", 422},
		{"another session's token", false, func(string) url.Values { return url.Values{"authenticity_token": {otherToken}, "product_id": {"2"}} }, "", 422},
		{"unknown product", false, func(tok string) url.Values { return url.Values{"authenticity_token": {tok}, "product_id": {"999"}} }, "", 404},
		{"bad product id", false, func(tok string) url.Values { return url.Values{"authenticity_token": {tok}, "product_id": {"x"}} }, "", 422},
		{"quantity too large", false, func(tok string) url.Values {
			return url.Values{"authenticity_token": {tok}, "product_id": {"2"}, "quantity": {"100"}}
		}, "", 422},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuest(srv.URL, srv.Client().Transport)
			var token string
			if !tt.noSession {
				if token, err = g.page(ctx, "/", `input[name="authenticity_token"]`); err != nil {
					t.Fatal(err)
				}
			}
			form := tt.form(token)
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/cart", strings.NewReader(form.Encode()))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if tt.header == "own" {
				req.Header.Set("X-CSRF-Token", token)
			}
			resp, err := g.send(req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.status != tt.wantStatus {
				t.Errorf("status %d, want %d:\n%s", resp.status, tt.wantStatus, resp.body)
			}
			if tt.noSession {
				return
			}
			cart, err := g.do(ctx, http.MethodGet, "/cart", nil)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := cart.document()
			if err != nil {
				t.Fatal(err)
			}
			wantCount := "0"
			if tt.wantStatus == http.StatusSeeOther {
				wantCount = "1"
			}
			if got := doc.Find("#cart-count").Text(); got != wantCount {
				t.Errorf("cart holds %s items afterwards, want %s", got, wantCount)
			}
		})
	}
}

func TestCheckout(t *testing.T) {
	_, srv := startShop(t, fastOptions())
	ctx := t.Context()

	tests := []struct {
		name       string
		fillCart   bool
		token      string // "own" means the session's token
		email      string
		json       bool
		wantStatus int
	}{
		{"form", true, "own", "a@example.com", false, 200},
		{"JSON body", true, "own", "b@example.com", true, 200},
		{"empty cart", false, "own", "c@example.com", false, 422},
		{"no token", true, "", "d@example.com", false, 422},
		{"wrong token", true, "forged", "e@example.com", false, 422},
		{"invalid email", true, "own", "not an email", false, 422},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuest(srv.URL, srv.Client().Transport)
			token, err := g.page(ctx, "/", `input[name="authenticity_token"]`)
			if err != nil {
				t.Fatal(err)
			}
			if tt.fillCart {
				resp, err := g.do(ctx, http.MethodPost, "/cart", url.Values{"authenticity_token": {token}, "product_id": {"1"}, "quantity": {"2"}})
				if err != nil || resp.status != http.StatusSeeOther {
					t.Fatalf("add to cart: %v, status %d", err, resp.status)
				}
			}
			params := map[string]string{"email": tt.email}
			switch tt.token {
			case "own":
				params["authenticity_token"] = token
			case "":
			default:
				params["authenticity_token"] = tt.token
			}
			var req *http.Request
			if tt.json {
				body, _ := json.Marshal(params)
				req, err = http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/checkout", bytes.NewReader(body))
				if err == nil {
					req.Header.Set("Content-Type", "application/json")
				}
			} else {
				form := url.Values{}
				for k, v := range params {
					form.Set(k, v)
				}
				req, err = http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/checkout", strings.NewReader(form.Encode()))
				if err == nil {
					req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			resp, err := g.send(req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.status != tt.wantStatus {
				t.Errorf("status %d, want %d:\n%s", resp.status, tt.wantStatus, resp.body)
			}
			doc, err := resp.document()
			if err != nil {
				t.Fatal(err)
			}
			if hasNumber := doc.Find("#order-number").Length() == 1; hasNumber != (tt.wantStatus == 200) {
				t.Errorf("order number shown: %v, want %v", hasNumber, tt.wantStatus == 200)
			}
		})
	}
}

func TestAccounts(t *testing.T) {
	_, srv := startShop(t, fastOptions())
	client := srv.Client()
	var token string // set by the login step

	// The steps run in order: each may use what an earlier one stored.
	steps := []struct {
		name       string
		method     string
		path       string
		body       string
		bearer     func() string
		wantStatus int
		check      func(t *testing.T, body map[string]any)
	}{
		{name: "sign up", method: "POST", path: "/users", body: `{"email":"Ada@Example.com","password":"correct horse"}`, wantStatus: 201,
			check: func(t *testing.T, body map[string]any) {
				if id, _ := body["id"].(float64); id < 1 {
					t.Errorf("no id in %v", body)
				}
			}},
		{name: "duplicate sign up", method: "POST", path: "/users", body: `{"email":"ada@example.com","password":"another one"}`, wantStatus: 409},
		{name: "sign up with bad JSON", method: "POST", path: "/users", body: `{"email":`, wantStatus: 400},
		{name: "sign up with bad email", method: "POST", path: "/users", body: `{"email":"ada","password":"correct horse"}`, wantStatus: 422},
		{name: "sign up with short password", method: "POST", path: "/users", body: `{"email":"bob@example.com","password":"short"}`, wantStatus: 422},
		{name: "log in", method: "POST", path: "/session", body: `{"email":"ada@example.com","password":"correct horse"}`, wantStatus: 200,
			check: func(t *testing.T, body map[string]any) {
				token, _ = body["token"].(string)
				if token == "" {
					t.Errorf("no token in %v", body)
				}
			}},
		{name: "log in with wrong password", method: "POST", path: "/session", body: `{"email":"ada@example.com","password":"wrong horse"}`, wantStatus: 401},
		{name: "log in as unknown user", method: "POST", path: "/session", body: `{"email":"eve@example.com","password":"correct horse"}`, wantStatus: 401},
		{name: "log in with bad JSON", method: "POST", path: "/session", body: `nope`, wantStatus: 400},
		{name: "me", method: "GET", path: "/api/me", bearer: func() string { return token }, wantStatus: 200,
			check: func(t *testing.T, body map[string]any) {
				if body["email"] != "ada@example.com" || body["id"] == nil {
					t.Errorf("me = %v, want ada@example.com with an id", body)
				}
			}},
		{name: "me without token", method: "GET", path: "/api/me", wantStatus: 401},
		{name: "me with wrong token", method: "GET", path: "/api/me", bearer: func() string { return "forged" }, wantStatus: 401},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), step.method, srv.URL+step.path, strings.NewReader(step.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			if step.bearer != nil {
				req.Header.Set("Authorization", "Bearer "+step.bearer())
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != step.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, step.wantStatus, raw)
			}
			var body map[string]any
			if err := json.Unmarshal(raw, &body); err != nil {
				t.Fatalf("body %q is not a JSON object: %v", raw, err)
			}
			if step.check != nil {
				step.check(t, body)
			}
		})
	}
}

// TestWorkersBoundConcurrency sends parallel requests that each hold a worker
// for one simulated query and checks they are served Workers at a time. The
// lower time bound is certain (a request cannot finish before its query);
// the upper one leaves most of a round for a noisy machine.
func TestWorkersBoundConcurrency(t *testing.T) {
	const latency = 100 * time.Millisecond
	tests := []struct {
		name     string
		workers  int
		parallel int
		rounds   int // of latency each, at the least
	}{
		{"2 requests on 2 workers", 2, 2, 1},
		{"4 requests on 2 workers", 2, 4, 2},
		{"4 requests on 4 workers", 4, 4, 1},
		{"5 requests on 1 worker", 1, 5, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := fastOptions()
			opts.Workers = tt.workers
			opts.DBLatency = latency
			s, srv := startShop(t, opts)
			ctx := t.Context()
			client := srv.Client()
			client.Transport.(*http.Transport).MaxIdleConnsPerHost = tt.parallel

			var wg sync.WaitGroup
			errs := make(chan error, tt.parallel)
			start := time.Now()
			for range tt.parallel {
				wg.Go(func() {
					resp, err := newGuest(srv.URL, client.Transport).do(ctx, http.MethodGet, "/api/products/1", nil)
					if err == nil && resp.status != http.StatusOK {
						err = fmt.Errorf("status %d", resp.status)
					}
					errs <- err
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			// The bound holds (never more at once than workers, so at least
			// rounds × latency), and the workers are used (as many at once as
			// there are, which the 100 ms of each request leaves time for).
			// The ceiling only guards against a hang: wall-clock time on a
			// shared machine is too noisy to prove concurrency.
			low := time.Duration(tt.rounds) * latency
			high := low + 3*latency
			if elapsed < low || elapsed > high {
				t.Errorf("%d requests took %v, want %v to %v", tt.parallel, elapsed.Round(time.Millisecond), low, high)
			}
			if peak, want := s.peak.Load(), int64(min(tt.workers, tt.parallel)); peak != want {
				t.Errorf("%d requests held a worker at once, want %d", peak, want)
			}
		})
	}
}

// TestConcurrentJourneys runs many guests at once through a shop with a
// small database latency, to catch SQLITE_BUSY and other errors that only
// appear under concurrency (startShop fails the test on any logged error).
func TestConcurrentJourneys(t *testing.T) {
	opts := fastOptions()
	opts.Workers = 8
	opts.DBLatency = time.Millisecond
	s, srv := startShop(t, opts)
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	transport := srv.Client().Transport
	transport.(*http.Transport).MaxIdleConnsPerHost = 32

	const guests, journeys = 24, 2
	var wg sync.WaitGroup
	errs := make(chan error, guests*journeys)
	for i := range guests {
		wg.Go(func() {
			for j := range journeys {
				g := newGuest(srv.URL, transport)
				if _, err := g.checkout(ctx, int64(1+i%20), fmt.Sprintf("guest-%d-%d@example.com", i, j)); err != nil {
					errs <- fmt.Errorf("guest %d journey %d: %w", i, j, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var orders int
	if err := s.store.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM orders`).Scan(&orders); err != nil {
		t.Fatal(err)
	}
	if orders != guests*journeys {
		t.Errorf("%d orders stored, want %d", orders, guests*journeys)
	}
}

func TestClose(t *testing.T) {
	t.Run("removes the temporary directory", func(t *testing.T) {
		s, err := New(fastOptions())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(s.dir); err != nil {
			t.Fatalf("data directory: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if _, err := os.Stat(s.dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after Close, stat %s: %v, want not exist", s.dir, err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	})

	t.Run("keeps a given directory and its data", func(t *testing.T) {
		opts := fastOptions()
		opts.DataDir = t.TempDir()
		for run := range 2 {
			s, srv := startShop(t, opts)
			var orders, products int
			err := s.store.read.QueryRow(`SELECT (SELECT COUNT(*) FROM orders), (SELECT COUNT(*) FROM products)`).Scan(&orders, &products)
			if err != nil {
				t.Fatal(err)
			}
			if orders != run || products != DefaultProducts {
				t.Errorf("run %d: %d orders and %d products, want %d and %d", run, orders, products, run, DefaultProducts)
			}
			if _, err := newGuest(srv.URL, srv.Client().Transport).checkout(t.Context(), 1, "keep@example.com"); err != nil {
				t.Fatal(err)
			}
			srv.Close()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := os.Stat(opts.DataDir + "/shop.db"); err != nil {
			t.Errorf("database file: %v", err)
		}
	})
}

func TestOptionsValidation(t *testing.T) {
	tests := []struct {
		name string
		opts Options
	}{
		{"negative workers", Options{Workers: -1}},
		{"bcrypt cost too low", Options{BcryptCost: 1}},
		{"negative products", Options{Products: -5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if s, err := New(tt.opts); err == nil {
				s.Close()
				t.Errorf("New(%+v) succeeded, want an error", tt.opts)
			}
		})
	}
}

func TestServe(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	addrs := make(chan string, 1)
	served := make(chan error, 1)
	go func() {
		served <- Serve(ctx, "127.0.0.1:0", fastOptions(), func(addr string) { addrs <- addr })
	}()

	var addr string
	select {
	case addr = <-addrs:
	case err := <-served:
		t.Fatalf("Serve returned before ready: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve not ready after 10s")
	}
	resp, err := http.Get("http://" + addr + "/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "ok" {
		t.Errorf("GET /health = %d %q, want 200 ok", resp.StatusCode, body)
	}

	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve after cancel = %v, want nil", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Serve did not return 15s after cancel")
	}
	if _, err := http.Get("http://" + addr + "/health"); err == nil {
		t.Error("the server still answers after shutdown")
	}
}

func TestCPUWorkTakesTime(t *testing.T) {
	if testing.Short() {
		t.Skip("measures CPU time")
	}
	w := newCPUWork(5 * time.Millisecond)
	if w.rounds < 1 {
		t.Fatalf("calibrated to %d rounds", w.rounds)
	}
	// Best of a few, since the machine may be busy; generous either way.
	fastest := time.Hour
	for range 5 {
		start := time.Now()
		w.spend(1)
		fastest = min(fastest, time.Since(start))
	}
	if fastest < 2*time.Millisecond || fastest > 25*time.Millisecond {
		t.Errorf("5ms of work took %v at best", fastest)
	}
}
