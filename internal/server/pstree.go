package server

import (
	"context"
	"errors"
	"time"

	"github.com/shirou/gopsutil/v4/process"
)

// The portable watcher: a process tree found by parent links in the table of
// all processes and measured with gopsutil. It is what samples outside Linux,
// and it builds and is tested on Linux too, where /proc does the real work.
//
// What it cannot see, and says so in Summary.Unmeasured: PSS (RSS stands in,
// PSSFromRSS), swap and major faults. A member's CPU time counts up to its
// last sample; orphans a daemonizing server leaves behind are reparented to
// init or launchd, outside the tree, and not found (Linux makes loadlab a
// subreaper instead).

// portableUnmeasured is what the portable watcher never measures.
const portableUnmeasured = FigurePSS | FigureSwap | FigureMajorFaults | FigureWait

// tableEntry is one process of the table of all processes; name is empty
// where the table does not have it.
type tableEntry struct {
	parent int
	name   string
}

// psMember is what the tree remembers of a member between collections.
type psMember struct {
	create       int64 // ms since the epoch: with the pid, which process it is
	parent       int
	name         string
	user, system time.Duration
	proc         *process.Process
}

// psTree finds and measures the members of one tree; one goroutine at a time.
type psTree struct {
	root       int
	rootCreate int64
	single     bool // the root alone
	// rootUsage gives the root's exact CPU times once it has been waited for.
	rootUsage func() (user, system time.Duration, ok bool)

	known         map[int]psMember // members at the last collection
	found         map[int]psMember
	gone          struct{ user, system time.Duration }
	fdsUnmeasured bool
}

func newPSTree(root int, single bool) (*psTree, error) {
	p, err := process.NewProcess(int32(root))
	if err != nil {
		return nil, err
	}
	create, err := p.CreateTime()
	if err != nil {
		return nil, err
	}
	return &psTree{
		root: root, rootCreate: create, single: single,
		known: make(map[int]psMember), found: make(map[int]psMember),
	}, nil
}

// collect finds the members and returns what they use now.
func (t *psTree) collect(ctx context.Context) (usage, error) {
	var children map[int][]int
	var table map[int]tableEntry
	if !t.single {
		var err error
		if table, err = processTable(ctx); err != nil {
			return usage{}, err
		}
		children = make(map[int][]int, len(table))
		for pid, e := range table {
			children[e.parent] = append(children[e.parent], pid)
		}
	}
	clear(t.found)
	queue := []int{t.root}
	for pid := range t.known { // rule 4: a member stays one wherever it moved
		queue = append(queue, pid)
	}
	for len(queue) > 0 {
		pid := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if _, ok := t.found[pid]; ok {
			continue
		}
		m, ok := t.identify(ctx, pid)
		if !ok {
			continue
		}
		t.found[pid] = m
		queue = append(queue, children[pid]...)
	}

	var u usage
	for pid, m := range t.found {
		// The name changes at exec; gopsutil keeps the first it read.
		if e, ok := table[pid]; ok && e.name != "" {
			m.name = e.name
		} else if name, err := (&process.Process{Pid: int32(pid)}).NameWithContext(ctx); err == nil {
			m.name = name
		}
		if times, err := m.proc.TimesWithContext(ctx); err == nil {
			m.user = seconds(times.User)
			m.system = seconds(times.System)
		}
		t.found[pid] = m
		u.user += m.user
		u.system += m.system
		u.processes++
		if mem, err := m.proc.MemoryInfoWithContext(ctx); err == nil {
			u.rss += int64(mem.RSS)
		}
		if n, err := m.proc.NumThreadsWithContext(ctx); err == nil {
			u.threads += int(n)
		}
		n, err := m.proc.NumFDsWithContext(ctx)
		switch {
		case err == nil:
			u.fds += int(n)
		default:
			u.fdsUnknown = true
			t.fdsUnmeasured = t.fdsUnmeasured || isUnsupported(err)
		}
	}
	// PSS is not available: RSS stands in, and says so.
	u.pss, u.pssFromRSS = u.rss, true

	for pid, m := range t.known {
		if now, ok := t.found[pid]; ok && now.create == m.create {
			continue
		}
		if pid == t.root && t.rootUsage != nil {
			if user, system, ok := t.rootUsage(); ok {
				t.gone.user += user
				t.gone.system += system
				t.rootUsage = nil
				continue
			}
		}
		t.gone.user += m.user
		t.gone.system += m.system
	}
	t.known, t.found = t.found, t.known
	u.user += t.gone.user
	u.system += t.gone.system
	return u, nil
}

// identify returns pid as a member: the root, a process found before (the
// same one), or a new descendant.
func (t *psTree) identify(ctx context.Context, pid int) (psMember, bool) {
	if m, ok := t.known[pid]; ok {
		if running, err := m.proc.IsRunningWithContext(ctx); err != nil || !running || zombie(ctx, m.proc) {
			return psMember{}, false
		}
		return m, true
	}
	p, err := process.NewProcessWithContext(ctx, int32(pid))
	if err != nil {
		return psMember{}, false
	}
	create, err := p.CreateTimeWithContext(ctx)
	if err != nil {
		return psMember{}, false
	}
	if pid == t.root && create != t.rootCreate {
		return psMember{}, false // the pid names another process now
	}
	if zombie(ctx, p) {
		return psMember{}, false
	}
	m := psMember{create: create, proc: p}
	if parent, err := p.PpidWithContext(ctx); err == nil {
		m.parent = int(parent)
	}
	return m, true
}

// members appends the members to dst, root first, then by pid.
func (t *psTree) members(dst []Member) []Member {
	start := len(dst)
	for pid, m := range t.known {
		dst = append(dst, Member{PID: pid, Parent: m.parent, Name: m.name})
	}
	sortMembers(dst[start:], t.root)
	return dst
}

func (t *psTree) empty() bool { return len(t.known) == 0 }

// unmeasured is what this tree's samples leave out.
func (t *psTree) unmeasured() Figures {
	if t.fdsUnmeasured {
		return portableUnmeasured | FigureFDs
	}
	return portableUnmeasured
}

// zombie reports a process that exited and was not waited for yet: it uses
// nothing any more.
func zombie(ctx context.Context, p *process.Process) bool {
	status, err := p.StatusWithContext(ctx)
	return err == nil && len(status) > 0 && status[0] == process.Zombie
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func isUnsupported(err error) bool {
	return errors.Is(err, errors.ErrUnsupported) || err.Error() == "not implemented yet"
}
