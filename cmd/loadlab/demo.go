package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/loadlab/loadlab/internal/demo"
	"github.com/loadlab/loadlab/internal/demo/shop"
	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/httpx"
	"github.com/loadlab/loadlab/internal/plan"
)

func newDemoCommand(io *stdio) *cobra.Command {
	var out string
	var workers int
	var summary summaryFlag
	var asJSON bool
	c := &cobra.Command{
		Use:   "demo",
		Short: "Run the built-in demo: sweep the demo shop's workers",
		Long: `Run loadlab's demonstration, the first thing to try: it starts the built-in
shop (a small web store with sessions, CSRF-protected forms and SQLite) as
the server under test, and sweeps its worker count (1, 2, 4, 6 and 8) with
fifty guests each completing one checkout, five times per setting, enough to
tell a difference from noise. It prints the verdict (which worker count to
pick, and the evidence) and writes an HTML report. It takes about a minute
on two cores.

The plan it runs is written beside the results (demo.yaml); run it yourself
with loadlab run.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if _, err := httpx.EngineFromEnv(); err != nil {
				return usageError(fmt.Errorf("demo: %w", err))
			}
			if workers < 0 {
				return usageError(fmt.Errorf("demo: --event-loops must not be negative, got %d", workers))
			}
			bin, err := os.Executable()
			if err != nil {
				return failedError(fmt.Errorf("demo: cannot find loadlab's own binary: %w", err))
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return usageError(fmt.Errorf("demo: --out: %w", err))
			}
			addr, err := freeAddr()
			if err != nil {
				return failedError(fmt.Errorf("demo: %w", err))
			}
			path := filepath.Join(out, "demo.yaml")
			if err := os.WriteFile(path, demo.Written(bin, addr), 0o644); err != nil {
				return usageError(fmt.Errorf("demo: --out: %w", err))
			}
			f := &quickFlags{out: filepath.Join(out, "results"), fresh: true, workers: workers, summary: summary, json: asJSON}
			popts := plan.Options{Env: demo.Env(bin, addr), LookupEnv: os.LookupEnv}
			p, err := plan.Load(path, popts)
			if err != nil {
				return failedError(fmt.Errorf("demo: the built-in plan does not load: %w", err))
			}
			fmt.Fprintf(io.err, "loadlab demo: the shop's workers 1, 2, 4, 6 and 8, 50 guest checkouts each, 5 repeats (about a minute)\n")
			return runExperiment(c.Context(), io, func(o plan.Options) (*plan.Plan, error) { return plan.Load(path, o) }, p, popts, f)
		},
	}
	c.Flags().StringVar(&out, "out", "loadlab-demo", "directory for the plan and its results")
	c.Flags().Var(&summary, "summary", summaryUsage)
	c.Flags().BoolVar(&asJSON, "json", false, "print the experiment's outcome as JSON (schema "+experiment.SchemaExperiment+", as loadlab report DIR --json)")
	c.Flags().IntVar(&workers, "event-loops", 0, "event loops (threads) sending load (default: the CPUs loadlab may use)")
	alias(c.Flags(), "workers", "event-loops")
	c.AddCommand(newDemoServeCommand(io))
	return c
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func newDemoServeCommand(io *stdio) *cobra.Command {
	var (
		addr string
		o    shop.Options
	)
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run the demo shop",
		Long: `Run the built-in demo shop: a home page listing products with forms that
carry a CSRF token and a session cookie, product pages, a cart, guest
checkout, sign-up and login (bcrypt) returning a token, and a JSON API, over
SQLite in a temporary directory. Its knobs: --workers bounds the requests
served at once (like Puma's threads), --db-latency is added to every query,
--cpu-work is the CPU each request spends, --bcrypt-cost is the cost of
password hashing.`,
		Example: `  loadlab demo serve --addr 127.0.0.1:3000 --workers 5`,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			err := shop.Serve(c.Context(), addr, o, func(a string) {
				fmt.Fprintf(io.out, "loadlab demo shop listening on http://%s/ (%d workers)\n", a, o.Workers)
			})
			if err != nil {
				return failedError(err)
			}
			return nil
		},
	}
	fl := c.Flags()
	fl.StringVar(&addr, "addr", "127.0.0.1:3000", "listen address")
	fl.IntVar(&o.Workers, "workers", shop.DefaultWorkers, "requests served at once")
	fl.DurationVar(&o.DBLatency, "db-latency", shop.DefaultDBLatency, "added to every database query")
	fl.DurationVar(&o.CPUWork, "cpu-work", shop.DefaultCPUWork, "CPU spent by an average request")
	fl.IntVar(&o.BcryptCost, "bcrypt-cost", 0, "bcrypt cost for sign-up and login (0: bcrypt's default)")
	fl.IntVar(&o.Products, "products", shop.DefaultProducts, "products in the catalogue")
	fl.StringVar(&o.DataDir, "data-dir", "", "keep the database here (default: a temporary directory)")
	return c
}
