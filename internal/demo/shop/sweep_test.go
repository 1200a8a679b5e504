package shop

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// Flags to explore other settings with BenchmarkGuestCheckout.
var (
	benchDBLatency = flag.Duration("shop.dblatency", DefaultDBLatency, "BenchmarkGuestCheckout: simulated database round trip")
	benchCPUWork   = flag.Duration("shop.cpuwork", DefaultCPUWork, "BenchmarkGuestCheckout: CPU work per request")
	benchGuests    = flag.Int("shop.guests", 50, "BenchmarkGuestCheckout: concurrent guests")
	benchWorkers   = flag.String("shop.workers", "1,2,4,8", "BenchmarkGuestCheckout: comma-separated worker counts to sweep")
)

// BenchmarkGuestCheckout sweeps the shop's workers the way `loadlab demo`
// does: 50 concurrent guests, each with its own cookie jar, run the
// five-request guest-checkout journey over loopback against a shop with the
// demo's defaults (DBLatency, CPUWork; -shop.* flags change them) and bcrypt
// at its minimum cost.
// b.N is the number of journeys; bound the run with -benchtime=Nx, e.g.
//
//	go test -run '^$' -bench GuestCheckout -benchtime 150x ./internal/demo/shop/
//
// It reports requests/s, the median and 95th percentile request latency, the
// mean time a request queued for a worker and held one (from Server-Timing),
// the CPU cores the whole process (shop and clients) used, and the cores
// other processes used meanwhile (on Linux).
func BenchmarkGuestCheckout(b *testing.B) {
	var sweep []int
	for _, field := range strings.Split(*benchWorkers, ",") {
		workers, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil || workers < 1 {
			b.Fatalf("-shop.workers: %q is not a positive number", field)
		}
		sweep = append(sweep, workers)
	}
	for _, workers := range sweep {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			opts := Options{Workers: workers, DBLatency: *benchDBLatency, CPUWork: *benchCPUWork, BcryptCost: bcrypt.MinCost}
			benchmarkJourneys(b, opts, *benchGuests)
		})
	}
}

func benchmarkJourneys(b *testing.B, opts Options, guests int) {
	_, srv := startShop(b, opts)
	transport := srv.Client().Transport.(*http.Transport)
	transport.MaxIdleConnsPerHost = guests
	ctx, cancel := context.WithTimeout(b.Context(), 5*time.Minute)
	defer cancel()

	var (
		next      atomic.Int64 // journeys handed out
		mu        sync.Mutex
		latencies = make([]time.Duration, 0, b.N*journeyRequests)
		failures  []error
		wg        sync.WaitGroup
	)
	var queued, inApp time.Duration // sums, from the Server-Timing headers
	observe := func(d time.Duration, h http.Header) {
		queue, app := serverTiming(h.Get("Server-Timing"))
		mu.Lock()
		latencies = append(latencies, d)
		queued += queue
		inApp += app
		mu.Unlock()
	}
	b.ResetTimer()
	cpuStart, machineStart, start := processCPU(), machineCPU(), time.Now()
	for g := range min(guests, b.N) {
		wg.Go(func() {
			for j := next.Add(1); j <= int64(b.N); j = next.Add(1) {
				guest := newGuest(srv.URL, transport)
				guest.observe = observe
				product := 1 + j%DefaultProducts
				if _, err := guest.checkout(ctx, product, fmt.Sprintf("guest-%d-%d@example.com", g, j)); err != nil {
					mu.Lock()
					failures = append(failures, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	elapsed, cpu, machine := time.Since(start), processCPU()-cpuStart, machineCPU()-machineStart
	b.StopTimer()
	if len(failures) > 0 {
		b.Fatalf("%d of %d journeys failed, first: %v", len(failures), b.N, failures[0])
	}
	slices.Sort(latencies)
	quantile := func(q float64) float64 {
		return milliseconds(latencies[int(q*float64(len(latencies)-1))])
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(len(latencies))/elapsed.Seconds(), "req/s")
	b.ReportMetric(quantile(0.50), "p50-ms")
	b.ReportMetric(quantile(0.95), "p95-ms")
	b.ReportMetric(milliseconds(queued)/float64(len(latencies)), "queue-ms")
	b.ReportMetric(milliseconds(inApp)/float64(len(latencies)), "app-ms")
	b.ReportMetric(cpu.Seconds()/elapsed.Seconds(), "cpu-cores")
	// CPU used by other processes meanwhile: high values mean the figures
	// above were measured on a contended machine.
	b.ReportMetric(max(0, (machine-cpu).Seconds()/elapsed.Seconds()), "others-cores")
}

// serverTiming reads the shop's "queue;dur=X, app;dur=Y" header.
func serverTiming(header string) (queue, app time.Duration) {
	for _, metric := range strings.Split(header, ",") {
		name, dur, ok := strings.Cut(strings.TrimSpace(metric), ";dur=")
		if !ok {
			continue
		}
		ms, err := strconv.ParseFloat(dur, 64)
		if err != nil {
			continue
		}
		d := time.Duration(ms * float64(time.Millisecond))
		switch name {
		case "queue":
			queue = d
		case "app":
			app = d
		}
	}
	return queue, app
}
