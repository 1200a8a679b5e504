package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/loadlab/loadlab/internal/result"
)

// rawHTTP is a keep-alive server on loopback that answers each request with
// the status line its path names: /302 "302 Found" (a redirect), /413
// "413 Payload Too Large" (the server's wording; Go's is "Request Entity
// Too Large"), anything else "200 OK".
func rawHTTP(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					first, err := r.ReadString('\n')
					if err != nil {
						return
					}
					for {
						line, err := r.ReadString('\n')
						if err != nil {
							return
						}
						if line == "\r\n" {
							break
						}
					}
					status := "200 OK"
					switch f := strings.Fields(first); {
					case len(f) > 1 && f[1] == "/302":
						status = "302 Found\r\nLocation: /elsewhere"
					case len(f) > 1 && f[1] == "/413":
						status = "413 Payload Too Large"
					}
					if _, err := io.WriteString(c, "HTTP/1.1 "+status+"\r\nContent-Length: 2\r\n\r\nok"); err != nil {
						return
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// TestStatusCounts: the JSON summary counts responses by status code, run-
// wide and per step, so a run of redirects does not look all OK; the
// example of a 4xx is the server's reason phrase.
func TestStatusCounts(t *testing.T) {
	t.Parallel()
	url := rawHTTP(t)
	var s struct {
		result.Summary
		Steps []struct {
			result.Summary
		} `json:"steps"`
	}
	stdout, stderr, code := cli(context.Background(), t, "run", "--url", url+"/302", "-n", "5", "-c", "1", "--json")
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatalf("exit %d: %v\n%s", code, err, stderr)
	}
	if s.Status[302] != 5 || len(s.Status) != 1 || len(s.Steps) != 1 || s.Steps[0].Status[302] != 5 {
		t.Errorf("status %v, steps %+v: want 5 × 302", s.Status, s.Steps)
	}
	if !strings.Contains(stdout, `"status": {`) && !strings.Contains(stdout, `"status":{`) {
		t.Errorf("no status key in\n%s", stdout)
	}
	stdout, _, _ = cli(context.Background(), t, "run", "--url", url+"/413", "-n", "2", "-c", "1", "--json")
	s.Summary = result.Summary{}
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatal(err)
	}
	if got := s.Errors.Examples["status_4xx"]; got != "HTTP 413 Payload Too Large" || s.Status[413] != 2 {
		t.Errorf("4xx example %q, status %v: want the server's reason phrase", got, s.Status)
	}
	stdout, _, _ = cli(context.Background(), t, "run", "--url", url+"/302", "-n", "3", "-c", "1")
	if !strings.Contains(stdout, "status      302 ×3") {
		t.Errorf("the text summary does not count the 302s:\n%s", stdout)
	}
	// A plan's failed check keeps the response with the server's status line.
	out := t.TempDir()
	plan := writePlan(t, map[string]string{"plan.yaml": "target: " + url + "\nsteps:\n  - get: /413\n    expect: { status: 200 }\nload: { closed: { vus: 1, iterations: 1 } }\n"})
	cli(context.Background(), t, "run", plan, "--out", out)
	kept, _ := filepath.Glob(filepath.Join(out, "failures", "*.http"))
	if len(kept) != 1 {
		t.Fatalf("kept responses %v", kept)
	}
	if b, _ := os.ReadFile(kept[0]); !strings.HasPrefix(string(b), "HTTP/1.1 413 Payload Too Large\r\n") {
		t.Errorf("kept response %q", b)
	}
}

// TestPlanHostHeader: a plan may set Host, for virtual hosts behind one
// address, as quick mode's -H does; the request goes to the target's
// address with that Host.
func TestPlanHostHeader(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var hosts []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hosts = append(hosts, r.Host)
		mu.Unlock()
		io.WriteString(w, "vhost "+r.Host)
	}))
	t.Cleanup(srv.Close)
	plan := writePlan(t, map[string]string{"plan.yaml": "target: " + srv.URL + "\nhttp:\n  headers: { Host: shop.test }\nsteps:\n  - get: /\n    expect: { contains: vhost shop.test }\n  - get: /api\n    headers: { host: api.shop.test }\n    expect: { contains: vhost api.shop.test }\nload: { closed: { vus: 1, iterations: 1 } }\n"})
	if _, stderr, code := cli(context.Background(), t, "run", plan); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(hosts, " ") != "shop.test api.shop.test" {
		t.Errorf("hosts %q", hosts)
	}
}
