package main

import (
	"fmt"
	"os"
	"regexp"

	"github.com/spf13/cobra"

	"github.com/loadlab/loadlab/internal/dashboard"
)

// looksLikeAddr matches what --dashboard takes: HOST:PORT, :PORT, a port.
var looksLikeAddr = regexp.MustCompile(`^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]*):[0-9]{1,5}$|^[0-9]{1,5}$`)

// dashboardArgs checks, before check, that no argument is --dashboard's
// address written with a space: --dashboard takes its value only after
// "=" (alone it means the default address), so `--dashboard :5666 plan.yaml`
// would otherwise read ":5666" as the plan, or find two plans.
func dashboardArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		fl := c.Flags().Lookup("dashboard")
		if fl != nil && fl.Changed && fl.Value.String() == dashboard.DefaultAddr {
			for _, a := range args {
				if !looksLikeAddr.MatchString(a) {
					continue
				}
				if _, err := os.Stat(a); err == nil {
					continue // a file of that name: a plan after all
				}
				return usageError(fmt.Errorf("%q is not a plan: --dashboard takes its address after \"=\": write --dashboard=%s (--dashboard alone serves %s)", a, a, dashboard.DefaultAddr))
			}
		}
		return check(c, args)
	}
}
