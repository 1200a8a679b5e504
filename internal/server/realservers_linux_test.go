//go:build linux

package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// nginxConfig is a minimal nginx with a master and three workers. The master stays
// in the foreground with daemon off, and forks itself into a new session with daemon on.
const nginxConfig = `daemon %s;
master_process on;
worker_processes 3;
pid %[2]s/nginx.pid;
error_log stderr notice;
events { worker_connections 64; }
http {
	access_log off;
	client_body_temp_path %[2]s/client_body;
	proxy_temp_path %[2]s/proxy;
	fastcgi_temp_path %[2]s/fastcgi;
	uwsgi_temp_path %[2]s/uwsgi;
	scgi_temp_path %[2]s/scgi;
	server {
		listen 127.0.0.1:%[3]d;
		location / { return 200 "ok\n"; }
	}
}
`

func TestNginx(t *testing.T) {
	const nginx = "/usr/sbin/nginx"
	if _, err := os.Stat(nginx); err != nil {
		t.Skipf("nginx is not installed at %s: %v", nginx, err)
	}
	for _, daemon := range []string{"off", "on"} {
		t.Run("daemon "+daemon, func(t *testing.T) {
			dir := t.TempDir()
			port := freePort(t)
			p, err := Start(context.Background(), Spec{
				Argv:           []string{nginx, "-p", dir, "-c", "nginx.conf", "-e", "stderr"},
				Dir:            dir,
				Files:          []File{{Path: "nginx.conf", Content: []byte(fmt.Sprintf(nginxConfig, daemon, dir, port))}},
				Ready:          fmt.Sprintf("http://127.0.0.1:%d/", port),
				ReadyTimeout:   10 * time.Second,
				Grace:          5 * time.Second,
				LogPath:        filepath.Join(dir, "server.log"),
				SampleInterval: fastSampling,
			})
			if err != nil {
				t.Fatal(err)
			}
			rec := newRecorder()
			members := rec.await(t, p, "a master and 3 workers", 5*time.Second, func(m []Member) bool {
				return countNamed(m, "nginx") == 4
			})
			t.Logf("tree: %s", describe(members))
			get(t, fmt.Sprintf("http://127.0.0.1:%d/", port))
			time.Sleep(2 * fastSampling)
			last := p.Samples()[len(p.Samples())-1]
			if last.Processes != 4 || last.PSS <= 0 || last.PSS >= last.RSS {
				t.Errorf("sample %+v: want 4 processes, PSS below summed RSS (workers share pages)", last)
			}
			stopWithin(t, p, 5*time.Second)
			rec.assertGone(t)
		})
	}
}

const haproxyConfig = `global
	maxconn 64
defaults
	mode http
	timeout connect 1s
	timeout client 5s
	timeout server 5s
frontend web
	bind 127.0.0.1:%d
	http-request return status 200 content-type text/plain string ok
`

func TestHAProxy(t *testing.T) {
	const haproxy = "/usr/sbin/haproxy"
	if _, err := os.Stat(haproxy); err != nil {
		t.Skipf("haproxy is not installed at %s: %v", haproxy, err)
	}
	tests := []struct {
		name  string
		mode  []string
		procs int
	}{
		{"master-worker", []string{"-W"}, 2},
		{"daemon", []string{"-D", "-p", "haproxy.pid"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			port := freePort(t)
			p, err := Start(context.Background(), Spec{
				Argv:           append(append([]string{haproxy}, tt.mode...), "-f", "haproxy.cfg"),
				Dir:            dir,
				Files:          []File{{Path: "haproxy.cfg", Content: []byte(fmt.Sprintf(haproxyConfig, port))}},
				Ready:          fmt.Sprintf("http://127.0.0.1:%d/", port),
				ReadyTimeout:   10 * time.Second,
				Grace:          5 * time.Second,
				LogPath:        filepath.Join(dir, "server.log"),
				SampleInterval: fastSampling,
			})
			if err != nil {
				t.Fatal(err)
			}
			rec := newRecorder()
			members := rec.await(t, p, fmt.Sprintf("%d haproxy processes", tt.procs), 5*time.Second, func(m []Member) bool {
				return countNamed(m, "haproxy") == tt.procs && len(m) == tt.procs
			})
			t.Logf("tree: %s", describe(members))
			get(t, fmt.Sprintf("http://127.0.0.1:%d/", port))
			stopWithin(t, p, 5*time.Second)
			rec.assertGone(t)
		})
	}
}

func get(t *testing.T, url string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || (strings.TrimSpace(string(body)) != "ok" && !strings.HasPrefix(string(body), "allocated")) {
		t.Errorf("GET %s: %s %q", url, resp.Status, body)
	}
}
