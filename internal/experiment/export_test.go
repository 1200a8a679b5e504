package experiment

// ReanalyzeFrom gives back o's results and verdicts them again, as loading
// an experiment.json does: for the tests of package experiment_test.
func ReanalyzeFrom(back, o *Outcome) {
	back.results = o.results
	back.Verdict = nil
	back.reanalyze()
}
