// Package layering holds no code: its test keeps loadlab's two towers apart.
//
// The engine tower sends load: runner, engine, httpx, journey, server,
// limits (and target, the test server). The analysis tower reads results
// and says what they mean: experiment, capacity, history, report, stats,
// cost, threshold, metrics, result, store, chart. The analysis never links
// the engine, so that a change to how requests are sent cannot change a
// verdict, and a reader of results (loadlab report, compare, history) needs
// none of it. internal/drive is where the two meet: it runs what an
// experiment or a capacity search asks for.
package layering
