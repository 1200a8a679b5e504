package httpx

import "testing"

// BenchmarkParse parses nginx's answer for its welcome page: the header
// block and a 612-byte body in one piece, not kept, as quick mode does.
func BenchmarkParse(b *testing.B) {
	resp := []byte("HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Tue, 01 Dec 2026 12:00:00 GMT\r\nContent-Type: text/html\r\nContent-Length: 612\r\nLast-Modified: Tue, 01 Dec 2026 10:00:00 GMT\r\nConnection: keep-alive\r\nETag: \"6560c8b2-264\"\r\nAccept-Ranges: bytes\r\n\r\n")
	resp = append(resp, make([]byte, 612)...)
	var p Parser
	b.SetBytes(int64(len(resp)))
	for b.Loop() {
		p.Reset(false, false)
		if _, err := p.Feed(resp); err != nil || !p.Done() {
			b.Fatal(err)
		}
	}
}
