package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
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
	c.AddCommand(newImportK6Command(io))
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
dropped (--assets keep: kept as steps named "asset ..." after their page,
in one parallel group per page, fetched at once as a browser does), and so are hosts other than the target's (the
origin of the first page), unless named with --host. Typed passwords and
Authorization values that no response gave become secret: true variables
read from the environment (password: LOADLAB_PASSWORD), never written.
Think times come from the recording, capped.`,
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
			switch assets {
			case "drop":
			case "keep":
				opts.KeepAssets = true
			default:
				return usageError(fmt.Errorf("import har: --assets %q: want drop or keep", assets))
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
			for _, l := range res.Notes {
				fmt.Fprintf(w, "  note    %s\n", l)
			}
			if len(res.Assets) > 0 && opts.KeepAssets {
				fmt.Fprintf(w, "kept %d assets (stylesheets, scripts, images, fonts) as steps named \"asset METHOD PATH\" after their page, reported apart from it; each page's in one parallel group, fetched at once as a browser does (at most 6 at a time):\n", len(res.Assets))
				for _, a := range res.Assets {
					fmt.Fprintf(w, "  %s\n", a)
				}
			} else if len(res.Assets) > 0 {
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
			return checkImported(c, io, "import har", planFile, res)
		},
	}
	fl := c.Flags()
	fl.StringVarP(&out, "output", "o", "", "write the plan to this file (default: standard output)")
	fl.StringSliceVar(&hosts, "host", nil, "keep requests to this host too (repeat, or comma-separated)")
	fl.StringVar(&think, "think", "", "cap the recorded think times: max=5s (the default), max=0 drops them")
	fl.StringVar(&assets, "assets", "drop", "drop: stylesheets, scripts, images and fonts are left out; keep: kept as steps named \"asset ...\" after their page, each page's fetched in parallel")
	fl.StringVar(&target, "target", "", "the plan's target instead of the recorded origin (a fresh server, staging)")
	fl.BoolVar(&check, "check", false, "run the imported plan once with 1 VU and say whether it passed")
	return c
}

// checkImported runs the imported plan once, one VU, with the recording's
// secrets (in memory only), and says whether every check passed.
func checkImported(c *cobra.Command, io *stdio, cmd, file string, res *importer.Result) error {
	p, err := plan.Parse(file, res.Plan, plan.Options{Env: res.SecretValues, LookupEnv: os.LookupEnv, Set: []string{"load.closed.vus=1", "load.closed.iterations=1"}})
	if err != nil {
		return failedError(fmt.Errorf("%s: --check: the imported plan does not load (a bug in the importer): %w", cmd, err))
	}
	r, err := runner.Plan(c.Context(), p, runner.Options{Dir: ""})
	if r == nil {
		return failedError(fmt.Errorf("%s: --check: %w", cmd, err))
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
	return thresholdError(errors.New(cmd + ": --check: the imported plan did not pass on replay"))
}

func why(e string) string {
	if e == "" {
		return ""
	}
	return ": " + e
}

func newImportK6Command(io *stdio) *cobra.Command {
	var (
		out, target string
		check       bool
	)
	c := &cobra.Command{
		Use:   "k6 SCRIPT.js",
		Short: "Turn a k6 script into an equivalent plan",
		Long: `Turn a k6 script into a plan: http.get, post, put, del, patch and request
(with headers, tags.name as the step's name, redirects: 0), check (r.status
=== N, r.body.includes(TEXT)), sleep (N, Math.random() * N,
randomIntBetween), group; res.json(PATH) and res.headers[NAME] as captures;
__VU, __ITER and __ENV; a SharedArray of a CSV (papaparse) or a JSON file
(written beside the plan as CSV); options vus, iterations, duration, stages and scenarios (constant-vus,
per-vu-iterations, shared-iterations, ramping-vus, constant-arrival-rate,
ramping-arrival-rate) and thresholds, in loadlab's grammar. What has no
equivalent is listed with its line:col and left in the plan as a
"# not converted:" comment at its place.`,
		Example: `  loadlab import k6 script.js -o plan.yaml
  loadlab import k6 script.js -o plan.yaml --check     # run it once, 1 VU`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			file := args[0]
			data, err := os.ReadFile(file)
			if err != nil {
				return usageError(fmt.Errorf("import k6: %w", err))
			}
			res, err := importer.K6(file, data, importer.Options{Target: target})
			if err != nil {
				if errors.Is(err, importer.ErrScript) {
					return usageError(fmt.Errorf("import k6: %w", err))
				}
				return failedError(fmt.Errorf("import k6: %w", err))
			}
			w := io.err
			fmt.Fprintf(w, "imported %d requests to %s from %s\n", res.Steps, res.Target, file)
			if len(res.NotConverted) > 0 {
				fmt.Fprintf(w, "not converted (a \"# not converted:\" comment marks each in the plan):\n")
				for _, l := range res.NotConverted {
					fmt.Fprintf(w, "  %s:%s\n", file, l)
				}
			}
			dir := "."
			planFile := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file)) + ".yaml"
			if out != "" {
				dir, planFile = filepath.Dir(out), out
			}
			names := make([]string, 0, len(res.Files))
			for n := range res.Files {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				p := filepath.Join(dir, n)
				if err := os.WriteFile(p, res.Files[n], 0o644); err != nil {
					return failedError(fmt.Errorf("import k6: %w", err))
				}
				fmt.Fprintf(w, "data: %s\n", p)
			}
			if out != "" {
				if err := os.WriteFile(out, res.Plan, 0o644); err != nil {
					return failedError(fmt.Errorf("import k6: %w", err))
				}
				fmt.Fprintf(w, "plan: %s\n", out)
			} else if _, err := io.out.Write(res.Plan); err != nil {
				return failedError(fmt.Errorf("import k6: %w", err))
			}
			if !check {
				return nil
			}
			once := res.Result
			once.Plan = res.CheckPlan
			return checkImported(c, io, "import k6", planFile, &once)
		},
	}
	fl := c.Flags()
	fl.StringVarP(&out, "output", "o", "", "write the plan to this file, its data files beside it (default: standard output, data files here)")
	fl.StringVar(&target, "target", "", "the plan's target instead of the script's first origin")
	fl.BoolVar(&check, "check", false, "run the imported journeys once with 1 VU and say whether they passed")
	return c
}
