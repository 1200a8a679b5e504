// Package server starts, probes, samples and stops the server under test, so that
// loadlab can put load on a server it started itself and report what the server used.
//
// # Job and ownership
//
// [Start] takes a validated [Spec], writes the spec's files (already-rendered templates
// such as an haproxy.cfg), starts the command in a process group of its own with its
// stdout and stderr in the log file, and waits until the readiness probe answers. The
// returned [Process] owns everything the server became: the process tree, its log, and a
// time series of [Sample]s taken by one goroutine (the monitor) every Spec.SampleInterval.
// [Process.Stop] ends the tree; [Process.Done] and [Process.Err] report a server that
// ended by itself. The caller owns the Spec and may reuse it; the Process copies it.
//
// [Sampler] is the same sampling for any one pid, for instance loadlab's own process
// ([SampleSelf]), so that a run can tell whether the load generator was saturated. For
// loadlab itself it counts utime and stime only: its cutime holds the servers it reaped.
//
// On Linux everything is read from /proc, and the tree relies on prctl
// PR_SET_CHILD_SUBREAPER, process groups and pidfds; the rest of this comment is
// about Linux. Elsewhere see "Outside Linux" below.
//
// # What counts as the server's process tree
//
// Let R be the started process (Argv[0], or /bin/sh for Shell) and G the process group
// Start created for it (G = R's pid). A process is a member when it is alive or a zombie,
// and at least one of these holds:
//
//  1. it is R;
//  2. its parent is a member (so every descendant of R, and of any member below);
//  3. it is a direct child of the loadlab process, other than R, started no earlier than
//     R, and either in group G or in a session other than loadlab's. Start makes loadlab
//     a child subreaper, so a process orphaned inside the tree (a daemon's double fork,
//     nginx or haproxy -D whose first process exits, a worker whose master died) is
//     reparented to loadlab instead of init; being in G (a plain `cmd &` of a shell) or
//     having called setsid (every classic daemon) is what tells it apart from a child
//     loadlab started for another purpose, which stays in loadlab's group and session;
//  4. it was a member at the previous scan and is still the same process (same pid and
//     start time), wherever it moved since.
//
// Rules 3 and 4 find daemons even when their intermediate processes lived for less than
// a sampling interval. Known gap: if two servers daemonize at the same time inside one
// loadlab process, an orphan of one may be counted in both; loadlab runs one server at a
// time. Membership is found by reading /proc/PID/task/TID/children from R, from each
// member, and from loadlab's main thread (the kernel reparents orphans to a subreaper's
// first live thread); on kernels without those files, by reading every /proc/PID/stat
// and following ppid links. Both give the same set.
//
// # What a sample counts
//
// Over the members at the instant of the sample:
//
//   - CPU user and system time, cumulative: utime+stime plus cutime+cstime (time of
//     children the member has already reaped) of every member, plus the final totals of
//     members that left the tree. Members reaped by loadlab (R and reparented orphans) are
//     counted exactly from their rusage; a member reaped by its parent lands in the
//     parent's cutime. Only a member that exits within the same interval as its parent may
//     be counted from its last observed figures.
//   - CPU % of one core and % of the machine, from the deltas between samples; the
//     machine is the online CPUs, or the CPU quota of R's cgroup (v1 or v2) when lower.
//   - RSS and swap: VmRSS and VmSwap of /proc/PID/status, read every sample.
//   - PSS, from /proc/PID/smaps_rollup. PSS divides each shared page by the number of
//     processes mapping it, so forked workers are not counted twice as they are in
//     summed RSS. The kernel computes it by walking page tables, about 5 ms per resident
//     GiB, so it is read for every member only as often as keeps that near 1 ms per
//     sample (every sample for small servers; every few seconds for a 2.5 GB one), and
//     at least every 40 samples. In between, each member's PSS moves by its change in
//     RSS, and the sample says PSSEstimated. When smaps_rollup is unreadable, RSS stands
//     in for PSS and the sample says PSSFromRSS.
//   - Major faults (majflt+cmajflt, cumulative like CPU), threads, open file descriptors
//     (the size of /proc/PID/fd, or a count of its entries on kernels before 6.2), and the
//     number of live processes. Zombies count for CPU and faults only.
//
// Memory quotas are checked against PSS plus swap: what the tree costs the machine.
//
// The series is bounded: it keeps at most 14,400 samples (an hour at the default 250 ms,
// about 2.5 MB). Past that, neighbouring samples fold in pairs, and later ones are taken
// in pairs as they come, so a run of any length keeps an even resolution that halves
// each time. A folded sample keeps the peaks of its intervals and the sums that make
// averages exact; a window's CPU time may start up to one folded sample late. The cost
// of a sample is measured by BenchmarkCollect.
//
// # Ending
//
// The server ends by itself when R, or a member loadlab reaped, exits with a non-zero
// status or a signal (a crash: the rest of the tree is then stopped as Stop would), or
// when no member is left (R exiting with status 0 while members remain is a daemon that
// forked, and the watch goes on). Stop sends Spec.StopSignal to group G and to every
// member, so that neither a daemon that left G nor the child of a shell wrapper
// (sh -c "puma ...") is missed; pidfds make sure a reused pid is never signalled.
// It waits up to Spec.Grace, then
// sends SIGKILL until nothing of the tree is alive and every zombie loadlab owns is
// reaped. Cancelling the context given to Start stops the server the same way.
//
// Pdeathsig kills R if loadlab dies, but not R's children. For them, each Start also
// starts a watchdog (watchdog_linux.go): the same executable in its own process group,
// reading a pipe that only loadlab writes. When loadlab dies, however, the pipe closes
// and the watchdog ends every process in G or carrying R's mark (TreeMarkEnv in its
// environment), Spec.StopSignal then SIGKILL after Spec.Grace. A process that both left
// G and dropped the mark escapes it, as does one of another user that left G.
//
// # Outside Linux
//
// On macOS, the BSDs and Windows, Process and Sampler are the portable watcher
// (pprocess.go, psampler.go, pstree.go), which builds and is tested on Linux too. The
// tree is R and its descendants, found by parent links in the table of all processes
// (one sysctl on macOS, one snapshot on Windows), plus rule 4; rule 3 does not exist,
// as there is no subreaper: a daemon's orphans are reparented to launchd or init and
// are neither counted nor stopped. Each member is measured with github.com/shirou/gopsutil/v4:
// CPU user and system time (up to its last sample, for members that exit; the root's
// exact totals once waited for), RSS, threads and open files (handles on Windows).
// PSS, swap and major faults are not available: PSS reads RSS (Summary.PSSFromRSS),
// swap and major faults read 0, and Summary.Unmeasured names them, so that a report
// says "not measured" rather than 0. CPU capacity is the number of CPUs.
//
// macOS and the BSDs: R starts in its own process group; Stop sends StopSignal to the
// group and to every member, then SIGKILL after Grace, as on Linux but without pidfds
// (a pid reused within one stop poll could be hit). There is no Pdeathsig: a server
// outlives a loadlab that is killed. Windows: Spec.Shell runs with cmd.exe /C rather
// than /bin/sh -c, and R starts in a new process group, but Windows cannot send it
// SIGTERM or SIGINT, so Stop terminates every member at once
// (TerminateProcess): StopSignal and Grace do not apply. A job object, which would
// also hold processes started between two scans and end the tree with loadlab, is not
// used yet.
//
// Side effect: being a subreaper is a property of the whole loadlab process, so orphans
// of any other child it starts become its zombies too, and nothing reaps those.
package server
