// Package shop is the built-in demo web shop: the server under test that
// `loadlab demo` starts and sweeps. It behaves like a small real web app (a
// Rails store on Puma, scaled down) so that load tests against it show real
// effects: more workers help until the CPU is saturated, then gains flatten
// and latency rises.
//
// # What makes it realistic
//
//   - A bounded pool of workers, like Puma's threads: at most Options.Workers
//     requests are served at once and the rest wait in arrival order, like a
//     real app server's backlog. GET /health skips the queue.
//   - A real database: sessions, carts, orders, users and API tokens live in
//     SQLite (WAL mode), so every page runs a few real queries. Each query
//     first waits Options.DBLatency, inside the worker slot, the way a network
//     round trip to Postgres holds a Puma thread. The wait happens outside
//     SQLite's single writer lock, because the database it stands in for does
//     not serialize unrelated writers.
//   - Real CPU work: pages are rendered with html/template (the home page is
//     about 14 KB), cart totals are computed, passwords are hashed with
//     bcrypt, and each request also spends a fixed amount of CPU
//     (Options.CPUWork) standing in for what a framework spends on routing,
//     object allocation and view helpers. That amount is counted in work, not
//     time (SHA-256 rounds, calibrated once in New), so on a busy machine it
//     costs more wall time, as real code does.
//   - Rails habits: a session cookie (HttpOnly, SameSite=Lax), a CSRF token in
//     every form (input name="authenticity_token", also in a csrf-token meta
//     tag or the X-CSRF-Token header) whose absence or mismatch is a 422,
//     303 redirects after a POST, order numbers like R000000123.
//
// The guest-checkout journey makes 17 queries in 5 requests: home 3 (plus 1
// to start a session), product 4, add to cart 3, cart 2, checkout 5. With the
// defaults (5 ms per query, 15 ms of CPUWork) a request waits about as long
// on the database as it computes, so on two cores throughput grows almost
// linearly up to about 4 workers and flattens by 8, while the time each
// request holds a worker grows as workers compete for the CPU.
//
// The knee follows the cores the shop may use: with n cores it is near
// n × (database wait + CPU time) / CPU time workers. To show the same curve
// on any machine, run the shop in its own process with GOMAXPROCS=2.
//
// # Routes
//
//	GET  /health             200 "ok"; never queued behind the workers
//	GET  /                   home page: featured products, each with an add-to-cart form
//	GET  /products/{id}      product page with an add-to-cart form; 404 for an unknown id;
//	                         JSON as for /api/products/{id} when Accept starts with application/json
//	GET  /api/products/{id}  {"id":3,"name":"...","description":"...","price_cents":1299}
//	POST /cart               form or JSON: product_id, quantity (default 1), authenticity_token;
//	                         303 to /cart; 422 for a missing or wrong token or bad input; 404 unknown product
//	GET  /cart               the cart with a checkout form (authenticity_token, email)
//	POST /checkout           form or JSON: email, authenticity_token; stores the order (guest
//	                         checkout), empties the cart, 200 with <span id="order-number">R000000123</span>;
//	                         422 for an empty cart, a bad token or an invalid email
//	POST /users              JSON {"email","password"}: bcrypt, 201 {"id":1}; 409 taken; 400 bad JSON; 422 invalid
//	POST /session            JSON {"email","password"}: bcrypt compare, 200 {"token":"..."}; 401 otherwise
//	GET  /api/me             Authorization: Bearer TOKEN; 200 {"id":1,"email":"..."}; 401 otherwise
//
// Every response served by a worker carries a Server-Timing header with the
// time it queued for a worker and the time it held one ("queue;dur=0.1,
// app;dur=12.3", in milliseconds).
//
// # Use
//
// New opens a Shop from Options, Handler serves it (with httptest or any
// http.Server) and Close releases it; Serve does all three on an address
// until its context is done.
//
// # Who owns what
//
// A Shop owns its database handles, its data directory when it created a
// temporary one, and the worker slots. The caller owns the listener (or uses
// Serve) and must call Close when done.
package shop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// Defaults used for zero Options fields. They are what `loadlab demo` runs:
// with DefaultDBLatency and DefaultCPUWork on two cores, throughput of the
// guest-checkout journey rises with workers up to about 4 and then flattens.
const (
	DefaultWorkers   = 5 // Puma's default thread count
	DefaultDBLatency = 5 * time.Millisecond
	DefaultCPUWork   = 15 * time.Millisecond
	DefaultProducts  = 20
)

// Options configures a Shop. Zero fields take the defaults above; a negative
// DBLatency or CPUWork turns that simulation off (tests use this).
type Options struct {
	// Workers bounds the requests served at once, like Puma's threads.
	// Requests beyond it wait in arrival order, like an app server's backlog.
	Workers int
	// DBLatency is the simulated database round trip added to every SQL
	// statement. It is a sleep inside the worker slot, so it holds the worker
	// like a real database call.
	DBLatency time.Duration
	// CPUWork is the CPU an average guest-checkout request spends in the app
	// on top of its real rendering and SQL (pages weigh more than redirects
	// and JSON). New converts it to a fixed amount of work, timed on this
	// machine as the fastest of several trials.
	CPUWork time.Duration
	// BcryptCost is the cost of password hashing at sign-up (and so of the
	// compare at login). Zero means bcrypt.DefaultCost; tests use
	// bcrypt.MinCost.
	BcryptCost int
	// DataDir holds the SQLite file (shop.db). Empty means a new temporary
	// directory that Close removes; a given directory is kept, and its data
	// is reused by the next New.
	DataDir string
	// Products is the number of seeded products.
	Products int
	// Logger receives one Info record per request served by a worker and an
	// Error record for every 500, with its reason. Nil discards them.
	Logger *slog.Logger
}

// withDefaults returns opts with zero fields replaced by their defaults and
// negative durations by zero, or an error for values that cannot work.
func (opts Options) withDefaults() (Options, error) {
	if opts.Workers == 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.Workers < 0 {
		return opts, fmt.Errorf("shop: Workers must be positive, got %d", opts.Workers)
	}
	opts.DBLatency = durationOrDefault(opts.DBLatency, DefaultDBLatency)
	opts.CPUWork = durationOrDefault(opts.CPUWork, DefaultCPUWork)
	if opts.BcryptCost == 0 {
		opts.BcryptCost = bcrypt.DefaultCost
	}
	if opts.BcryptCost < bcrypt.MinCost || opts.BcryptCost > bcrypt.MaxCost {
		return opts, fmt.Errorf("shop: BcryptCost must be in %d..%d, got %d", bcrypt.MinCost, bcrypt.MaxCost, opts.BcryptCost)
	}
	if opts.Products == 0 {
		opts.Products = DefaultProducts
	}
	if opts.Products < 0 {
		return opts, fmt.Errorf("shop: Products must be positive, got %d", opts.Products)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return opts, nil
}

func durationOrDefault(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// maxReadConnections caps the read pool; more workers than this wait for a
// connection, as threads do for a Rails pool smaller than their count.
const maxReadConnections = 64

// Shop is the demo web shop. Its Handler is safe for concurrent use.
type Shop struct {
	opts    Options // defaults applied
	dir     string
	tempDir bool // dir was created by New and is removed by Close
	store   *store
	pages   *pages
	work    cpuWork
	slots   chan struct{} // one token per busy worker
	busy    atomic.Int64  // requests holding a worker now
	peak    atomic.Int64  // most requests that ever held a worker at once
	handler http.Handler

	dummyOnce sync.Once // makes dummy, the hash logIn compares for unknown emails
	dummy     []byte

	closeOnce sync.Once
	closeErr  error
}

// New opens (or creates) the shop's database, seeds its products and returns
// a Shop ready to serve.
func New(opts Options) (*Shop, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Shop{opts: opts, dir: opts.DataDir, slots: make(chan struct{}, opts.Workers)}
	if s.dir == "" {
		s.dir, err = os.MkdirTemp("", "loadlab-shop-")
		if err != nil {
			return nil, fmt.Errorf("shop: create data directory: %w", err)
		}
		s.tempDir = true
	} else if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, fmt.Errorf("shop: create data directory: %w", err)
	}
	// One read connection per worker, like a Rails pool sized to its
	// threads, within reason.
	readers := min(opts.Workers, maxReadConnections)
	s.store, err = openStore(filepath.Join(s.dir, "shop.db"), readers, opts.DBLatency)
	if err == nil {
		err = s.store.seed(context.Background(), opts.Products)
	}
	if err == nil {
		s.pages, err = parsePages()
	}
	if err != nil {
		return nil, errors.Join(err, s.Close())
	}
	s.work = newCPUWork(opts.CPUWork)
	s.handler = s.routes()
	return s, nil
}

// Handler returns the shop's HTTP handler.
func (s *Shop) Handler() http.Handler { return s.handler }

// Close closes the database and removes the data directory if New created it.
// It is safe to call more than once.
func (s *Shop) Close() error {
	s.closeOnce.Do(func() {
		if s.store != nil {
			s.closeErr = s.store.close()
		}
		if s.tempDir {
			if err := os.RemoveAll(s.dir); err != nil {
				s.closeErr = errors.Join(s.closeErr, fmt.Errorf("shop: remove data directory: %w", err))
			}
		}
	})
	return s.closeErr
}

// shutdownTimeout bounds how long Serve waits for requests in flight.
const shutdownTimeout = 10 * time.Second

// Serve runs a Shop on addr (":0" picks a free port) until ctx is done, then
// shuts down gracefully: it stops accepting, lets requests in flight finish
// (up to 10 s), and closes the shop. ready, if not nil, is called with the
// listening address once connections are accepted. A shutdown caused by ctx
// returns nil.
func Serve(ctx context.Context, addr string, opts Options, ready func(addr string)) (err error) {
	s, err := New(opts)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()

	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("shop: listen on %s: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.opts.Logger.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if ready != nil {
		ready(ln.Addr().String())
	}

	select {
	case err := <-served:
		return fmt.Errorf("shop: serve on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shop: shut down: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shop: serve on %s: %w", ln.Addr(), err)
	}
	return nil
}
