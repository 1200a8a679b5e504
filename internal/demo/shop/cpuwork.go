package shop

import (
	"crypto/sha256"
	"time"
)

// cpuWork spends a fixed amount of CPU per request: the part of a real app's
// CPU that this small shop does not have (framework routing, object
// allocation, view helpers). It counts work, not time, so when the CPU is
// contended a request takes longer, as real code does; a time-based spin would
// instead use less CPU under contention and hide the saturation the demo is
// meant to show.
type cpuWork struct {
	rounds int // SHA-256 rounds over a 1 KiB block for a request of weight 1
}

// Request weights: pages render more than a redirect or a small JSON answer.
// Over the guest-checkout journey (home, product, add to cart, cart,
// checkout) they average 1.
const (
	weightListPage  = 1.25
	weightPage      = 1.0
	weightRedirect  = 0.5
	weightCheckout  = 1.25
	weightSmallJSON = 0.25
)

// newCPUWork measures how many rounds take d on this machine. The fastest of
// several short trials is kept, so a busy machine at start-up does not make
// the work smaller.
func newCPUWork(d time.Duration) cpuWork {
	if d <= 0 {
		return cpuWork{}
	}
	const trialRounds = 64
	fastest := time.Duration(1<<63 - 1)
	for range 25 {
		start := time.Now()
		spendRounds(trialRounds)
		if took := time.Since(start); took < fastest {
			fastest = took
		}
	}
	fastest = max(fastest, time.Microsecond) // guard a coarse clock
	return cpuWork{rounds: max(1, int(float64(d)/float64(fastest)*trialRounds))}
}

// spend does the work of a request of the given weight.
func (w cpuWork) spend(weight float64) {
	if n := int(float64(w.rounds) * weight); n > 0 {
		spendRounds(n)
	}
}

// spendRounds hashes a 1 KiB block n times, chaining each digest into the
// next block so the work cannot be skipped.
func spendRounds(n int) [sha256.Size]byte {
	var block [1024]byte
	var sum [sha256.Size]byte
	for range n {
		sum = sha256.Sum256(block[:])
		copy(block[:], sum[:])
	}
	return sum
}
