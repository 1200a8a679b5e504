package secret

import (
	"fmt"
	"io"
	"strings"
	"testing"
)

// BenchmarkLearnedAdd is what a VU pays for each credential it captures.
func BenchmarkLearnedAdd(b *testing.B) {
	l := NewLearned()
	w := NewWriter(io.Discard, nil)
	w.Learn(l)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.Add("session-token-0123456789abcdef")
		}
	})
	b.StopTimer()
	w.Write([]byte("x"))
}

// BenchmarkWriter is server.log's masking: a log of request lines through
// a Writer with a data column of 10,000 passwords.
func BenchmarkWriter(b *testing.B) {
	var secrets []string
	for i := range 10_000 {
		secrets = append(secrets, fmt.Sprintf("pw-%06d", i))
	}
	line := []byte(strings.Repeat("GET /products/42 200 1.2ms user=ann ", 4) + "\n")
	w := NewWriter(io.Discard, secrets)
	b.SetBytes(int64(len(line)))
	b.ResetTimer()
	for range b.N {
		w.Write(line)
	}
}
