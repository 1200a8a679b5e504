package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	goio "io"
	"math"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/loadlab/loadlab/internal/dashboard"
	"github.com/loadlab/loadlab/internal/engine"
	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/history"
	"github.com/loadlab/loadlab/internal/httpx"
	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/runner"
	"github.com/loadlab/loadlab/internal/schedule"
	"github.com/loadlab/loadlab/internal/secret"
	"github.com/loadlab/loadlab/internal/store"
	"github.com/loadlab/loadlab/internal/threshold"
)

// quickFlags are the flags of `loadlab run --url`.
type quickFlags struct {
	url         urlFlag
	connections int
	duration    time.Duration
	requests    int64
	rate        rateFlag
	method      methodFlag
	headers     headerFlag
	body        string
	bodyFile    string
	timeout     time.Duration
	noKeepAlive bool
	insecure    bool
	compressed  bool
	json        bool
	out         string
	set         []string
	noServer    bool
	fresh       bool
	env         []string
	maxBody     int64
	maxHeader   int64
	// maxRequestBody bounds --body and --body-file, as http.max_request_body
	// bounds a plan's bodies.
	maxRequestBody int64
	workers        int
	grace          time.Duration
	history        string
	noHistory      bool
	junit          string
	thresholds     []string // --threshold
	repeat         int      // --repeat: runs into DIR/runs/NNN
	summary        summaryFlag
	// quiet leaves the summary out and collect hears the result: a run of
	// --repeat, whose set is summed up once.
	quiet   bool
	collect func(*result.Result)
	tls     tlsFlags
	// HTTP/2 (--http2): streams is each connection's concurrent streams.
	http2      bool
	streams    int
	streamsSet bool
	// Live metrics: --metrics-addr, --metrics-linger, --push.
	metricsAddr   string
	metricsLinger time.Duration
	outputs       []string
	// Execution segments: --segment K/N and --start-at.
	segment string
	startAt string
	// --dashboard [ADDR], --dashboard-linger, --open.
	dashboard       string
	dashboardLinger time.Duration
	open            bool
}

func newRunCommand(io *stdio) *cobra.Command {
	var f quickFlags
	var refused refusals
	c := &cobra.Command{
		Use:   "run [PLAN.yaml | - | URL] [flags]",
		Short: "Run a plan, or send load to a URL, and measure it",
		Long: `Run what a plan file describes (scripted journeys, a workload, thresholds),
or send load to one URL (quick mode: the URL as the argument, or --url) and
report throughput, errors and latency. A plan named - is read from stdin.

A quick run fails (exit 3) when 1% or more of its requests got an error
status or no response, unless --threshold gives its own criteria.

Closed load (the default): -c connections each send a request as soon as the
previous response arrived, for -d or until -n requests in all.
Open load (--rate): requests are due on a fixed schedule whatever the server
does; -c caps the connections, and a request that finds them all busy waits
and is counted late. Latency always counts from when a request was due, so a
slow server cannot hide its queue (coordinated omission).`,
		Example: `  loadlab run http://127.0.0.1:8080/ -c 50 -d 30s
  loadlab run http://127.0.0.1:8080/ --threshold 'p95(latency) < 100ms' --threshold 'error_rate < 0.1%'
  loadlab run --url http://127.0.0.1:8080/ -n 100000
  loadlab run --url http://127.0.0.1:8080/ --rate 2000/s -c 100 -d 1m --out results/
  loadlab run --url http://127.0.0.1:8080/api -X POST -H 'Content-Type: application/json' --body '{"a":1}'
  loadlab run --url https://127.0.0.1:8443/ --http2 -c 10 --streams 10 -d 30s
  loadlab run checkout.yaml --set load.closed.vus=10 -e BASE=http://127.0.0.1:3000 --out results/`,
		Args: dashboardArgs(cobra.MaximumNArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			if _, err := httpx.EngineFromEnv(); err != nil {
				return usageError(fmt.Errorf("run: %w", err))
			}
			if err := checkOutDir("run", f.out); err != nil {
				return err
			}
			if len(args) == 1 && looksLikeURL(args[0]) {
				// loadlab run http://127.0.0.1:8080/ -c 5: a URL where the
				// plan would go is the URL of quick mode.
				if f.url.url != nil || refused.refused("url") {
					return usageError(errors.New("run: give the URL once: as the argument or as --url"))
				}
				if err := f.url.Set(args[0]); err != nil {
					return usageError(fmt.Errorf("run: %w", err))
				}
				args = nil
			}
			if len(args) == 1 {
				if f.url.url != nil || refused.refused("url") {
					return usageError(errors.New("run: give a plan file or --url, not both"))
				}
				for _, name := range quickOnly {
					if c.Flags().Changed(name) {
						return usageError(fmt.Errorf("run: --%s is for quick mode (--url); for a plan, %s", name, planEquivalent[name]))
					}
				}
				if err := refused.err(); err != nil {
					return usageError(fmt.Errorf("run: %w", err))
				}
				return repeatOr(c.Context(), io, &f, func(g *quickFlags) error { return runPlan(c.Context(), io, args[0], g) })
			}
			if len(f.set) > 0 || len(f.env) > 0 {
				return usageError(errors.New("run: --set and -e change a plan file; give one"))
			}
			if f.noServer {
				return usageError(errors.New("run: --no-server drops a plan's server section; quick mode starts no server"))
			}
			if f.fresh {
				return usageError(errors.New("run: --fresh starts an experiment (a plan with params) over; quick mode keeps nothing to resume"))
			}
			if f.segment != "" || f.startAt != "" {
				return usageError(errors.New("run: --segment and --start-at run part of a plan file; give one"))
			}
			if err := refused.err(); err != nil {
				return usageError(fmt.Errorf("run: %w", err))
			}
			f.streamsSet = c.Flags().Changed("streams")
			connectionsSet := c.Flags().Changed("connections")
			return repeatOr(c.Context(), io, &f, func(g *quickFlags) error { return runQuick(c.Context(), io, g, connectionsSet) })
		},
	}
	fl := c.Flags()
	// The typed flags (flags.go) check their values as they are parsed;
	// zero is how -d and -n say "not given", so given, it is refused. The
	// refusals wait for RunE, which says first what the whole command line
	// gets wrong (a quick-mode flag with a plan).
	f.connections, f.timeout, f.method.method = 50, 30*time.Second, "GET"
	fl.Var(refused.hold("url", &f.url), "url", "the URL to load (http or https)")
	fl.VarP(refused.hold("connections", &countFlag[int]{value: &f.connections, shown: "-c"}), "connections", "c", "connections (closed load), or the most at once (open load)")
	fl.VarP(refused.hold("duration", &durationFlag{value: &f.duration, shown: "-d"}), "duration", "d", "how long to send load (default 10s unless -n is given)")
	fl.VarP(refused.hold("requests", &countFlag[int64]{value: &f.requests, shown: "-n"}), "requests", "n", "total requests to send")
	fl.Var(refused.hold("rate", &f.rate), "rate", "open load: requests per period, such as 2000/s or 7000/10m")
	fl.VarP(refused.hold("method", &f.method), "method", "X", "request method")
	fl.VarP(refused.hold("header", &f.headers), "header", "H", "request header 'Name: value' (repeatable)")
	fl.StringVar(&f.body, "body", "", "request body")
	fl.StringVar(&f.bodyFile, "body-file", "", "read the request body from a file (- for stdin)")
	fl.Var(refused.hold("timeout", &durationFlag{value: &f.timeout, shown: "--timeout"}), "timeout", "give up on a request after this long")
	fl.BoolVar(&f.noKeepAlive, "no-keepalive", false, "open a new connection for every request")
	fl.BoolVar(&f.insecure, "insecure", false, "do not verify the server's TLS certificate")
	fl.BoolVar(&f.compressed, "compressed", false, "send Accept-Encoding: "+httpx.AcceptEncoding+" and decode the bodies, as curl --compressed (a plan sends it by default: http.compression)")
	f.streams = 1
	fl.BoolVar(&f.http2, "http2", false, "speak HTTP/2: h2 by ALPN for https, h2c with prior knowledge for http")
	fl.Var(refused.hold("streams", &countFlag[int]{value: &f.streams, shown: "--streams"}), "streams", "HTTP/2: concurrent streams on each connection, so -c × --streams requests in flight")
	fl.BoolVar(&f.json, "json", false, "print the summary as JSON (schema "+result.SchemaSummary+"; an experiment's outcome: "+experiment.SchemaExperiment+", as loadlab report DIR --json)")
	fl.StringVar(&f.out, "out", "", "write result.json, report.html, report.md with its charts, the CSVs and server.log into this directory")
	fl.BoolVar(&f.fresh, "fresh", false, "an experiment: forget the runs in the results directory and start over")
	fl.StringVar(&f.segment, "segment", "", "run execution segment K/N of the plan (K from 1 to N): every N-th VU, arrival, shared iteration and data row; loadlab merge puts the N parts together")
	fl.StringVar(&f.startAt, "start-at", "", "start the schedule at this wall-clock instant: RFC 3339 (2026-12-01T16:00:00Z) or +DURATION (+30s)")
	fl.StringArrayVar(&f.set, "set", nil, "override a plan field: key.path=value (repeatable); key=null removes it")
	fl.BoolVar(&f.noServer, "no-server", false, "ignore the plan's server section and load the target as it runs now (as --set server=null)")
	fl.StringArrayVarP(&f.env, "env", "e", nil, "set {{ env.KEY }} (and the plan variable KEY, if any): KEY=VALUE (repeatable)")
	fl.Var(refused.hold("max-body", newSizeFlag(&f.maxBody, "16MiB", "--max-body", 1, math.MaxInt64, "")), "max-body", "a larger response body is an error")
	fl.Var(refused.hold("max-request-body", newSizeFlag(&f.maxRequestBody, "16MiB", "--max-request-body", 1, 1<<30, " (1B to 1GiB)")), "max-request-body", "a larger --body or --body-file is refused before any load")
	fl.Var(refused.hold("max-header", newSizeFlag(&f.maxHeader, "64KiB", "--max-header", 256, 1<<30, " (256B to 1GiB)")), "max-header", "a larger response header block is an error")
	fl.Var(refused.hold("event-loops", &countFlag[int]{value: &f.workers, shown: "--event-loops", zeroOK: true}), "event-loops", "event loops (threads) sending load (default: the CPUs loadlab may use)")
	alias(fl, "workers", "event-loops") // until 2026-12: --workers is the server's concurrency, on target and in plans
	fl.Var(refused.hold("grace", &durationFlag{value: &f.grace, shown: "--grace", zeroOK: true}), "grace", "how long requests in flight at the end may take to finish (default: --timeout)")
	fl.StringVar(&f.history, "history", "", "record the run in this history database (default $LOADLAB_HISTORY, else history.db in the user's data directory; see loadlab history)")
	fl.BoolVar(&f.noHistory, "no-history", false, "do not record the run in the history")
	f.tls.register(fl)
	fl.StringVar(&f.metricsAddr, "metrics-addr", "", "serve the live figures at /metrics in the Prometheus text format on this address (a port alone, such as :9464, is on loopback)")
	fl.DurationVar(&f.metricsLinger, "metrics-linger", 0, "after the load, keep /metrics up until it is scraped once more, for at most this long")
	fl.StringArrayVar(&f.outputs, "push", nil, "push the live figures every second: prometheus-rw=URL[,native=true] (remote-write; native histograms as well) or otlp=URL (OTLP/HTTP) (repeatable)")
	alias(fl, "output", "push") // until 2026-12: -o/--output is a file to write, on import and k8s
	fl.StringVar(&f.dashboard, "dashboard", "", "serve a live page of the run on this address (--dashboard alone: "+dashboard.DefaultAddr+"; elsewhere than loopback the page asks for a token printed here)")
	fl.Lookup("dashboard").NoOptDefVal = dashboard.DefaultAddr
	fl.DurationVar(&f.dashboardLinger, "dashboard-linger", 0, "after the load, keep the dashboard (and the report, with --out) served this long")
	fl.BoolVar(&f.open, "open", false, "open the dashboard in a browser ($BROWSER, else the system's); implies --dashboard")
	fl.StringArrayVar(&f.thresholds, "threshold", nil, "judge the run by this threshold, such as 'p95(latency) < 300ms' (repeatable; the plan's grammar); quick mode's default, 'error_rate < 1%', is then not applied; a plan's thresholds are kept")
	fl.Var(&f.summary, "summary", summaryUsage)
	fl.Var(refused.hold("repeat", &countFlag[int]{value: &f.repeat, shown: "--repeat"}), "repeat", "run N times, one after the other, into --out DIR/runs/NNN: a result set that loadlab compare reads as N runs a side")
	fl.StringVar(&f.junit, "junit", "", "write JUnit XML to this file: a test case per threshold and per step's checks (and, for an experiment, per failed run)")
	return c
}

// planEquivalent says where a plan sets what a quick-mode flag does.
var planEquivalent = map[string]string{
	"connections":      "set load.closed.vus (--set load.closed.vus=50) or an open load's max_vus",
	"duration":         "set the load's duration (--set load.closed.duration=30s, or load.open.duration)",
	"requests":         "set load.closed.iterations (per VU)",
	"rate":             "use an open load (--set load.open.rate=2000/s)",
	"method":           "write the method as a step's key (post: /path)",
	"header":           "set http.headers, or a step's headers",
	"body":             "give a step json:, form: or body:",
	"body-file":        "give a step json:, form: or body:",
	"timeout":          "set http.timeout (--set http.timeout=5s)",
	"no-keepalive":     "set http.keepalive: false",
	"insecure":         "set http.insecure: true",
	"compressed":       "plans send Accept-Encoding by default (http.compression)",
	"max-body":         "set http.max_body",
	"max-header":       "set http.max_header",
	"max-request-body": "set http.max_request_body",
	"http2":            "set http.version: 2",
	"streams":          "set http.version: 2 (a VU's requests share its connection)",
	// The TLS flags (tls.go).
	"tls-ca":            "set http.tls.ca",
	"tls-cert":          "set http.tls.client_cert",
	"tls-key":           "set http.tls.client_key",
	"tls-server-name":   "set http.tls.server_name",
	"tls-min-version":   "set http.tls.min_version",
	"no-tls-resumption": "set http.tls.resumption: false",
}

// quickOnly are the flags that only quick mode takes.
var quickOnly = []string{"connections", "duration", "requests", "rate", "method", "header", "body", "body-file", "timeout", "no-keepalive", "insecure", "compressed", "max-body", "max-header", "max-request-body", "http2", "streams",
	"tls-ca", "tls-cert", "tls-key", "tls-server-name", "tls-min-version", "no-tls-resumption"}

// quickRun is a validated quick-mode request.
type quickRun struct {
	url      *url.URL
	req      httpx.Request
	wire     []byte          // req encoded; its body shares memory with req.Body
	body     *httpx.BodyFile // the body sent from the file after wire, if streamed
	settings result.Settings
	cfg      engine.Config
	tls      *httpx.TLSSettings // the --tls-* flags; nil: none
	// thresholds are --threshold's; none: runner.DefaultQuickErrors.
	thresholds []plan.Threshold
}

// sinkLike is what k6 users write after --out: a sink, KIND=WHERE.
var sinkLike = regexp.MustCompile(`^(json|csv|influxdb|statsd|cloud|experimental-[a-z-]+|prometheus-rw|otlp|opentelemetry|dashboard|web-dashboard|timescaledb|kafka|datadog)=`)

// checkOutDir refuses an --out that looks like a k6 sink: --out is always
// a directory, and --out json=x would otherwise make one named json=x.
func checkOutDir(command, out string) error {
	if m := sinkLike.FindString(out); m != "" {
		live := "--push prometheus-rw=URL or --push otlp=URL"
		if command != "run" {
			live = "--metrics-addr (/metrics, for Prometheus to scrape)" // only run pushes
		}
		return usageError(fmt.Errorf("%s: --out %q: --out is the results directory (result.json, the report, the CSVs), not a sink as k6's --out %s...; live figures go to %s, and --json prints the summary as JSON. A directory with that name: --out ./%s", command, out, m, live, out))
	}
	return nil
}

// looksLikeURL tells a URL given where a plan file would go.
func looksLikeURL(arg string) bool {
	return strings.HasPrefix(arg, "http://") || strings.HasPrefix(arg, "https://")
}

// quickThresholds parses --threshold for quick mode, which has one step and
// watches no server.
func quickThresholds(texts []string) ([]plan.Threshold, error) {
	var out []plan.Threshold
	for _, text := range texts {
		t, err := threshold.Parse(text)
		if err != nil {
			return nil, usageError(fmt.Errorf("run: --threshold %q: %w", text, err))
		}
		if strings.HasPrefix(string(t.Metric), "server.") {
			return nil, usageError(fmt.Errorf("run: --threshold %q: %s needs a server that loadlab starts, so a plan with a server: section; quick mode watches none", text, t.Metric))
		}
		if t.Filters.Step != "" || t.Filters.Scenario != "" {
			return nil, usageError(fmt.Errorf("run: --threshold %q: quick mode has one request and no steps or scenarios to select", text))
		}
		out = append(out, plan.Threshold{Text: text, T: t})
	}
	return out, nil
}

// parseQuick turns the flags, each already valid (flags.go), into the
// request and the load, checking what no flag can check alone, before
// anything touches the network.
func parseQuick(ctx context.Context, io *stdio, f *quickFlags, connectionsSet bool) (*quickRun, error) {
	u := f.url.url
	if u == nil {
		return nil, usageError(errors.New("run: give a plan file (loadlab run plan.yaml) or --url URL"))
	}
	if err := fitsOpenFiles(f.connections, fmt.Sprintf("-c %d", f.connections)); err != nil {
		return nil, usageError(fmt.Errorf("run: %w", err))
	}
	vus := f.connections // requests in flight at most
	switch {
	case f.streamsSet && !f.http2:
		return nil, usageError(errors.New("run: --streams is for HTTP/2: add --http2"))
	case f.http2 && f.noKeepAlive:
		return nil, usageError(errors.New("run: --no-keepalive does not go with --http2: an HTTP/2 connection carries every request of its streams"))
	case f.http2:
		vus = f.connections * f.streams
	}
	method := f.method.method
	headers := slices.Clone(f.headers.headers)
	var shownHeaders []string
	for _, h := range headers {
		shownHeaders = append(shownHeaders, h.Name+": "+secret.Header(h.Name, h.Value))
	}
	// Credentials in the URL are sent as basic authentication, as curl
	// does, unless -H gives an Authorization of its own.
	if u.User != nil && !slices.ContainsFunc(headers, func(h httpx.Header) bool { return strings.EqualFold(h.Name, "Authorization") }) {
		pass, _ := u.User.Password()
		value := "Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pass))
		headers = append(headers, httpx.Header{Name: "Authorization", Value: value})
		shownHeaders = append(shownHeaders, "Authorization: "+secret.Header("Authorization", value))
	}
	var body []byte
	var bodyBuf []byte // body, after bodyReserve bytes kept free for the head
	var bodyStream *httpx.BodyFile
	var err error
	switch {
	case f.body != "" && f.bodyFile != "":
		return nil, usageError(errors.New("run: give --body or --body-file, not both"))
	case f.body != "":
		if f.maxRequestBody == 0 { // quickFlags made without its flags
			f.maxRequestBody = 16 << 20
		}
		if int64(len(f.body)) > f.maxRequestBody {
			return nil, usageError(fmt.Errorf("run: --body is %s, over --max-request-body %s", sizeText(int64(len(f.body))), sizeText(f.maxRequestBody)))
		}
		body = []byte(f.body)
	case f.bodyFile != "":
		if f.maxRequestBody == 0 {
			f.maxRequestBody = 16 << 20
		}
		if bodyStream, err = streamBodyFile(f.bodyFile, f.maxRequestBody, f.http2); err != nil {
			return nil, usageError(fmt.Errorf("run: --body-file %s: %w", f.bodyFile, err))
		}
		if bodyStream != nil {
			break
		}
		if bodyBuf, err = readBodyFile(ctx, f.bodyFile, io.in, f.maxRequestBody); err != nil {
			return nil, usageError(fmt.Errorf("run: --body-file %s: %w", f.bodyFile, err))
		}
		body = bodyBuf[bodyReserve:]
	}

	target := u.RequestURI()
	req := httpx.Request{Method: method, Target: target, Host: u.Host, Header: headers, Body: body, BodyFile: bodyStream, Close: f.noKeepAlive}
	if f.compressed {
		req.AcceptEncoding = httpx.AcceptEncoding
	}
	wire := req.AppendHead(nil)
	if bodyBuf != nil && len(wire) <= bodyReserve {
		// The head goes just before the body it was read with: the body is
		// in memory once, however large.
		start := bodyReserve - len(wire)
		copy(bodyBuf[start:], wire)
		wire = bodyBuf[start:]
	} else {
		wire = append(wire, body...)
	}
	settings := result.Settings{
		Mode:        "closed",
		URL:         f.url.shown,
		Method:      method,
		Headers:     shownHeaders,
		BodyBytes:   bodyBytes(body, bodyStream),
		Connections: f.connections,
		Duration:    result.Duration(f.duration),
		Requests:    f.requests,
		Timeout:     result.Duration(f.timeout),
		KeepAlive:   !f.noKeepAlive,
		Insecure:    f.insecure,
		Compressed:  f.compressed,
		MaxBody:     f.maxBody,
		MaxHeader:   int(f.maxHeader),
	}
	if f.http2 {
		settings.Streams = f.streams
	}
	wl := engine.Workload{Kind: engine.Closed, VUs: vus, SharedIterations: f.requests, Duration: f.duration, Grace: f.grace}
	if f.rate.rate != nil {
		r := *f.rate.rate
		d := f.duration
		if f.requests > 0 {
			if f.duration > 0 {
				return nil, usageError(errors.New("run: with --rate give -d or -n, not both"))
			}
			d = time.Duration(float64(f.requests) / r.PerSecond() * float64(time.Second))
		}
		if d == 0 {
			d = 10 * time.Second
		}
		arrivals, err := schedule.Constant(r, d)
		if err != nil {
			return nil, usageError(fmt.Errorf("run: --rate: %w", err))
		}
		if !connectionsSet {
			// Enough connections for the rate at up to a second of latency, within reason.
			f.connections = int(min(max(r.PerSecond(), 50), 10000))
			settings.Connections = f.connections
			if f.http2 {
				// As many requests in flight, on fewer connections.
				f.connections = max(f.connections/f.streams, 1)
				settings.Connections = f.connections
			}
			vus = f.connections
			if f.http2 {
				vus *= f.streams
			}
		}
		wl = engine.Workload{Kind: engine.Open, Arrivals: arrivals, MaxVUs: vus, Queue: true, Grace: f.grace}
		settings.Mode, settings.Rate, settings.Duration, settings.Requests = "open", r.PerSecond(), result.Duration(d), arrivals.Total()
	} else if f.duration == 0 && f.requests == 0 {
		wl.Duration = 10 * time.Second
		settings.Duration = result.Duration(wl.Duration)
	}
	tlsSettings, err := f.tls.settings()
	if err != nil {
		return nil, usageError(fmt.Errorf("run: %w", err))
	}
	thresholds, err := quickThresholds(f.thresholds)
	if err != nil {
		return nil, err
	}
	workers := f.workers
	if f.http2 && workers == 0 {
		workers = h2Workers(f.connections, runtime.GOMAXPROCS(0))
	}
	return &quickRun{
		thresholds: thresholds,
		tls:        tlsSettings,
		url:        u,
		req:        req,
		wire:       wire,
		body:       bodyStream,
		settings:   settings,
		cfg: engine.Config{
			Workload: wl,
			HTTP:     httpx.Options{Timeout: f.timeout, MaxBodyBytes: f.maxBody, MaxHeaderBytes: int(f.maxHeader)},
			Workers:  workers,
		},
	}, nil
}

// h2Workers is the event loops for -c HTTP/2 connections: the most, up to
// procs, that divide them evenly. Each loop fills connections of its own
// with --streams VUs each, and VUs are dealt to loops in turn, so an uneven
// split would open more connections than -c, some with fewer streams.
func h2Workers(connections, procs int) int {
	w := max(min(procs, connections), 1)
	for connections%w != 0 {
		w--
	}
	return w
}

func runQuick(ctx context.Context, io *stdio, f *quickFlags, connectionsSet bool) error {
	q, err := parseQuick(ctx, io, f, connectionsSet)
	if err != nil {
		return err
	}
	if f.out != "" {
		if err := store.CheckWritable(f.out); err != nil {
			return usageError(fmt.Errorf("run: --out: %w", err))
		}
	}
	live, err := startLive(ctx, io, f)
	if err != nil {
		return err
	}
	prog := newProgress(io, q.settings)
	live.runStarted()
	res, err := runner.Quick(ctx, runner.QuickRun{
		URL: q.url, Insecure: f.insecure, Request: q.wire, Body: q.body, Method: q.settings.Method, Close: f.noKeepAlive, Decode: f.compressed,
		TLS: q.tls, Streams: q.settings.Streams, Settings: q.settings, Engine: q.cfg, Thresholds: q.thresholds,
	}, runner.Options{Version: version(), OnProgress: live.progress(prog.update), OnInterval: live.onInterval()})
	prog.done()
	live.result(res, err)
	if err != nil {
		live.close()
		return failedError(fmt.Errorf("run: %w", err))
	}
	err = finish(io, f, res, runner.ThresholdsFailed(res))
	live.close()
	name, hash := quickIdentity(res)
	record(io, f, runRecord(history.KindRun, name, hash, f.out, res, false))
	return ciRun(io, f, err, res)
}

func parsePort(p string) (int, error) {
	n := 0
	for _, c := range p {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("bad port")
		}
		n = n*10 + int(c-'0')
		if n > 65535 {
			return 0, fmt.Errorf("bad port")
		}
	}
	return n, nil
}

// bodyReserve is the room readBody keeps before a body for the request's
// head (request line and headers); a longer head is copied with the body.
const bodyReserve = 16 << 10

// streamAbove is the largest --body-file read into memory: a larger one,
// under a --max-request-body raised above it, is sent from the file chunk
// by chunk as each connection takes it (httpx.BodyFile), so that memory
// does not grow with the body.
const streamAbove = 16 << 20

// streamBodyFile opens --body-file to stream it when it is a regular file
// over streamAbove and within limit; nil, nil for every other case, which
// readBodyFile reads (and refuses, for a file over limit). HTTP/2 frames
// bodies held in memory: there the file is read whole, as before.
func streamBodyFile(path string, limit int64, http2 bool) (*httpx.BodyFile, error) {
	if path == "-" || http2 {
		return nil, nil
	}
	info, err := os.Stat(path)
	if err != nil || !info.Mode().IsRegular() || info.Size() <= streamAbove || info.Size() > limit {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	// Open for the process's life: the run reads it per request.
	return &httpx.BodyFile{R: f, Size: info.Size()}, nil
}

func bodyBytes(body []byte, stream *httpx.BodyFile) int {
	if stream != nil {
		return int(stream.Size)
	}
	return len(body)
}

// readBodyFile reads --body-file: a regular file, or - for stdin, of at
// most limit bytes. A FIFO, a device or a directory is refused by its
// mode, before it is opened (opening a FIFO with no writer blocks); stdin
// is read through LimitReader, so that /dev/zero or a stream that never
// ends stops at the limit. The read stops when ctx is done (SIGINT,
// SIGTERM): a stdin that never sends anything does not hold the process.
func readBodyFile(ctx context.Context, path string, stdin goio.Reader, limit int64) ([]byte, error) {
	var r goio.Reader
	if path == "-" {
		if f, ok := stdin.(*os.File); ok {
			if info, err := f.Stat(); err == nil && info.Mode().IsRegular() && info.Size() > limit {
				return nil, fmt.Errorf("stdin is %s, over --max-request-body %s", sizeText(info.Size()), sizeText(limit))
			}
		}
		r = stdin
	} else {
		info, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
		if !info.Mode().IsRegular() {
			return nil, fmt.Errorf("not a regular file (%s): give a file, or - to read stdin", fileKind(info.Mode()))
		}
		if info.Size() > limit {
			return nil, fmt.Errorf("the file is %s, over --max-request-body %s (raise it up to 1GiB)", sizeText(info.Size()), sizeText(limit))
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	type read struct {
		buf []byte
		err error
	}
	done := make(chan read, 1)
	go func() {
		buf, err := readBody(r, limit)
		done <- read{buf, err}
	}()
	select {
	case got := <-done:
		return got.buf, got.err
	case <-ctx.Done():
		// The reading goroutine stays blocked in its read; the process is
		// about to exit with this error.
		return nil, errors.New("stopped by a signal while reading the body: nothing was sent")
	}
}

// fileKind names what a file that is not regular is.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return m.Type().String()
}

// sizeText writes a byte count as the size flags take it.
func sizeText(n int64) string {
	switch {
	case n >= 1<<30:
		return strconv.FormatFloat(float64(n)/(1<<30), 'f', 1, 64) + "GiB"
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + "MiB"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + "KiB"
	}
	return strconv.FormatInt(n, 10) + "B"
}

// readBody reads a request body (--body-file) once, into a buffer that
// starts with bodyReserve free bytes: the body is then sent from where it
// was read. A regular file (or stdin redirected from one) is read into a
// buffer of its size; a pipe into chunks, copied once into a buffer of the
// size they add up to (2.5 times the body allocated in all, where growing
// one buffer allocated six times; the chunks are garbage once copied).
// More than limit bytes is an error, found after reading limit+1 at most.
func readBody(r goio.Reader, limit int64) ([]byte, error) {
	tooLarge := fmt.Errorf("over --max-request-body %s", sizeText(limit))
	if f, ok := r.(*os.File); ok {
		if info, err := f.Stat(); err == nil && info.Mode().IsRegular() && info.Size() <= limit {
			buf := make([]byte, bodyReserve, bodyReserve+int(info.Size())+1) // one more to see EOF
			for {
				if len(buf) == cap(buf) {
					if int64(len(buf)-bodyReserve) > limit {
						return nil, tooLarge // the file grew
					}
					buf = append(buf, 0)[:len(buf)]
				}
				n, err := f.Read(buf[len(buf):cap(buf)])
				buf = buf[:len(buf)+n]
				if err == goio.EOF {
					if int64(len(buf)-bodyReserve) > limit {
						return nil, tooLarge
					}
					return buf, nil
				}
				if err != nil {
					return nil, err
				}
			}
		}
	}
	r = goio.LimitReader(r, limit+1)
	var chunks [][]byte
	total, next := 0, 64<<10
	for {
		chunk := make([]byte, next)
		n, err := goio.ReadFull(r, chunk)
		chunks, total = append(chunks, chunk[:n]), total+n
		if int64(total) > limit {
			return nil, tooLarge
		}
		if err == goio.EOF || err == goio.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return nil, err
		}
		next = min(next*2, 8<<20)
	}
	buf := make([]byte, bodyReserve, bodyReserve+total)
	for _, c := range chunks {
		buf = append(buf, c...)
	}
	return buf, nil
}
