package runner

import (
	"net/url"
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/result"
)

// TestQuickFingerprintHTTP2: an HTTP/2 run with streams is not like an
// HTTP/1.1 run of as many connections, for compare; an HTTP/1.1 run's
// fingerprint is as it was.
func TestQuickFingerprintHTTP2(t *testing.T) {
	u, _ := url.Parse("http://127.0.0.1:8080/")
	h1 := QuickRun{URL: u, Method: "GET", Settings: result.Settings{Mode: "closed", Connections: 10, Requests: 1000}}
	h2 := h1
	h2.Settings.Streams = 10
	a, b := quickFingerprint(h1), quickFingerprint(h2)
	if a.Hash == b.Hash || !strings.Contains(b.Shape, "HTTP/2 with 10 streams a connection") {
		t.Errorf("h1 %q %s, h2 %q %s: want different shapes and hashes", a.Shape, a.Hash, b.Shape, b.Hash)
	}
	if a.Shape != "10 VUs, 1000 requests in all" {
		t.Errorf("HTTP/1.1 shape %q changed", a.Shape)
	}
}

func TestFirstExampleHTTP2Classes(t *testing.T) {
	if got := firstExample(map[string]string{"stream": "the server reset the stream: INTERNAL_ERROR"}); got != " (stream: the server reset the stream: INTERNAL_ERROR)" {
		t.Errorf("got %q", got)
	}
	if got := firstExample(map[string]string{"goaway": "the server sent GOAWAY (NO_ERROR)"}); got != " (goaway: the server sent GOAWAY (NO_ERROR))" {
		t.Errorf("got %q", got)
	}
}
