package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	goio "io"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/loadlab/loadlab/internal/engine"
	"github.com/loadlab/loadlab/internal/experiment"
	"github.com/loadlab/loadlab/internal/httpx"
	"github.com/loadlab/loadlab/internal/quantity"
	"github.com/loadlab/loadlab/internal/result"
	"github.com/loadlab/loadlab/internal/schedule"
	"github.com/loadlab/loadlab/internal/store"
)

// quickFlags are the flags of `loadlab run --url`.
type quickFlags struct {
	url         string
	connections int
	duration    time.Duration
	requests    int64
	rate        string
	method      string
	headers     []string
	body        string
	bodyFile    string
	timeout     time.Duration
	noKeepAlive bool
	insecure    bool
	json        bool
	out         string
	set         []string
	fresh       bool
	env         []string
	maxBody     string
	maxHeader   string
	workers     int
	grace       time.Duration
}

func newRunCommand(io *stdio) *cobra.Command {
	var f quickFlags
	c := &cobra.Command{
		Use:   "run [PLAN.yaml | - | --url URL] [flags]",
		Short: "Run a plan, or send load to a URL, and measure it",
		Long: `Run what a plan file describes (scripted journeys, a workload, thresholds),
or send load to one URL (quick mode) and report throughput, errors and latency.
A plan named - is read from stdin.

Closed load (the default): -c connections each send a request as soon as the
previous response arrived, for -d or until -n requests in all.
Open load (--rate): requests are due on a fixed schedule whatever the server
does; -c caps the connections, and a request that finds them all busy waits
and is counted late. Latency always counts from when a request was due, so a
slow server cannot hide its queue (coordinated omission).`,
		Example: `  loadlab run --url http://127.0.0.1:8080/ -c 50 -d 30s
  loadlab run --url http://127.0.0.1:8080/ -n 100000
  loadlab run --url http://127.0.0.1:8080/ --rate 2000/s -c 100 -d 1m --out results/
  loadlab run --url http://127.0.0.1:8080/api -X POST -H 'Content-Type: application/json' --body '{"a":1}'
  loadlab run checkout.yaml --set load.closed.vus=10 -e BASE=http://127.0.0.1:3000 --out results/`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				if f.url != "" {
					return usageError(errors.New("run: give a plan file or --url, not both"))
				}
				for _, name := range quickOnly {
					if c.Flags().Changed(name) {
						return usageError(fmt.Errorf("run: --%s is for quick mode (--url); for a plan, %s", name, planEquivalent[name]))
					}
				}
				return runPlan(c.Context(), io, args[0], &f)
			}
			if len(f.set) > 0 || len(f.env) > 0 {
				return usageError(errors.New("run: --set and -e change a plan file; give one"))
			}
			if f.fresh {
				return usageError(errors.New("run: --fresh starts an experiment (a plan with params) over; quick mode keeps nothing to resume"))
			}
			// Zero is how the flags say "not given"; given, it is an error.
			if c.Flags().Changed("requests") && f.requests <= 0 {
				return usageError(fmt.Errorf("run: -n must be positive, got %d", f.requests))
			}
			if c.Flags().Changed("duration") && f.duration <= 0 {
				return usageError(fmt.Errorf("run: -d must be positive, got %v", f.duration))
			}
			return runQuick(c.Context(), io, &f, c.Flags().Changed("connections"))
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.url, "url", "", "the URL to load (http or https)")
	fl.IntVarP(&f.connections, "connections", "c", 50, "connections (closed load), or the most at once (open load)")
	fl.DurationVarP(&f.duration, "duration", "d", 0, "how long to send load (default 10s unless -n is given)")
	fl.Int64VarP(&f.requests, "requests", "n", 0, "total requests to send")
	fl.StringVar(&f.rate, "rate", "", "open load: requests per period, such as 2000/s or 7000/10m")
	fl.StringVarP(&f.method, "method", "X", "GET", "request method")
	fl.StringArrayVarP(&f.headers, "header", "H", nil, "request header 'Name: value' (repeatable)")
	fl.StringVar(&f.body, "body", "", "request body")
	fl.StringVar(&f.bodyFile, "body-file", "", "read the request body from a file (- for stdin)")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "give up on a request after this long")
	fl.BoolVar(&f.noKeepAlive, "no-keepalive", false, "open a new connection for every request")
	fl.BoolVar(&f.insecure, "insecure", false, "do not verify the server's TLS certificate")
	fl.BoolVar(&f.json, "json", false, "print the summary as JSON (schema loadlab.summary/v1)")
	fl.StringVar(&f.out, "out", "", "write result.json, report.html, report.md with its charts, the CSVs and server.log into this directory")
	fl.BoolVar(&f.fresh, "fresh", false, "an experiment: forget the runs in the results directory and start over")
	fl.StringArrayVar(&f.set, "set", nil, "override a plan field: key.path=value (repeatable)")
	fl.StringArrayVarP(&f.env, "env", "e", nil, "set {{ env.KEY }} (and the plan variable KEY, if any): KEY=VALUE (repeatable)")
	fl.StringVar(&f.maxBody, "max-body", "16MiB", "a larger response body is an error")
	fl.StringVar(&f.maxHeader, "max-header", "64KiB", "a larger response header block is an error")
	fl.IntVar(&f.workers, "workers", 0, "event loops (threads) sending load (default: the CPUs loadlab may use)")
	fl.DurationVar(&f.grace, "grace", 0, "how long requests in flight at the end may take to finish (default: --timeout)")
	return c
}

// planEquivalent says where a plan sets what a quick-mode flag does.
var planEquivalent = map[string]string{
	"connections":  "set load.closed.vus (--set load.closed.vus=50) or an open load's max_vus",
	"duration":     "set the load's duration (--set load.closed.duration=30s, or load.open.duration)",
	"requests":     "set load.closed.iterations (per VU)",
	"rate":         "use an open load (--set load.open.rate=2000/s)",
	"method":       "write the method as a step's key (post: /path)",
	"header":       "set http.headers, or a step's headers",
	"body":         "give a step json:, form: or body:",
	"body-file":    "give a step json:, form: or body:",
	"timeout":      "set http.timeout (--set http.timeout=5s)",
	"no-keepalive": "set http.keepalive: false",
	"insecure":     "set http.insecure: true",
	"max-body":     "set http.max_body",
	"max-header":   "set http.max_header",
}

// quickOnly are the flags that only quick mode takes.
var quickOnly = []string{"connections", "duration", "requests", "rate", "method", "header", "body", "body-file", "timeout", "no-keepalive", "insecure", "max-body", "max-header"}

// quickRun is a validated quick-mode request.
type quickRun struct {
	url      *url.URL
	req      httpx.Request
	settings result.Settings
	cfg      engine.Config
}

// parseQuick checks every flag before anything touches the network.
func parseQuick(io *stdio, f *quickFlags, connectionsSet bool) (*quickRun, error) {
	if f.url == "" {
		return nil, usageError(errors.New("run: give a plan file (loadlab run plan.yaml) or --url URL"))
	}
	if !strings.Contains(f.url, "://") {
		return nil, usageError(fmt.Errorf("run: bad --url %q: it needs a scheme, as in http://%s", f.url, f.url))
	}
	u, err := url.Parse(f.url)
	if err != nil {
		return nil, usageError(fmt.Errorf("run: bad --url: %w", err))
	}
	shown := u.Redacted() // the URL as errors and results say it: no password
	if u.User != nil {
		bare := *u
		bare.User = nil
		shown = bare.String()
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, usageError(fmt.Errorf("run: bad --url %q: the scheme must be http or https", shown))
	}
	if u.Host == "" || u.Hostname() == "" {
		return nil, usageError(fmt.Errorf("run: bad --url %q: no host", shown))
	}
	if p := u.Port(); p != "" {
		if n, err := parsePort(p); err != nil || n == 0 {
			return nil, usageError(fmt.Errorf("run: bad --url %q: bad port %q", shown, p))
		}
	}
	if f.connections <= 0 {
		return nil, usageError(fmt.Errorf("run: -c must be positive, got %d", f.connections))
	}
	if err := fitsOpenFiles(f.connections, fmt.Sprintf("-c %d", f.connections)); err != nil {
		return nil, usageError(fmt.Errorf("run: %w", err))
	}
	if f.requests < 0 {
		return nil, usageError(fmt.Errorf("run: -n must be positive, got %d", f.requests))
	}
	if f.duration < 0 {
		return nil, usageError(fmt.Errorf("run: -d must be positive, got %v", f.duration))
	}
	if f.timeout <= 0 {
		return nil, usageError(fmt.Errorf("run: --timeout must be positive, got %v", f.timeout))
	}
	if f.grace < 0 {
		return nil, usageError(fmt.Errorf("run: --grace must not be negative, got %v", f.grace))
	}
	if f.workers < 0 {
		return nil, usageError(fmt.Errorf("run: --workers must not be negative, got %d", f.workers))
	}
	method := strings.ToUpper(f.method)
	if err := httpx.CheckMethod(method); err != nil {
		return nil, usageError(fmt.Errorf("run: -X: %w", err))
	}
	maxBody, err := quantity.ParseBytes(f.maxBody)
	if err != nil || maxBody <= 0 {
		return nil, usageError(fmt.Errorf("run: --max-body: bad size %q", f.maxBody))
	}
	maxHeader, err := quantity.ParseBytes(f.maxHeader)
	if err != nil || maxHeader < 256 || maxHeader > 1<<30 {
		return nil, usageError(fmt.Errorf("run: --max-header: bad size %q (256B to 1GiB)", f.maxHeader))
	}
	var headers []httpx.Header
	var shownHeaders []string
	for _, h := range f.headers {
		name, value, ok := strings.Cut(h, ":")
		if !ok {
			return nil, usageError(fmt.Errorf("run: -H %q: want 'Name: value'", h))
		}
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if err := httpx.CheckHeader(name, value); err != nil {
			return nil, usageError(fmt.Errorf("run: -H: %w", err))
		}
		headers = append(headers, httpx.Header{Name: name, Value: value})
		shownHeaders = append(shownHeaders, name+": "+maskHeader(name, value))
	}
	// Credentials in the URL are sent as basic authentication, as curl
	// does, unless -H gives an Authorization of its own.
	if u.User != nil && !slices.ContainsFunc(headers, func(h httpx.Header) bool { return strings.EqualFold(h.Name, "Authorization") }) {
		pass, _ := u.User.Password()
		value := "Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pass))
		headers = append(headers, httpx.Header{Name: "Authorization", Value: value})
		shownHeaders = append(shownHeaders, "Authorization: "+maskHeader("Authorization", value))
	}
	var body []byte
	switch {
	case f.body != "" && f.bodyFile != "":
		return nil, usageError(errors.New("run: give --body or --body-file, not both"))
	case f.body != "":
		body = []byte(f.body)
	case f.bodyFile == "-":
		if body, err = goio.ReadAll(io.in); err != nil {
			return nil, usageError(fmt.Errorf("run: --body-file -: %w", err))
		}
	case f.bodyFile != "":
		if body, err = os.ReadFile(f.bodyFile); err != nil {
			return nil, usageError(fmt.Errorf("run: --body-file: %w", err))
		}
	}

	target := u.RequestURI()
	req := httpx.Request{Method: method, Target: target, Host: u.Host, Header: headers, Body: body, Close: f.noKeepAlive}
	settings := result.Settings{
		Mode:        "closed",
		URL:         shown,
		Method:      method,
		Headers:     shownHeaders,
		BodyBytes:   len(body),
		Connections: f.connections,
		Duration:    result.Duration(f.duration),
		Requests:    f.requests,
		Timeout:     result.Duration(f.timeout),
		KeepAlive:   !f.noKeepAlive,
		Insecure:    f.insecure,
		MaxBody:     maxBody,
		MaxHeader:   int(maxHeader),
	}
	wl := engine.Workload{Kind: engine.Closed, VUs: f.connections, SharedIterations: f.requests, Duration: f.duration, Grace: f.grace}
	if f.rate != "" {
		r, err := quantity.ParseRate(f.rate)
		if err != nil {
			return nil, usageError(fmt.Errorf("run: --rate: %w", err))
		}
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
		}
		wl = engine.Workload{Kind: engine.Open, Arrivals: arrivals, MaxVUs: f.connections, Queue: true, Grace: f.grace}
		settings.Mode, settings.Rate, settings.Duration, settings.Requests = "open", r.PerSecond(), result.Duration(d), arrivals.Total()
	} else if f.duration == 0 && f.requests == 0 {
		wl.Duration = 10 * time.Second
		settings.Duration = result.Duration(wl.Duration)
	}
	return &quickRun{
		url:      u,
		req:      req,
		settings: settings,
		cfg: engine.Config{
			Workload: wl,
			HTTP:     httpx.Options{Timeout: f.timeout, MaxBodyBytes: maxBody, MaxHeaderBytes: int(maxHeader)},
			Workers:  f.workers,
		},
	}, nil
}

func runQuick(ctx context.Context, io *stdio, f *quickFlags, connectionsSet bool) error {
	q, err := parseQuick(io, f, connectionsSet)
	if err != nil {
		return err
	}
	if f.out != "" {
		if err := store.CheckWritable(f.out); err != nil {
			return usageError(fmt.Errorf("run: --out: %w", err))
		}
	}
	target, err := httpx.ResolveTarget(ctx, q.url, f.insecure)
	if err != nil {
		return failedError(fmt.Errorf("run: %w", err))
	}
	if err := experiment.Preflight(ctx, target, f.timeout); err != nil {
		return failedError(fmt.Errorf("run: %w", err))
	}
	name := q.settings.Method + " " + q.url.Path
	q.cfg.Program = engine.QuickProgram(name, target, q.req.Append(nil), q.settings.Method, f.noKeepAlive)

	prog := newProgress(io, q.settings)
	res, err := experiment.RunProgram(ctx, q.cfg, q.settings, experiment.RunOptions{Version: version(), OnProgress: prog.update})
	prog.done()
	if err != nil {
		return failedError(fmt.Errorf("run: %w", err))
	}
	res.Name = name
	return finish(io, f, res, 0)
}

// maskHeader hides the values of headers that carry secrets.
func maskHeader(name, value string) string {
	switch strings.ToLower(name) {
	case "authorization", "cookie", "proxy-authorization", "x-api-key":
		return "***"
	}
	return value
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
