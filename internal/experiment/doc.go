// Package experiment runs experiments: it expands a plan's params into
// points, orders their repeated runs (interleaved, shuffled with a seed),
// keeps each finished run so that an interrupted experiment resumes, and
// computes the verdict; it compares results and experiments too. Each run
// itself is internal/runner's.
//
// The verdict is data: comparisons carry typed outcomes (significant, not
// significant, or untested with its reason), figures have IDs, and a
// recommendation is its chosen point with its evidence. The English, JSON,
// HTML, markdown and CSV of a verdict are internal/report's.
package experiment
