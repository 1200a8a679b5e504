package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

var updateCLI = flag.Bool("update-cli", false, "rewrite docs/cli.md from the commands")

// commands is every command of the tree under root, in the order of
// docs/cli.md: depth first, each command's subcommands by name.
func commands(root *cobra.Command) []*cobra.Command {
	var list []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		if c != root {
			list = append(list, c)
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	return list
}

// visibleFlags are a command's own flags as --help lists them, by name.
func visibleFlags(c *cobra.Command) []*pflag.Flag {
	var list []*pflag.Flag
	c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			list = append(list, f)
		}
	})
	return list
}

func commandName(c *cobra.Command) string { return strings.TrimPrefix(c.CommandPath(), "loadlab ") }

func flagType(f *pflag.Flag) string {
	switch t := f.Value.Type(); t {
	case "stringArray", "stringSlice":
		return "string, repeatable"
	case "bool":
		return ""
	default:
		return t
	}
}

func cell(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ") }

// cliReference is docs/cli.md: every visible flag of every command, from
// the commands themselves, and the old names that still work.
func cliReference(root *cobra.Command) []byte {
	var b bytes.Buffer
	b.WriteString(`# Command-line reference

Every flag of every loadlab command, generated from the commands themselves
(` + "`go generate ./cmd/loadlab`" + ` rewrites this file; TestCLIReference fails
when it is stale). A flag name means one thing on every
command that has it. Every command also takes ` + "`-h, --help`" + `;
` + "`loadlab --version`" + ` prints what ` + "`loadlab version`" + ` does.
Exit codes: 0 success, 1 the run failed, 2 invalid input (no load sent),
3 a threshold or a compare verdict failed.

`)
	cmds := commands(root)
	for _, c := range cmds {
		fmt.Fprintf(&b, "- [loadlab %s](#loadlab-%s): %s\n", commandName(c), strings.ReplaceAll(commandName(c), " ", "-"), c.Short)
	}
	var aliases []string
	for _, c := range cmds {
		fmt.Fprintf(&b, "\n## loadlab %s\n\n%s.\n\n", commandName(c), strings.TrimSuffix(c.Short, "."))
		fmt.Fprintf(&b, "```\n%s\n```\n", c.UseLine())
		fl := visibleFlags(c)
		if len(fl) == 0 {
			b.WriteString("\nNo flags of its own.\n")
		} else {
			b.WriteString("\n| Flag | Value | Default | What it does |\n|---|---|---|---|\n")
			for _, f := range fl {
				name := "`--" + f.Name + "`"
				if f.Shorthand != "" {
					name = "`-" + f.Shorthand + ", --" + f.Name + "`"
				}
				def := f.DefValue
				if def == "" || def == "[]" || def == "false" || (def == "0" && f.Value.Type() != "int") {
					def = ""
				} else {
					def = "`" + def + "`"
				}
				if f.NoOptDefVal != "" && f.Value.Type() != "bool" {
					def = strings.TrimSpace(def + " (alone: `" + f.NoOptDefVal + "`)")
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", name, cell(flagType(f)), cell(def), cell(f.Usage))
			}
		}
		c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
			if cur := f.Annotations[aliasOf]; len(cur) == 1 {
				aliases = append(aliases, fmt.Sprintf("| `loadlab %s` | `--%s` | `--%s` |", commandName(c), f.Name, cur[0]))
			}
		})
	}
	if len(aliases) > 0 {
		b.WriteString("\n## Old names\n\nRenamed so that a name means one thing across commands, these still work,\nhidden, and say what they are called now.\n\n| Command | Old | Now |\n|---|---|---|\n")
		b.WriteString(strings.Join(aliases, "\n") + "\n")
	}
	return b.Bytes()
}

func newTestRoot() *cobra.Command {
	return newRoot(&stdio{in: strings.NewReader(""), out: new(bytes.Buffer), err: new(bytes.Buffer), isTerminal: isTerminal})
}

// TestCLIReference: docs/cli.md is what the commands say today.
func TestCLIReference(t *testing.T) {
	t.Parallel()
	path := filepath.Join("..", "..", "docs", "cli.md")
	got := cliReference(newTestRoot())
	if *updateCLI {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go generate ./cmd/loadlab writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("docs/cli.md is stale: go generate ./cmd/loadlab rewrites it")
	}
}

// sharedFlags is every flag name that two or more commands have, with what
// it means on each of them and which commands they are. A name given to
// one more command fails TestFlagMeanings until it is added here, which is
// the moment to ask whether it means the same there; if it does not, the
// new flag wants another name.
var sharedFlags = map[string]struct {
	means string
	on    string // the commands, space-separated, in docs/cli.md's order
}{
	"addr":             {"the address a server listens on", "demo serve, target"},
	"allow-different":  {"compare two sides that measured different things", "compare, report"},
	"connections":      {"quick mode's connections (closed load), or the most at once", "ab, run"},
	"duration":         {"how long quick mode's load lasts", "ab, run"},
	"fail-on":          {"exit 3 when B is worse than A beyond a rule", "ab, compare"},
	"body":             {"the request body sent", "capacity, run"},
	"check":            {"run the imported plan once with 1 VU", "import har, import k6"},
	"dashboard":        {"serve the live page on this address", "capacity, run"},
	"dashboard-linger": {"keep the dashboard served after the load", "capacity, run"},
	"env":              {"set {{ env.KEY }}", "ab, capacity, k8s, run"},
	"event-loops":      {"loadlab's event loops (threads) sending load", "ab, capacity, demo, run"},
	"format":           {"the output's format", "history, report"},
	"fresh":            {"forget what the results directory keeps and start over", "ab, capacity, run"},
	"header":           {"a request header sent", "capacity, run"},
	"history":          {"the history database", "compare, history, run"},
	"json":             {"print the summary as JSON", "ab, capacity, compare, demo, history, merge, report, run"},
	"method":           {"the request method", "capacity, run"},
	"metrics-addr":     {"serve the live figures at /metrics on this address", "capacity, run"},
	"metrics-linger":   {"keep /metrics up after the load", "capacity, run"},
	"open":             {"open the dashboard in a browser", "capacity, run"},
	"out":              {"the results directory", "ab, capacity, demo, merge, run"},
	"output":           {"the file to write (default: standard output)", "import har, import k6, k8s"},
	"point-a":          {"the point of the first experiment compared", "compare, report"},
	"point-b":          {"the point of the second experiment compared", "compare, report"},
	"rate":             {"an open load's arrival rate (capacity: the search's first)", "ab, capacity, run"},
	"set":              {"override a plan field", "ab, capacity, k8s, run"},
	"start-at":         {"the wall-clock instant the schedule starts", "k8s, run"},
	"summary":          {"an experiment's summary: compact or full", "ab, demo, report, run"},
	"target":           {"the imported plan's target", "import har, import k6"},
	"threshold":        {"a threshold clause the run is judged by", "capacity, run"},
	"url":              {"the URL loaded, without a plan", "capacity, run"},
	"workers":          {"the server's requests served at once", "demo serve, target"},
}

// twoMeanings are the flag names that still mean two things, each with the
// reason it is not renamed yet. Empty: keep it so.
var twoMeanings = map[string]string{}

// summaries is every command, with "" when it prints a summary of figures
// (and so takes --json), or what it prints instead.
var summaries = map[string]string{
	"ab":         "",
	"capacity":   "",
	"compare":    "",
	"history":    "",
	"merge":      "",
	"report":     "",
	"run":        "",
	"demo":       "",
	"demo serve": "a server: the line with its address",
	"target":     "a server: the line with its address",
	"import":     "nothing: its subcommands do the work",
	"import har": "a plan file",
	"import k6":  "a plan file",
	"k8s":        "Kubernetes manifests",
	"version":    "its version",
}

// noJSON are the commands that print a summary without --json, each with
// its reason.
var noJSON = map[string]string{}

// TestFlagMeanings: a flag name means one thing on every command that has
// it (same kind of value, same shorthand, and listed in sharedFlags); a
// shorthand names one flag; an old name is hidden and names a flag that
// exists; every command that prints a summary takes --json.
func TestFlagMeanings(t *testing.T) {
	t.Parallel()
	root := newTestRoot()
	on := map[string][]string{}
	kind := map[string]map[string][]string{} // name -> type -> commands
	short := map[string]string{}             // shorthand -> name
	for _, c := range commands(root) {
		name := commandName(c)
		for _, f := range visibleFlags(c) {
			on[f.Name] = append(on[f.Name], name)
			if kind[f.Name] == nil {
				kind[f.Name] = map[string][]string{}
			}
			kind[f.Name][f.Value.Type()] = append(kind[f.Name][f.Value.Type()], name)
			if f.Shorthand != "" {
				if other, ok := short[f.Shorthand]; ok && other != f.Name {
					t.Errorf("-%s is --%s on some commands and --%s on %s", f.Shorthand, other, f.Name, name)
				}
				short[f.Shorthand] = f.Name
			}
		}
		c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
			cur := f.Annotations[aliasOf]
			if len(cur) == 0 {
				return
			}
			if !f.Hidden {
				t.Errorf("%s: the old name --%s is not hidden", name, f.Name)
			}
			if n := c.LocalNonPersistentFlags().Lookup(cur[0]); n == nil || n.Hidden {
				t.Errorf("%s: the old name --%s names --%s, which it does not have", name, f.Name, cur[0])
			}
		})
		reason, ok := summaries[name]
		switch {
		case !ok:
			t.Errorf("%s: a new command: add it to summaries, with whether it prints a summary (and so takes --json)", name)
		case reason == "" && c.LocalNonPersistentFlags().Lookup("json") == nil && noJSON[name] == "":
			t.Errorf("%s prints a summary but has no --json", name)
		case reason == "" && c.LocalNonPersistentFlags().Lookup("json") != nil && noJSON[name] != "":
			t.Errorf("%s has --json now: take it out of noJSON", name)
		}
	}
	for name, cmds := range on {
		if len(kind[name]) > 1 {
			t.Errorf("--%s takes different kinds of value: %v", name, kind[name])
		}
		if len(cmds) < 2 {
			if _, ok := sharedFlags[name]; ok {
				t.Errorf("--%s is on %s alone now: take it out of sharedFlags", name, cmds[0])
			}
			continue
		}
		sort.Strings(cmds)
		s, ok := sharedFlags[name]
		switch {
		case !ok && twoMeanings[name] == "":
			t.Errorf("--%s is on %s: if it means one thing there, add it to sharedFlags with what; if not, give one of them another name", name, strings.Join(cmds, ", "))
		case ok && s.on != strings.Join(cmds, ", "):
			t.Errorf("--%s is on %s (sharedFlags says %s): does it mean %q on each? Then say so in sharedFlags; if not, give it another name", name, strings.Join(cmds, ", "), s.on, s.means)
		}
	}
	for name := range sharedFlags {
		if _, ok := on[name]; !ok {
			t.Errorf("sharedFlags lists --%s, which no command has", name)
		}
	}
	for name := range twoMeanings {
		if _, ok := sharedFlags[name]; ok {
			t.Errorf("--%s is in both sharedFlags and twoMeanings", name)
		}
	}
	for name := range summaries {
		if !slices.ContainsFunc(commands(root), func(c *cobra.Command) bool { return commandName(c) == name }) {
			t.Errorf("summaries lists %q, which is no command", name)
		}
	}
}

// TestOldFlagNames: an old flag name still sets the flag, and says once
// what it is called now. No load is sent: each value is refused.
func TestOldFlagNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "plan.yaml", "--workers", "-2"}, "loadlab: run: --workers is now --event-loops (the old name still works, for now)\nloadlab: run: --event-loops must not be negative, got -2\n"},
		{[]string{"capacity", "--url", "http://127.0.0.1:1/", "--workers", "-2"}, "loadlab: capacity: --workers is now --event-loops (the old name still works, for now)\n"},
		{[]string{"demo", "--workers", "-1"}, "loadlab: demo: --workers is now --event-loops (the old name still works, for now)\nloadlab: demo: --event-loops must not be negative, got -1\n"},
		{[]string{"run", "--url", "http://127.0.0.1:1/", "-n", "1", "--output", "influx=http://127.0.0.1:1/"}, "loadlab: run: --output is now --push (the old name still works, for now)\nloadlab: run: --push \"influx=http://127.0.0.1:1/\": unknown output \"influx\": want prometheus-rw=URL or otlp=URL\n"},
		{[]string{"target", "--body", "5x"}, "loadlab: target: --body is now --body-size (the old name still works, for now)\nloadlab: target: --body-size: bad size \"5x\" (up to 64MiB)\n"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			_, stderr, code := cli(t.Context(), t, tc.args...)
			if code != 2 || !strings.HasPrefix(stderr, tc.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and:\n%s", code, stderr, tc.want)
			}
		})
	}
}
