// Package experiment runs experiments: it expands a plan's params into
// points, orders their repeated runs (interleaved, shuffled with a seed),
// keeps each finished run so that an interrupted experiment resumes, and
// computes the verdict; it compares results and experiments too. Each run
// itself is internal/runner's.
package experiment
