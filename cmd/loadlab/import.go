package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/loadlab/loadlab/internal/importer"
	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/runner"
)

func newImportCommand(io *stdio) *cobra.Command {
	c := &cobra.Command{
		Use:   "import",
		Short: "Turn a recording into a plan",
	}
	c.AddCommand(newImportHARCommand(io))
	return c
}

func newImportHARCommand(io *stdio) *cobra.Command {
	var (
		out, think, assets string
		target             string
		hosts              []string
		check              bool
	)
	c := &cobra.Command{
		Use:   "har FILE.har",
		Short: "Turn a browser's HAR recording into a plan that passes on replay",
		Long: `Turn a HAR 1.2 recording (DevTools "Save all as HAR", Playwright's recordHar)
into a plan. A value that a request sent and an earlier response gave (a CSRF
token in a form or <meta name="csrf-token">, an id in a Location header or a
JSON body, a bearer token from JSON) becomes a capture where it first appeared
and a template where it is used; each is reported with why. Cookies are left
to the cookie jar. Stylesheets, scripts, images, fonts and favicons are
dropped, and so are hosts other than the target's (the origin of the first
page), unless named with --host. Typed passwords and Authorization values that
no response gave become secret: true variables, not written: pass them with
-e NAME=VALUE. Think times come from the recording, capped.`,
		Example: `  loadlab import har session.har -o journey.yaml
  loadlab import har session.har -o journey.yaml --check        # replay it once, 1 VU
  loadlab import har session.har --host api.shop.example --think max=2s`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts := importer.Options{Hosts: hosts, Target: target}
			if think != "" {
				v, ok := strings.CutPrefix(think, "max=")
				d, err := time.ParseDuration(v)
				if !ok || err != nil || d < 0 {
					return usageError(fmt.Errorf("import har: --think %q: want max=DURATION, such as max=5s (max=0 drops think times)", think))
				}
				opts.ThinkMax = d
				if d == 0 {
					opts.ThinkMax = -1
				}
			}
			if assets != "drop" {
				return usageError(fmt.Errorf("import har: --assets %q: only drop is implemented so far (keep is not)", assets))
			}
			file := args[0]
			data, err := os.ReadFile(file)
			if err != nil {
				return usageError(fmt.Errorf("import har: %w", err))
			}
			res, err := importer.HAR(file, data, opts)
			if err != nil {
				if errors.Is(err, importer.ErrInput) {
					return usageError(fmt.Errorf("import har: %w", err))
				}
				return failedError(fmt.Errorf("import har: %w", err))
			}
			w := io.err
			fmt.Fprintf(w, "imported %d requests to %s from %s\n", res.Steps, res.Target, file)
			for _, l := range res.Inferred {
				fmt.Fprintf(w, "  capture %s\n", l)
			}
			for _, l := range res.Secrets {
				fmt.Fprintf(w, "  secret  %s\n", l)
			}
			if len(res.Assets) > 0 {
				fmt.Fprintf(w, "dropped %d assets (stylesheets, scripts, images, fonts):\n", len(res.Assets))
				for _, a := range res.Assets {
					fmt.Fprintf(w, "  %s\n", a)
				}
			}
			if len(res.Hosts) > 0 {
				fmt.Fprintf(w, "dropped other hosts (keep one with --host):\n")
				for _, h := range res.Hosts {
					fmt.Fprintf(w, "  %s\n", h)
				}
			}
			planFile := out
			if out != "" {
				if err := os.WriteFile(out, res.Plan, 0o644); err != nil {
					return failedError(fmt.Errorf("import har: %w", err))
				}
				fmt.Fprintf(w, "plan: %s\n", out)
			} else {
				planFile = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file)) + ".yaml"
				if _, err := io.out.Write(res.Plan); err != nil {
					return failedError(fmt.Errorf("import har: %w", err))
				}
			}
			if !check {
				return nil
			}
			return checkImported(c, io, planFile, res)
		},
	}
	fl := c.Flags()
	fl.StringVarP(&out, "output", "o", "", "write the plan to this file (default: standard output)")
	fl.StringSliceVar(&hosts, "host", nil, "keep requests to this host too (repeat, or comma-separated)")
	fl.StringVar(&think, "think", "", "cap the recorded think times: max=5s (the default), max=0 drops them")
	fl.StringVar(&assets, "assets", "drop", "drop: stylesheets, scripts, images and fonts are left out")
	fl.StringVar(&target, "target", "", "the plan's target instead of the recorded origin (a fresh server, staging)")
	fl.BoolVar(&check, "check", false, "run the imported plan once with 1 VU and say whether it passed")
	return c
}

// checkImported runs the imported plan once, one VU, with the recording's
// secrets (in memory only), and says whether every check passed.
func checkImported(c *cobra.Command, io *stdio, file string, res *importer.Result) error {
	p, err := plan.Parse(file, res.Plan, plan.Options{Env: res.SecretValues, LookupEnv: os.LookupEnv, Set: []string{"load.closed.vus=1", "load.closed.iterations=1"}})
	if err != nil {
		return failedError(fmt.Errorf("import har: --check: the imported plan does not load (a bug in the importer): %w", err))
	}
	r, err := runner.Plan(c.Context(), p, runner.Options{Dir: ""})
	if r == nil {
		return failedError(fmt.Errorf("import har: --check: %w", err))
	}
	s := r.Summary
	if s.Checks.Failed == 0 && s.Aborted == 0 && s.Iterations == 1 {
		fmt.Fprintf(io.err, "check: passed: 1 journey, %d requests, %d of %d checks passed against %s\n", s.Requests, s.Checks.Passed, s.Checks.Passed+s.Checks.Failed, res.Target)
		return nil
	}
	fmt.Fprintf(io.err, "check: FAILED: %d of %d checks passed, %d journeys completed, %d could not go on%s\n", s.Checks.Passed, s.Checks.Passed+s.Checks.Failed, s.Iterations, s.Aborted, firstAbort(r.Aborts))
	for _, st := range r.Steps {
		if fc := st.FailedCheck; fc != nil {
			fmt.Fprintf(io.err, "  %s: %d checks failed, the first: %s (status %d)%s\n", st.Name, st.Summary.Checks.Failed, fc.Check, fc.Status, why(fc.Error))
		}
	}
	return thresholdError(errors.New("import har: --check: the imported plan did not pass on replay"))
}

func why(e string) string {
	if e == "" {
		return ""
	}
	return ": " + e
}
