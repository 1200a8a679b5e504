// Package demo holds loadlab's built-in demonstration: the shop (package
// shop), a web app that behaves like a small Rails store, and the
// experiment `loadlab demo` runs against it: the Puma threads study of
// DESIGN.md, workers 1, 2, 4, 6 and 8 with fifty guest checkouts, five
// repeats (enough for differences to be significant at α = 0.05).
package demo

import (
	_ "embed"
	"strings"
	"time"
)

// Plan is the demo experiment's plan file.
//
//go:embed plan.yaml
var Plan []byte

// Settings of the shop during the demo: lighter than the shop's defaults so
// that the whole sweep (25 runs) takes about a minute on two cores, and
// heavy enough that the CPU saturates at a few workers.
const (
	DBLatency = 1 * time.Millisecond
	CPUWork   = 12 * time.Millisecond
)

// Env is what the plan reads from the environment: the loadlab binary that
// serves the shop and the address it listens on.
func Env(bin, addr string) map[string]string {
	return map[string]string{
		"LOADLAB_DEMO_BIN":        bin,
		"LOADLAB_DEMO_ADDR":       addr,
		"LOADLAB_DEMO_DB_LATENCY": DBLatency.String(),
		"LOADLAB_DEMO_CPU_WORK":   CPUWork.String(),
	}
}

// Written is the plan as loadlab demo writes it beside its results: with
// the values of Env in place of the environment variables, so that
// `loadlab run loadlab-demo/demo.yaml` runs it again as it is.
func Written(bin, addr string) []byte {
	var pairs []string
	for name, value := range Env(bin, addr) {
		// Every reference sits in a double-quoted YAML string.
		value = strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(value)
		pairs = append(pairs, "{{ env."+name+" }}", value)
	}
	text := strings.NewReplacer(pairs...).Replace(string(Plan))
	return []byte(strings.Replace(text, "# requests per second, request duration and elapsed time against workers.\n",
		"# requests per second, request duration and elapsed time against workers.\n# Written by loadlab demo for this machine: loadlab run loadlab-demo/demo.yaml\n", 1))
}
