//go:build linux

package server

import (
	"errors"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// treeOptions says which processes a tree counts; see the package comment.
type treeOptions struct {
	root      int
	rootStart uint64
	// single counts the root alone and leaves its children's times out: loadlab
	// sampling itself must not count the server it reaped.
	single bool
	// group is the process group created for the server; 0 for none.
	group int
	// claimOrphans counts direct children of this process that left its session or
	// are in group (rule 3 of the package comment).
	claimOrphans bool
	// reap waits for zombie members that are children of this process, other than the
	// root, which exec.Cmd.Wait owns. Nobody else would: they are reparented orphans.
	reap bool
	// rootUsage gives the exact totals of the root once it has been reaped; nil, or
	// false, falls back to the root's last observed figures.
	rootUsage func() (totals, bool)
}

// totals is what a process used over its life, including children it reaped.
type totals struct {
	user, system time.Duration
	faults       int64
}

func (t *totals) add(o totals) {
	t.user += o.user
	t.system += o.system
	t.faults += o.faults
}

func rusageTotals(ru *syscall.Rusage) totals {
	return totals{
		user:   time.Duration(ru.Utime.Nano()),
		system: time.Duration(ru.Stime.Nano()),
		faults: ru.Majflt,
	}
}

type memberRecord struct {
	start  uint64
	ppid   int
	totals totals
}

// reapedExit is a member this process waited for, with how it ended.
type reapedExit struct {
	pid    int
	name   string
	status ExitStatus
}

// source finds processes: by children files, or from a full scan of /proc.
type source interface {
	begin() error
	stat(pid int) (procStat, bool)
	// children appends pid's children; threads <= 0 means unknown.
	children(dst []int, pid, threads int) []int
}

// childrenSource reads only the processes it is asked about: a sample costs a few
// reads per member whatever the number of processes on the machine.
type childrenSource struct{ r *procReader }

func (s childrenSource) begin() error { return nil }

func (s childrenSource) stat(pid int) (procStat, bool) {
	st, err := s.r.stat(pid)
	return st, err == nil
}

func (s childrenSource) children(dst []int, pid, threads int) []int {
	return s.r.children(dst, pid, threads)
}

// scanSource reads every /proc/PID/stat once per collection and follows ppid links,
// for kernels without the children files.
type scanSource struct {
	r     *procReader
	stats map[int]procStat
	kids  map[int][]int
}

func (s *scanSource) begin() error {
	pids, err := allPIDs()
	if err != nil {
		return err
	}
	clear(s.stats)
	clear(s.kids)
	for _, pid := range pids {
		st, err := s.r.stat(pid)
		if err != nil {
			continue // exited since the listing
		}
		s.stats[pid] = st
		s.kids[st.ppid] = append(s.kids[st.ppid], pid)
	}
	return nil
}

func (s *scanSource) stat(pid int) (procStat, bool) {
	st, ok := s.stats[pid]
	return st, ok
}

func (s *scanSource) children(dst []int, pid, _ int) []int {
	return append(dst, s.kids[pid]...)
}

// tree finds the members of one tree and adds up what they use. It is used by one
// goroutine at a time.
type tree struct {
	opt         treeOptions
	self        int
	selfSession int
	tick        time.Duration // one clock tick of /proc/PID/stat times

	r   *procReader
	src source

	found  map[int]procStat     // members at this collection
	known  map[int]memberRecord // members at the previous one
	reaped map[int]bool         // reaped by us during this collection
	queue  []int                // members whose children are still to be read
	kids   []int
	gone   totals // what members that left the tree used
	exits  []reapedExit

	// delays are each live thread's run-queue delay at the last collection,
	// waited what the increments of those added up to (usage.waited): a
	// thread that exits takes its delay with it, the sum keeps what it
	// waited while watched.
	delays, seen map[int]int64
	waited       time.Duration
	collected    bool // a collection has been made: threads found after it are new

	pss          map[int]pssEntry // each member's PSS at its last smaps_rollup read
	rollupIn     int              // collections until smaps_rollup is read for every member
	rollupBudget time.Duration    // rollupBudget, changed only by tests
	rollupDrift  int64            // rereadShift as a floor in bytes; changed only by tests
}

// smaps_rollup costs milliseconds per resident gigabyte, so it is read for every member
// only as often as keeps its cost near rollupBudget per collection (0.4% of a core at
// 4 samples a second), and at least every maxRollupEvery collections. New members are
// read at once.
const (
	rollupBudget   = time.Millisecond
	maxRollupEvery = 40
)

// Between rollup reads a member's PSS is carried by its RSS (see sum), which
// is exact for its private heap but not for the file-backed pages it maps
// meanwhile: they count fully in RSS and, shared with another process mapping
// the same file, only in part in PSS. A server starting up faults in most of
// its binary after the read that found it; carried from there, its PSS read
// too high for the whole run. Measured: `loadlab target --workers 1
// --worker-memory 16MiB` run by the same loadlab binary (which maps the same
// pages) had PSS 47.7 MiB at RSS 62.3 (RSS − PSS 14.5 MiB) when read, but
// 53.0 MiB carried from a read at RSS 15.3 / PSS 5.9 (RSS − PSS 9.4 MiB, all
// run long) on a busy machine where one read cost over the budget and the
// next reads waited up to maxRollupEvery collections; one run in 20, and
// 59.8 MiB (+11.7) from a read at RSS 3.0. So a member's rollup is read again
// whenever its RSS moved more than 1/2^rereadShift of what it was at the last
// read (at least rollupDrift bytes): a carried PSS is then off by less than
// that, and the reads this adds are a handful while a process grows (each
// costs in proportion to its size) and none while it holds still.
const (
	rereadShift = 5 // 1/32: 2 MiB of a 62 MiB server, 32 MiB of a 1 GiB one
	rereadFloor = 1 << 20
)

type pssEntry struct {
	start      uint64
	pss, rssAt int64 // PSS, and RSS when PSS was read
	fromRSS    bool  // smaps_rollup was unreadable: pss is RSS
}

func newTree(opt treeOptions, useScan bool) *tree {
	self := os.Getpid()
	session, err := unix.Getsid(0)
	if err != nil {
		session = -1 // unknown: rule 3 then claims only processes in the group
	}
	r := newProcReader()
	t := &tree{
		opt: opt, self: self, selfSession: session,
		tick:   time.Second / time.Duration(clockTicks()),
		r:      r,
		found:  make(map[int]procStat),
		known:  make(map[int]memberRecord),
		reaped: make(map[int]bool),
		pss:    make(map[int]pssEntry),
		delays: make(map[int]int64),
		seen:   make(map[int]int64),

		rollupBudget: rollupBudget,
		rollupDrift:  rereadFloor,
	}
	if useScan {
		t.src = &scanSource{r: r, stats: make(map[int]procStat), kids: make(map[int][]int)}
	} else {
		t.src = childrenSource{r: r}
	}
	return t
}

// collect finds the members, reaps the zombies it owns, updates the totals of members
// that left and returns what the tree uses now.
func (t *tree) collect() (usage, error) {
	if err := t.src.begin(); err != nil {
		return usage{}, err
	}
	clear(t.found)
	clear(t.reaped)
	t.queue = t.queue[:0]

	if st, ok := t.src.stat(t.opt.root); ok && st.start == t.opt.rootStart {
		t.add(st)
	}
	if !t.opt.single {
		if t.opt.claimOrphans {
			// Orphans are reparented to the subreaper's first live thread, which in
			// a Go program is always the main one, so its children file is enough:
			// the other threads' children are processes started with exec.Cmd, and
			// the only one of those in the tree is the root.
			t.kids = t.src.children(t.kids[:0], t.self, 1)
			for _, pid := range t.kids {
				if pid == t.opt.root {
					continue
				}
				if st, ok := t.src.stat(pid); ok && t.claims(&st) {
					t.add(st)
				}
			}
		}
		t.walk()
		for pid, rec := range t.known {
			if _, ok := t.found[pid]; ok {
				continue
			}
			if st, ok := t.src.stat(pid); ok && st.start == rec.start {
				t.add(st)
			}
		}
		t.walk()
	}
	if t.opt.reap {
		t.reapZombies()
	}
	t.account()
	return t.sum(), nil
}

// claims applies rule 3 to a direct child of this process.
func (t *tree) claims(st *procStat) bool {
	if st.start < t.opt.rootStart {
		return false
	}
	return (t.opt.group != 0 && st.pgrp == t.opt.group) ||
		(t.selfSession >= 0 && st.session != t.selfSession)
}

func (t *tree) add(st procStat) {
	if _, ok := t.found[st.pid]; ok {
		return
	}
	if st.pid == t.self && st.pid != t.opt.root {
		return // a tree never contains the process that samples it, unless asked for
	}
	t.found[st.pid] = st
	t.queue = append(t.queue, st.pid)
}

// walk adds the descendants of the queued members.
func (t *tree) walk() {
	for len(t.queue) > 0 {
		pid := t.queue[len(t.queue)-1]
		t.queue = t.queue[:len(t.queue)-1]
		st := t.found[pid]
		if st.zombie() {
			continue
		}
		t.kids = t.src.children(t.kids[:0], pid, st.threads)
		for _, child := range t.kids {
			if _, ok := t.found[child]; ok {
				continue
			}
			if cst, ok := t.src.stat(child); ok && cst.ppid == pid {
				t.add(cst)
			}
		}
	}
}

// reapZombies waits for zombie members that are our children (not the root), keeping
// their exact totals and exit status.
func (t *tree) reapZombies() {
	for pid, st := range t.found {
		if !st.zombie() || st.ppid != t.self || pid == t.opt.root {
			continue
		}
		var ws unix.WaitStatus
		var ru unix.Rusage
		got, err := unix.Wait4(pid, &ws, unix.WNOHANG, &ru)
		if err != nil || got != pid {
			continue
		}
		t.gone.add(totals{
			user:   time.Duration(ru.Utime.Nano()),
			system: time.Duration(ru.Stime.Nano()),
			faults: ru.Majflt,
		})
		t.exits = append(t.exits, reapedExit{pid: pid, name: st.name, status: exitStatusOf(syscall.WaitStatus(ws))})
		t.reaped[pid] = true
		delete(t.found, pid)
	}
}

// account moves the totals of members that left since the previous collection into
// gone, unless they are already in a member's cutime, then remembers the members.
func (t *tree) account() {
	for pid, rec := range t.known {
		if st, ok := t.found[pid]; ok && st.start == rec.start {
			continue
		}
		switch {
		case t.reaped[pid]:
			// Counted exactly by reapZombies.
		case pid == t.opt.root:
			if exact, ok := t.rootTotals(); ok {
				t.gone.add(exact)
			} else {
				t.gone.add(rec.totals)
			}
		case t.isMember(rec.ppid):
			// Its parent reaped it: its totals are in the parent's cutime and cstime.
		default:
			t.gone.add(rec.totals)
		}
	}
	// A root that exited before the first collection was never known; it still counts.
	if _, wasKnown := t.known[t.opt.root]; !wasKnown && !t.isMember(t.opt.root) && t.opt.rootUsage != nil {
		if exact, ok := t.rootTotals(); ok {
			t.gone.add(exact)
		}
	}
	clear(t.known)
	for pid, st := range t.found {
		t.known[pid] = memberRecord{start: st.start, ppid: st.ppid, totals: t.totalsOf(&st)}
	}
}

// rootTotals returns the root's exact totals once, the first time they are asked for.
func (t *tree) rootTotals() (totals, bool) {
	if t.opt.rootUsage == nil {
		return totals{}, false
	}
	exact, ok := t.opt.rootUsage()
	t.opt.rootUsage = nil
	return exact, ok
}

func (t *tree) isMember(pid int) bool {
	_, ok := t.found[pid]
	return ok
}

func (t *tree) totalsOf(st *procStat) totals {
	user, system, faults := st.utime, st.stime, st.majflt
	if !t.opt.single {
		user += st.cutime
		system += st.cstime
		faults += st.cmajflt
	}
	return totals{
		user:   time.Duration(user) * t.tick,
		system: time.Duration(system) * t.tick,
		faults: faults,
	}
}

// drifted says whether rss moved so far from e's that a PSS carried by it
// may be off by more than rereadShift allows (see rereadShift).
func (t *tree) drifted(e pssEntry, rss int64) bool {
	d := rss - e.rssAt
	if d < 0 {
		d = -d
	}
	return d > max(t.rollupDrift, e.rssAt>>rereadShift)
}

func (t *tree) sum() usage {
	u := usage{user: t.gone.user, system: t.gone.system, majorFaults: t.gone.faults}
	round := t.rollupIn <= 0
	var spent time.Duration
	for _, st := range t.found {
		tot := t.totalsOf(&st)
		u.user += tot.user
		u.system += tot.system
		u.majorFaults += tot.faults
		if st.zombie() {
			continue
		}
		u.processes++
		u.threads += st.threads
		rss, swap, err := t.r.statusMemory(st.pid)
		if err != nil {
			continue // it exited since its stat was read
		}
		u.rss += rss
		u.swap += swap
		e, known := t.pss[st.pid]
		if round || !known || e.start != st.start || t.drifted(e, rss) {
			began := time.Now()
			pss, err := t.r.pss(st.pid)
			if round {
				spent += time.Since(began)
			}
			e = pssEntry{start: st.start, pss: pss, rssAt: rss}
			if err != nil {
				if gone(err) {
					continue
				}
				e.pss, e.fromRSS = rss, true // smaps_rollup unreadable: permissions, old kernel
			}
			t.pss[st.pid] = e
		} else {
			u.pssEstimated = true
		}
		// Between rollup reads a member's PSS moves with its RSS: what a process adds
		// or frees is mostly its own heap, which counts fully in both.
		u.pss += max(0, e.pss+rss-e.rssAt)
		u.pssFromRSS = u.pssFromRSS || e.fromRSS
		t.r.runDelays(st.pid, func(tid int, d int64) {
			t.seen[tid] = d
			if last, ok := t.delays[tid]; ok && d >= last {
				t.waited += time.Duration(d - last)
			} else if !ok && t.collected {
				t.waited += time.Duration(d) // a thread born since the last collection
			}
		})
		n, err := t.r.fds(st.pid)
		switch {
		case err == nil:
			u.fds += n
		case !gone(err):
			u.fdsUnknown = true
		}
	}
	if round {
		t.rollupIn = min(maxRollupEvery-1, int(spent/t.rollupBudget))
	} else {
		t.rollupIn--
	}
	for pid, e := range t.pss {
		if st, ok := t.found[pid]; !ok || st.start != e.start {
			delete(t.pss, pid)
		}
	}
	t.delays, t.seen = t.seen, t.delays
	clear(t.seen)
	t.collected = true
	u.waited = t.waited
	return u
}

// gone reports an error that means the process exited while being read.
func gone(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH)
}

// empty reports whether no member, alive or zombie, was found.
func (t *tree) empty() bool { return len(t.found) == 0 }

// takeExits returns the exits reaped since the last call.
func (t *tree) takeExits() []reapedExit {
	exits := t.exits
	t.exits = nil
	return exits
}

// members appends the members to dst, root first, then by pid.
func (t *tree) members(dst []Member) []Member {
	start := len(dst)
	for _, st := range t.found {
		dst = append(dst, Member{
			PID: st.pid, Parent: st.ppid, Group: st.pgrp, Session: st.session,
			Name: st.name, Zombie: st.zombie(),
		})
	}
	sortMembers(dst[start:], t.opt.root)
	return dst
}
