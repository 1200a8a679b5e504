package secret

import (
	"bytes"
	"encoding/binary"
	"io"
)

// Writer masks secrets in a stream: a server's output, masked as it is
// written, without keeping the whole of it. It holds back at most the
// longest secret's length less one byte, and Close writes that. A stream
// is masked as one scan of the whole would: at each byte, the longest
// secret that starts there is masked. Many secrets (a data column of a
// million passwords) cost one lookup a byte, not one search each.
type Writer struct {
	w       io.Writer
	secrets [][]byte         // MinLength bytes or more, longest first
	byStart map[uint32][]int // a secret's first MinLength bytes: its indexes, longest first
	longest int
	held    []byte // written to the Writer, not yet passed on
	out     []byte
	err     error
}

// NewWriter masks secrets (those of MinLength bytes or more, in each of
// their Forms) in what is written to it, and passes the result on to w.
func NewWriter(w io.Writer, secrets []string) *Writer {
	long := maskable(secrets)
	m := &Writer{w: w, byStart: map[uint32][]int{}}
	for i, s := range long {
		m.secrets = append(m.secrets, []byte(s))
		m.longest = max(m.longest, len(s))
		k := binary.LittleEndian.Uint32([]byte(s))
		m.byStart[k] = append(m.byStart[k], i)
	}
	return m
}

// Write masks and passes on all of p but the end that could be the start
// of a secret.
func (m *Writer) Write(p []byte) (int, error) {
	if m.err != nil {
		return 0, m.err
	}
	if len(m.secrets) == 0 {
		if _, m.err = m.w.Write(p); m.err != nil {
			return 0, m.err
		}
		return len(p), nil
	}
	m.held = append(m.held, p...)
	m.flush(len(m.held) - (m.longest - 1))
	if m.err != nil {
		return 0, m.err
	}
	return len(p), nil
}

// Close passes on what is held back, masked. It does not close the writer
// underneath.
func (m *Writer) Close() error {
	if m.err == nil && len(m.held) > 0 {
		m.flush(len(m.held))
	}
	return m.err
}

// flush masks and passes on held from its start up to limit: every secret
// that starts before limit is there whole, since limit is at least the
// longest secret less one byte before the end of what is held.
func (m *Writer) flush(limit int) {
	out := m.out[:0]
	i := 0
	for i < limit {
		if n := m.match(m.held[i:]); n > 0 {
			out = append(out, Mask...)
			i += n
			continue
		}
		out = append(out, m.held[i])
		i++
	}
	if i == 0 {
		return
	}
	m.held = append(m.held[:0], m.held[i:]...)
	m.out = out
	if _, err := m.w.Write(out); err != nil && m.err == nil {
		m.err = err
	}
}

// match is the length of the longest secret at the start of b, or 0.
func (m *Writer) match(b []byte) int {
	if len(b) < MinLength {
		return 0
	}
	for _, i := range m.byStart[binary.LittleEndian.Uint32(b)] {
		if bytes.HasPrefix(b, m.secrets[i]) {
			return len(m.secrets[i])
		}
	}
	return 0
}
