package telemetry

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// DefaultMetricsAddr is where --metrics-addr serves when given only a port.
const DefaultMetricsAddr = "127.0.0.1:9464"

// collector is a prometheus.Collector of Live's figures: every scrape
// reads one snapshot.
type collector struct{ live *Live }

// Describe sends nothing: the series come and go with the steps (an
// unchecked collector).
func (collector) Describe(chan<- *prometheus.Desc) {}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	for _, f := range Families(c.live.Snapshot()) {
		desc := prometheus.NewDesc(f.Name, f.Help, f.Labels, nil)
		for _, s := range f.Series {
			switch f.Kind {
			case Histogram:
				cumulative := make(map[float64]uint64, len(Bounds))
				var n uint64
				for i, b := range Bounds {
					n += s.Buckets[i]
					cumulative[b] = n
				}
				ch <- prometheus.MustNewConstHistogram(desc, s.Count, s.Sum, cumulative, s.Values...)
			case Counter:
				ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, s.Value, s.Values...)
			default:
				ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, s.Value, s.Values...)
			}
		}
	}
}

// Server serves /metrics.
type Server struct {
	// Addr is the address it listens on; Loopback says it is reachable
	// from this machine only. Token is empty on loopback; elsewhere a
	// scrape needs it, as a Bearer header (Prometheus's authorization:
	// { credentials: TOKEN }) or ?token=.
	Addr     string
	Loopback bool
	Token    string
	srv      *http.Server
	live     *Live
	done     chan struct{}
}

// ListenAddr is the address --metrics-addr ADDR listens on: a port alone
// (":9464", "9464") is on loopback; a host is taken as given.
func ListenAddr(addr string) (string, error) {
	if addr == "" {
		return DefaultMetricsAddr, nil
	}
	if _, err := net.LookupPort("tcp", addr); err == nil {
		addr = ":" + addr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("want HOST:PORT or :PORT, such as %s: %w", DefaultMetricsAddr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// TokenEnv names the environment variable that sets /metrics' token off
// loopback (16 characters or more); without it a random one is made.
const TokenEnv = "LOADLAB_METRICS_TOKEN"

// Serve listens on addr (see ListenAddr) and serves live's figures at
// /metrics in the Prometheus text format (and OpenMetrics when asked).
// A port already taken is an error here, before any load. As the
// dashboard does: on loopback, a request whose Host is not loopback is
// refused (a page elsewhere that rebinds its name to 127.0.0.1); off
// loopback, every request needs the token (token, or a random one when
// token is "").
func Serve(addr string, live *Live, token string) (*Server, error) {
	a, err := ListenAddr(addr)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", a)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("%s is in use (another loadlab, or an exporter, listens there; give another port): %w", a, err)
		}
		return nil, err
	}
	s := &Server{Addr: ln.Addr().String(), live: live, done: make(chan struct{})}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok {
		s.Loopback = tcp.IP.IsLoopback()
	}
	switch {
	case s.Loopback:
	case token != "" && len(token) < 16:
		ln.Close()
		return nil, fmt.Errorf("a token of %d characters is too short to guess hard; give 16 or more", len(token))
	case token != "":
		s.Token = token
	default:
		var t [16]byte
		if _, err := rand.Read(t[:]); err != nil {
			ln.Close()
			return nil, fmt.Errorf("making the metrics token: %w", err)
		}
		s.Token = hex.EncodeToString(t[:])
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{live})
	metricsHandler := promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		metricsHandler.ServeHTTP(w, r)
		live.scrapedFinal()
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "loadlab: the live figures are at /metrics")
	})
	s.srv = &http.Server{Handler: s.guard(mux), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln) // ErrServerClosed after Close
	}()
	return s, nil
}

// guard refuses, on loopback, a Host that is not loopback, and elsewhere
// a request without the token.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.Loopback && !LoopbackHost(r.Host) {
			http.Error(w, "loadlab metrics: this address answers on loopback only", http.StatusForbidden)
			return
		}
		if s.Token != "" {
			t := r.URL.Query().Get("token")
			if t == "" {
				t, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			}
			if subtle.ConstantTimeCompare([]byte(t), []byte(s.Token)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="loadlab metrics"`)
				http.Error(w, "loadlab metrics: the token printed in loadlab's terminal is needed", http.StatusUnauthorized)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// LoopbackHost reports whether a request's Host (host or host:port) names
// this machine: localhost or a loopback address.
func LoopbackHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// WaitScraped waits, at most d, for a scrape after live.Finish, so that a
// scraper sees the final figures.
func (s *Server) WaitScraped(d time.Duration) bool {
	if d <= 0 {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.live.scraped:
		return true
	case <-t.C:
		return false
	}
}

// Close stops serving, letting a scrape in progress finish for up to a second.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	<-s.done
	return err
}
