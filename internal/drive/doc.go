// Package drive makes the runs that an analysis asks for: an experiment's
// sweep over its points (Sweep), a capacity search (Search, whose steps
// a Stepper makes, or a fake in tests), and a duet of two plans run at
// once (Duet, judged by experiment.DuetOfSides).
//
// It is where the two towers meet. Below it, on the engine side, runner
// sends a plan's load; beside that, experiment and capacity only analyse
// results and decide what to run next, and import neither runner nor the
// engine (layering_test.go at the root of internal/ keeps it so). drive
// imports both sides (report too: experiment.json keeps the verdict in
// words, which only report writes) and nothing imports drive but
// cmd/loadlab.
package drive
