package main

import (
	"fmt"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/loadlab/loadlab/internal/quantity"
	"github.com/loadlab/loadlab/internal/target"
)

func newTargetCommand(io *stdio) *cobra.Command {
	var (
		addr, stall, status, body, hold, workerMemory string
		o                                             target.Options
	)
	c := &cobra.Command{
		Use:   "target",
		Short: "Run a tunable test server",
		Long: `Run a test server whose behaviour you set: a delay with jitter, stalls in
which the whole server stops answering, CPU work per request, a status mix, a
body size and a bound on requests served at once.

Query parameters override the flags per request: ?delay=50ms&status=404&body=1024.
GET /health always answers at once; /ws is a WebSocket that echoes each
message back.`,
		Example: `  loadlab target --addr 127.0.0.1:8080 --delay 20ms --jitter 5ms
  loadlab target --stall 1s/5s            # stop answering for 1s every 5s
  loadlab target --cpu 2ms --workers 4    # CPU-bound, 4 requests at a time
  loadlab target --status 200:95,503:5 --body-size 2KiB
  loadlab target --hold 1MiB              # each request keeps 1 MiB: a leak
  loadlab target --workers 4 --worker-memory 16MiB   # 16 MiB per worker from the start`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if stall != "" {
				var err error
				if o.StallFor, o.StallEvery, err = parseStall(stall); err != nil {
					return usageError(fmt.Errorf("target: --stall: %w", err))
				}
			}
			if status != "" {
				mix, err := target.ParseStatusMix(status)
				if err != nil {
					return usageError(fmt.Errorf("target: --status: %w", err))
				}
				o.Status = mix
			}
			n, err := quantity.ParseBytes(body)
			if err != nil || n > 64<<20 {
				return usageError(fmt.Errorf("target: --body-size: bad size %q (up to 64MiB)", body))
			}
			o.BodyBytes = int(n)
			if hold != "" {
				h, err := quantity.ParseBytes(hold)
				if err != nil || h > 1<<30 {
					return usageError(fmt.Errorf("target: --hold: bad size %q (up to 1GiB)", hold))
				}
				o.Hold = int(h)
			}
			if workerMemory != "" {
				h, err := quantity.ParseBytes(workerMemory)
				if err != nil || h > 1<<30 {
					return usageError(fmt.Errorf("target: --worker-memory: bad size %q (up to 1GiB)", workerMemory))
				}
				o.WorkerMemory = int(h)
			}
			if err := target.Check(o); err != nil { // New would hold the workers' memory twice
				return usageError(err)
			}
			if _, err := net.ResolveTCPAddr("tcp", addr); err != nil {
				return usageError(fmt.Errorf("target: bad --addr %q: %w", addr, err))
			}
			err = target.Serve(c.Context(), addr, o, func(a net.Addr) {
				fmt.Fprintf(io.out, "loadlab target listening on http://%s/\n", a)
			})
			if err != nil {
				return failedError(err)
			}
			return nil
		},
	}
	fl := c.Flags()
	fl.StringVar(&addr, "addr", "127.0.0.1:8080", "listen address (port 0 picks a free one)")
	fl.DurationVar(&o.Delay, "delay", 0, "delay before every response")
	fl.DurationVar(&o.Jitter, "jitter", 0, "add a uniform random delay of plus or minus this much")
	fl.StringVar(&stall, "stall", "", "FOR/EVERY: the whole server stops answering for FOR every EVERY, e.g. 1s/5s")
	fl.DurationVar(&o.CPU, "cpu", 0, "CPU time to burn per request")
	fl.StringVar(&status, "status", "200", "status code, or a weighted mix such as 200:95,500:5")
	fl.StringVar(&body, "body-size", "2", "response body size, such as 100, 4KiB")
	alias(fl, "body", "body-size") // until 2026-12: --body is the request body, on run and capacity
	fl.IntVar(&o.Workers, "workers", 0, "requests served at once; others wait in line (0: no bound)")
	fl.StringVar(&workerMemory, "worker-memory", "", "memory each of --workers holds from the start, as a forking server's workers do, such as 16MiB")
	fl.StringVar(&hold, "hold", "", "memory each request allocates and keeps, a leak to test memory limits, such as 1MiB")
	return c
}

func parseStall(s string) (time.Duration, time.Duration, error) {
	var forS, everyS string
	for i := range len(s) {
		if s[i] == '/' {
			forS, everyS = s[:i], s[i+1:]
		}
	}
	f, err1 := time.ParseDuration(forS)
	e, err2 := time.ParseDuration(everyS)
	if err1 != nil || err2 != nil || f <= 0 || e <= f {
		return 0, 0, fmt.Errorf("bad stall %q: want FOR/EVERY with FOR shorter than EVERY, such as 1s/5s", s)
	}
	return f, e, nil
}
