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
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(reportExit(err, os.Stderr))
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
