package main

// docs/cli.md lists every flag of every command, from the commands.
//go:generate go test -run TestCLIReference . -update-cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// A flag renamed so that one name means one thing across commands keeps
// its old name working, hidden from --help and docs/cli.md, for the plans,
// scripts and server commands written with it. Using the old name prints a
// one-line notice on stderr before the command runs.

// aliasOf is the annotation that marks a flag as an old name: its value is
// the current name.
const aliasOf = "loadlab-alias-of"

// alias adds old as a hidden, deprecated name of fs's flag current: the
// same value, so either name sets it.
func alias(fs *pflag.FlagSet, old, current string) {
	f := fs.Lookup(current)
	if f == nil {
		panic("alias: no flag --" + current) // a programming error, caught by any test of the command
	}
	fs.Var(f.Value, old, "the old name of --"+current)
	a := fs.Lookup(old)
	a.NoOptDefVal = f.NoOptDefVal
	a.DefValue = f.DefValue
	a.Hidden = true
	_ = fs.SetAnnotation(old, aliasOf, []string{current})
}

// noticeAliases makes every command under parent say, before it runs, which
// old flag names its command line used and what they are called now.
func noticeAliases(parent *cobra.Command, io *stdio) {
	for _, c := range parent.Commands() {
		noticeAliases(c, io)
		run := c.RunE
		if run == nil {
			continue
		}
		c.RunE = func(c *cobra.Command, args []string) error {
			c.LocalFlags().VisitAll(func(f *pflag.Flag) {
				if cur := f.Annotations[aliasOf]; len(cur) == 1 && f.Changed {
					fmt.Fprintf(io.err, "loadlab: %s: --%s is now --%s (the old name still works, for now)\n", strings.TrimPrefix(c.CommandPath(), "loadlab "), f.Name, cur[0])
				}
			})
			return run(c, args)
		}
	}
}
