package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	buildversion "github.com/loadlab/loadlab/internal/version"
)

// stdio is the process state a command may touch, so that tests can run the
// real command with their own streams.
type stdio struct {
	in         io.Reader
	out, err   io.Writer
	isTerminal func(w io.Writer) bool
}

// run executes the loadlab command line in args.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	io := &stdio{in: stdin, out: stdout, err: stderr, isTerminal: isTerminal}
	root := newRoot(io)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	_, err := root.ExecuteContextC(ctx)
	var ee *exitError
	if err != nil && !errors.As(err, &ee) && strings.HasPrefix(err.Error(), "unknown command") {
		return usageError(err)
	}
	return err
}

func newRoot(io *stdio) *cobra.Command {
	root := &cobra.Command{
		Use:   "loadlab",
		Short: "Load tests and performance experiments for web servers",
		Long: `loadlab measures web servers honestly and answers tuning questions.

Exit codes: 0 success; 1 the run failed (target unreachable, no response at
all, server crashed, interrupted); 2 invalid input (flags, plan file), no load sent; 3 a threshold
or a compare verdict failed, or a capacity search's first rate broke its SLO.`,
		Version:       version(),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	// `loadlab --version` prints what `loadlab version` does.
	root.SetVersionTemplate("loadlab {{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if fe := (*flagValueError)(nil); errors.As(err, &fe) {
			// A value of the flag's kind that loadlab refuses says why itself.
			return usageError(fmt.Errorf("%s: %w", strings.TrimPrefix(c.CommandPath(), "loadlab "), fe))
		}
		return usageError(fmt.Errorf("%s: %s (see %s --help)", strings.TrimPrefix(c.CommandPath(), "loadlab "), plainFlagError(err), c.CommandPath()))
	})
	root.AddCommand(newRunCommand(io), newDemoCommand(io), newCompareCommand(io), newABCommand(io), newHistoryCommand(io), newReportCommand(io), newTargetCommand(io), newVersionCommand(io), newCapacityCommand(io), newMergeCommand(io), newImportCommand(io), newK8sCommand(io))
	wrapArgs(root)
	noticeAliases(root, io)
	return root
}

var strconvError = regexp.MustCompile(`: strconv\.Parse(Int|Uint|Float|Bool): parsing "[^"]*": (invalid syntax|value out of range)$`)

// plainFlagError says what a flag wants instead of how Go failed to parse
// it: `invalid argument "abc" for "-c, --connections" flag: want a whole
// number`, not `strconv.ParseInt: parsing "abc": invalid syntax`.
func plainFlagError(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, ": time: "); i >= 0 && strings.Contains(msg[i:], "duration") {
		return msg[:i] + ": want a duration such as 500ms, 30s or 2m"
	}
	m := strconvError.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	want := map[string]string{"Int": "want a whole number", "Uint": "want a whole number, 0 or more", "Float": "want a number", "Bool": "want true or false"}[m[1]]
	if m[2] == "value out of range" {
		want = "out of range"
	}
	return strings.TrimSuffix(msg, m[0]) + ": " + want
}

// wrapArgs makes the argument-count errors of c's subcommands usage errors,
// worded like the flag errors: "run: accepts at most 1 arg(s), received 2
// (see loadlab run --help)".
func wrapArgs(parent *cobra.Command) {
	for _, c := range parent.Commands() {
		wrapArgs(c)
		check := c.Args
		if check == nil {
			continue
		}
		c.Args = func(c *cobra.Command, args []string) error {
			if err := check(c, args); err != nil {
				return usageError(fmt.Errorf("%s: %w (see %s --help)", strings.TrimPrefix(c.CommandPath(), "loadlab "), err, c.CommandPath()))
			}
			return nil
		}
	}
}

// version is this build's version (see internal/version).
func version() string { return buildversion.String() }

func newVersionCommand(io *stdio) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print loadlab's version",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(io.out, "loadlab", version())
			return err
		},
	}
}
