package secret

import (
	"encoding/binary"
	"io"
	"slices"
	"sort"
)

// Writer masks secrets in a stream: a server's output, masked as it is
// written, without keeping the whole of it. It holds back at most the
// longest secret's length less one byte, and Close writes that. A stream
// is masked as one scan of the whole would: at each byte, the longest
// secret that starts there is masked. Many secrets (a data column of a
// million passwords) cost one lookup a byte, not one search each.
type Writer struct {
	w       io.Writer
	n       int                 // secrets in byStart
	byStart map[uint32][]string // a secret's first MinLength bytes: the secrets, longest first
	set     map[string]struct{} // the secrets in byStart
	longest int
	held    []byte // written to the Writer, not yet passed on
	out     []byte
	err     error

	// learn, if set, adds secrets as the stream goes (Learned); learned
	// are the forms of each value learned, oldest first, at most
	// MaxLearned values.
	learn   *Learned
	learned [][]string
	taken   []string
}

// NewWriter masks secrets (those of MinLength bytes or more, in each of
// their Forms) in what is written to it, and passes the result on to w.
func NewWriter(w io.Writer, secrets []string) *Writer {
	return newWriter(w, maskable(secrets))
}

// NewTextsWriter masks texts as they are (those of MinLength bytes or
// more), not their other forms: the LearnedForms of another Writer.
func NewTextsWriter(w io.Writer, texts []string) *Writer {
	long := make([]string, 0, len(texts))
	for _, s := range texts {
		if len(s) >= MinLength {
			long = append(long, s)
		}
	}
	sort.Slice(long, func(i, j int) bool {
		if len(long[i]) != len(long[j]) {
			return len(long[i]) > len(long[j])
		}
		return long[i] < long[j]
	})
	return newWriter(w, slices.Compact(long))
}

// newWriter masks long, longest first and without repeats.
func newWriter(w io.Writer, long []string) *Writer {
	m := &Writer{w: w, byStart: map[uint32][]string{}, set: map[string]struct{}{}}
	for _, s := range long {
		k := binary.LittleEndian.Uint32([]byte(s))
		m.byStart[k] = append(m.byStart[k], s)
		m.set[s] = struct{}{}
		m.longest = max(m.longest, len(s))
	}
	m.n = len(m.set)
	return m
}

// Learn makes m mask, from its next write on, the values added to l, in
// each of their forms: the newest MaxLearned of them.
func (m *Writer) Learn(l *Learned) { m.learn = l }

// add adds one secret of MinLength bytes or more, kept longest first in
// its bucket.
func (m *Writer) add(s string) {
	if _, ok := m.set[s]; ok {
		return
	}
	k := binary.LittleEndian.Uint32([]byte(s))
	b := m.byStart[k]
	i, _ := slices.BinarySearchFunc(b, len(s), func(e string, n int) int { return n - len(e) })
	m.byStart[k] = slices.Insert(b, i, s)
	m.set[s] = struct{}{}
	m.longest = max(m.longest, len(s))
	m.n++
}

// remove takes one secret out (a learned value that is no longer among
// the newest).
func (m *Writer) remove(s string) {
	if _, ok := m.set[s]; !ok {
		return
	}
	delete(m.set, s)
	m.n--
	k := binary.LittleEndian.Uint32([]byte(s))
	b := m.byStart[k]
	if i := slices.Index(b, s); i >= 0 {
		b = slices.Delete(b, i, i+1)
	}
	if len(b) == 0 {
		delete(m.byStart, k)
	} else {
		m.byStart[k] = b
	}
}

// takeLearned adds the values learned since the last write.
func (m *Writer) takeLearned() {
	if m.learn == nil {
		return
	}
	m.taken = m.learn.take(m.taken[:0])
	for _, v := range m.taken {
		var forms []string
		for _, f := range Forms(v) {
			if len(f) >= MinLength && !m.has(f) {
				m.add(f)
				forms = append(forms, f)
			}
		}
		m.learned = append(m.learned, forms)
	}
	clear(m.taken)
	if over := len(m.learned) - MaxLearned; over > 0 {
		for _, forms := range m.learned[:over] {
			for _, f := range forms {
				m.remove(f)
			}
		}
		m.learned = append(m.learned[:0], m.learned[over:]...)
	}
}

// LearnedForms are the forms of the values m has learned and masks now
// (the newest MaxLearned), for a second pass over what was written
// before they were learned.
func (m *Writer) LearnedForms() []string {
	var out []string
	for _, forms := range m.learned {
		out = append(out, forms...)
	}
	return out
}

func (m *Writer) has(s string) bool {
	_, ok := m.set[s]
	return ok
}

// Write masks and passes on all of p but the end that could be the start
// of a secret.
func (m *Writer) Write(p []byte) (int, error) {
	if m.err != nil {
		return 0, m.err
	}
	m.takeLearned()
	if m.n == 0 && len(m.held) == 0 {
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
	m.takeLearned()
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
	for _, s := range m.byStart[binary.LittleEndian.Uint32(b)] {
		if len(b) >= len(s) && string(b[:len(s)]) == s {
			return len(s)
		}
	}
	return 0
}
