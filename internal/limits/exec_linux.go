//go:build linux

package limits

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The server's first process must be inside its cgroups from its first
// instruction, so that nothing it forks or allocates escapes them. cgroup
// v2 can do that with clone3's CLONE_INTO_CGROUP (SysProcAttr.CgroupFD), but
// v1 has no such call, and neither sets CPU affinity. So the server is
// started as loadlab's own executable again, with execEnv set: that process
// writes its pid into each cgroup's cgroup.procs, sets its affinity, and
// execs the server's command in place (same pid, same process group,
// Pdeathsig kept). One path for v1, v2 and affinity; its cost is one start of
// the loadlab binary, a few milliseconds, before the server's own.
const execEnv = "LOADLAB_INTERNAL_LIMITS"

// init, against the habit of no init(), as the server package's watchdog:
// every executable that starts a limited server (loadlab, and each test
// binary) must turn into the helper when re-executed so, before its own
// main runs.
func init() {
	v, ok := os.LookupEnv(execEnv)
	if !ok {
		return
	}
	os.Exit(runExec(v, os.Args[1:]))
}

// Command wraps cmd, made by exec.Command, so that it starts inside g.
func (g *Group) Command(cmd *exec.Cmd) {
	var spec strings.Builder
	for _, d := range g.dirs {
		fmt.Fprintf(&spec, "procs\t%s/cgroup.procs\n", d)
	}
	if g.affinity != nil {
		fmt.Fprintf(&spec, "cpus\t%s\n", FormatList(g.affinity))
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(env, execEnv+"="+spec.String())
	cmd.Args = append([]string{"loadlab-limits", cmd.Path}, cmd.Args...)
	cmd.Path = "/proc/self/exe"
}

// runExec is the helper: args are the command's path and its argv.
func runExec(spec string, args []string) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "loadlab: starting the server in its limits: "+format+"\n", a...)
		return 126
	}
	if len(args) < 2 {
		return fail("bad arguments")
	}
	// Affinity belongs to a thread; execve keeps the calling thread's.
	runtime.LockOSThread()
	for _, line := range strings.Split(spec, "\n") {
		key, value, _ := strings.Cut(line, "\t")
		switch key {
		case "procs":
			if err := os.WriteFile(value, []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
				return fail("joining cgroup: %v", err)
			}
		case "cpus":
			list, err := ParseList(value)
			if err != nil {
				return fail("%v", err)
			}
			var set unix.CPUSet
			for _, c := range list {
				set.Set(c)
			}
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				return fail("setting CPU affinity %s: %v", value, err)
			}
		}
	}
	env := os.Environ()
	kept := env[:0]
	for _, e := range env {
		if !strings.HasPrefix(e, execEnv+"=") {
			kept = append(kept, e)
		}
	}
	err := syscall.Exec(args[0], args[1:], kept)
	return fail("exec %s: %v", args[0], err)
}
