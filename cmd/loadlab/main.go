// Command loadlab is a load-testing and performance-experiment tool for web
// servers. main only wires the process to run, which tests drive directly.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stopProfile := profile(os.Getenv("LOADLAB_CPUPROFILE"))
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stopProfile()
	stop()
	os.Exit(reportExit(err, os.Stderr))
}

// profile writes a CPU profile to path when it is set: a tool for loadlab's
// developers measuring its hot path (LOADLAB_CPUPROFILE=cpu.out loadlab run ...).
func profile(path string) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadlab: LOADLAB_CPUPROFILE:", err)
		return func() {}
	}
	pprof.StartCPUProfile(f)
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// reportExit prints err as one line and returns the process exit code.
func reportExit(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) && ee.silent {
		return ee.code
	}
	fmt.Fprintf(stderr, "loadlab: %v\n", err)
	return exitCode(err)
}
