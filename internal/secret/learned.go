package secret

import "sync"

// Learned are secrets known only as the load runs: the values VUs capture
// into names that say they are credentials (session_token, csrf). VUs add
// them (Add, a lock and an append: no search, no copy of the text); a
// Writer masks them from its next write on. It keeps at most MaxLearned
// values not yet taken, the newest: a server that writes nothing for a
// while does not make it grow without bound.
type Learned struct {
	mu      sync.Mutex
	pending []string
}

// MaxLearned bounds the values a Learned holds before a Writer takes them,
// and the learned values a Writer masks (the newest).
const MaxLearned = 1 << 16

// MaxLearnedLength is the longest learned value a Writer masks: a JWT is
// well under it; a capture of a whole page is not a credential to hunt for
// in a log, and would make the Writer hold back as much.
const MaxLearnedLength = 4096

// NewLearned makes an empty set of learned secrets.
func NewLearned() *Learned { return &Learned{} }

// Add makes v a secret from now on. Values shorter than MinLength or
// longer than MaxLearnedLength are not masked, as Replace does not mask
// short ones.
func (l *Learned) Add(v string) {
	if l == nil || len(v) < MinLength || len(v) > MaxLearnedLength {
		return
	}
	l.mu.Lock()
	if len(l.pending) >= MaxLearned {
		l.pending = append(l.pending[:0], l.pending[MaxLearned/2:]...)
	}
	l.pending = append(l.pending, v)
	l.mu.Unlock()
}

// take appends the values added since the last take to dst.
func (l *Learned) take(dst []string) []string {
	l.mu.Lock()
	dst = append(dst, l.pending...)
	clear(l.pending)
	l.pending = l.pending[:0]
	l.mu.Unlock()
	return dst
}
