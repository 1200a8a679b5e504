package server

import "fmt"

// Scope says what a Sampler counts.
type Scope int

const (
	// OneProcess counts the process alone, without the times of children it reaped:
	// loadlab sampling itself must not count the server it started.
	OneProcess Scope = iota
	// ProcessTree counts the process and its descendants (rules 1, 2 and 4 of the
	// package comment), with the times of descendants that exited.
	ProcessTree
)

// GoneError reports that a sampled process and its tree no longer exist.
type GoneError struct{ PID int }

func (e *GoneError) Error() string { return fmt.Sprintf("server: process %d is gone", e.PID) }

// Member is one process of a tree at the last scan.
type Member struct {
	PID, Parent, Group, Session int
	Name                        string // the kernel's command name (comm), at most 15 bytes
	Zombie                      bool   // exited, not yet reaped
}

// sortMembers puts the root first, then the others by pid.
func sortMembers(m []Member, root int) {
	less := func(a, b Member) bool {
		if (a.PID == root) != (b.PID == root) {
			return a.PID == root
		}
		return a.PID < b.PID
	}
	for i := 1; i < len(m); i++ { // insertion sort: trees are small
		for j := i; j > 0 && less(m[j], m[j-1]); j-- {
			m[j], m[j-1] = m[j-1], m[j]
		}
	}
}
