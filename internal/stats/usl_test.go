package stats

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// Published data sets with published USL fits. Each comment names where
// both the data and the coefficients come from.
var (
	// Cisco benchmark from Baron Schwartz, "Practical Scalability Analysis
	// with the Universal Scalability Law" (VividCortex, 2015), as used by
	// the test suites of github.com/codahale/usl (model_test.go) and
	// github.com/codahale/usl4j (src/test/java/com/codahale/usl4j/tests/
	// ModelTest.java). The book lists the fit as σ = 0.02671591,
	// κ = 7.690945e-4, λ = 995.6486, peak at N = 35 with X = 12341.
	ciscoN = []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
		17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32}
	ciscoX = []float64{955.16, 1878.91, 2688.01, 3548.68, 4315.54, 5130.43, 5931.37, 6531.08,
		7219.8, 7867.61, 8278.71, 8646.7, 9047.84, 9426.55, 9645.37, 9897.24,
		10097.6, 10240.5, 10532.39, 10798.52, 11151.43, 11518.63, 11806, 12089.37,
		12075.41, 12177.29, 12211.41, 12158.93, 12155.27, 12118.04, 12140.4, 12074.39}

	// SPEC SDM91 on a Sun SPARCcenter 2000, the `specsdm91` data set of the
	// R package usl by Stefan Möding (github.com/smoeding/usl, data/
	// specsdm91.rda; the same values as text in github.com/mookerji/sca_tools
	// fixtures/specsdm91.csv). The package's tests/usl-nlxb.Rout.save prints
	// the fit σ = 0.0277285, κ = 0.0001044, λ = 89.9952330; tests/
	// summary.Rout.save prints "Multiple R-squared: 0.9896"; tests/
	// peak-scalability.Rout.save prints signif(peak.scalability(u), 2) = 97.
	// sca_tools tests/test_usl.py (lmfit) agrees: λ = 89.995,
	// σ = 0.0277286, κ = 0.000104365.
	specsdm91N = []float64{1, 18, 36, 72, 108, 144, 216}
	specsdm91X = []float64{64.9, 995.9, 1652.4, 1853.2, 1828.9, 1775, 1702.2}

	// Ray tracer on an SGI Origin 2000, the `raytracer` data set of the R
	// package usl (data/raytracer.rda; as text in sca_tools fixtures/
	// raytracer.csv), from Gunther, Guerrilla Capacity Planning (2007).
	// tests/confint.Rout.save prints coef(u) = 0.0578, 0.0000, 21.8488 and a
	// confidence interval for κ of ±0.000214 centred on 0: the fit sits on
	// the κ >= 0 bound, so this data set has no peak.
	raytracerN = []float64{1, 4, 8, 12, 16, 20, 24, 28, 32, 48, 64}
	raytracerX = []float64{20, 78, 130, 170, 190, 200, 210, 230, 260, 280, 310}

	// Normalized capacity data of the R package usl's tests/coef.R; its
	// tests/coef.Rout.save prints signif(coef, 3): σ = 0.02, κ = 0.02 and
	// λ ("gamma") = 1.00.
	usltestN = []float64{1, 2, 4, 6, 8, 10}
	usltestX = []float64{1, 1.8868, 3.0769, 3.5294, 3.5398, 3.3557}
)

func TestFitUSLReproducesPublishedFits(t *testing.T) {
	tests := []struct {
		name      string
		n, x      []float64
		sigma     float64
		sigmaTol  float64
		kappa     float64
		kappaTol  float64
		lambda    float64
		lambdaTol float64
		hasPeak   bool
		check     func(t *testing.T, f USLFit)
	}{
		{
			// Published to 7 significant digits, but the book's fit (R's
			// nls with its default convergence tolerance) stops a little
			// short of the least-squares optimum: the 7th digit differs
			// (our SSE is lower, checked below), so the tolerance is
			// 2e-6 relative. codahale/usl tests to 1e-5, usl4j to 2e-4.
			name: "cisco (Schwartz)", n: ciscoN, x: ciscoX,
			sigma: 0.02671591, sigmaTol: 2e-6 * 0.02671591,
			kappa: 7.690945e-4, kappaTol: 2e-6 * 7.690945e-4,
			lambda: 995.6486, lambdaTol: 2e-6 * 995.6486,
			hasPeak: true,
			check: func(t *testing.T, f USLFit) {
				problem := uslProblem{n: ciscoN, x: ciscoX}
				ours := problem.sse(uslParams{lambda: f.Lambda, sigma: f.Sigma, kappa: f.Kappa})
				book := problem.sse(uslParams{lambda: 995.6486, sigma: 0.02671591, kappa: 7.690945e-4})
				if ours > book {
					t.Errorf("SSE = %.12g, above the book's %.12g: not the least-squares optimum", ours, book)
				}
				// codahale/usl: ThroughputAtConcurrency(1) = λ = 995.648772003358.
				if math.Abs(f.Lambda-995.648772003358) > 1e-5*995.648772003358 {
					t.Errorf("Lambda = %.10g, codahale/usl: 995.648772003358", f.Lambda)
				}
				if got := math.Floor(f.PeakN); got != 35 {
					t.Errorf("floor(PeakN) = %v (PeakN %v), book: 35", got, f.PeakN)
				}
				// codahale/usl: ThroughputAtConcurrency(35) = 12341.745655201905;
				// the book rounds it to 12341.
				if got := f.Throughput(35); math.Abs(got-12341.7457) > 0.01 {
					t.Errorf("Throughput(35) = %v, want 12341.7457", got)
				}
				if f.PeakThroughput < f.Throughput(35) || f.PeakThroughput > f.Throughput(35)+5 {
					t.Errorf("PeakThroughput = %v, want just above X(35) = %v", f.PeakThroughput, f.Throughput(35))
				}
			},
		},
		{
			// R prints σ and λ to 7 decimals and κ to 4 significant
			// digits; nlxb's own convergence is about 1e-7, so λ is
			// held to 1e-6.
			name: "specsdm91 (R usl)", n: specsdm91N, x: specsdm91X,
			sigma: 0.0277285, sigmaTol: 1e-7,
			kappa: 0.0001044, kappaTol: 1e-7,
			lambda: 89.9952330, lambdaTol: 1e-6,
			hasPeak: true,
			check: func(t *testing.T, f USLFit) {
				// lmfit in sca_tools prints κ to 6 significant digits.
				if math.Abs(f.Kappa-0.000104365) > 1e-9 {
					t.Errorf("Kappa = %v, sca_tools: 0.000104365", f.Kappa)
				}
				if math.Abs(f.RSquared-0.9896) > 0.00005 {
					t.Errorf("RSquared = %v, R usl: 0.9896", f.RSquared)
				}
				if got := math.Round(f.PeakN); got != 97 { // two significant digits of a number in [10, 100)
					t.Errorf("PeakN = %v, R usl: 97 to 2 significant digits", f.PeakN)
				}
				if len(f.Warnings) != 0 {
					t.Errorf("Warnings = %q, want none (the peak is inside the measured range)", f.Warnings)
				}
			},
		},
		{
			// Printed as 0.0578, 0.0000 and 21.8488: half a unit in the
			// last digit.
			name: "raytracer (R usl)", n: raytracerN, x: raytracerX,
			sigma: 0.0578, sigmaTol: 0.00005,
			kappa: 0, kappaTol: 0.00005,
			lambda: 21.8488, lambdaTol: 0.00005,
			hasPeak: false,
			check: func(t *testing.T, f USLFit) {
				if f.Kappa != 0 {
					t.Errorf("Kappa = %v, want exactly 0 (on its bound)", f.Kappa)
				}
				if want := f.Lambda / f.Sigma; f.Ceiling != want || f.PeakN != 0 || f.PeakThroughput != 0 {
					t.Errorf("Ceiling, PeakN, PeakThroughput = %v, %v, %v; want %v, 0, 0", f.Ceiling, f.PeakN, f.PeakThroughput, want)
				}
				if !strings.Contains(f.String(), "no peak (κ=0)") {
					t.Errorf("String() = %q, want it to say there is no peak", f.String())
				}
			},
		},
		{
			// signif(x, 3): half a unit in the third digit.
			name: "coef test data (R usl)", n: usltestN, x: usltestX,
			sigma: 0.02, sigmaTol: 0.00005,
			kappa: 0.02, kappaTol: 0.00005,
			lambda: 1.00, lambdaTol: 0.005,
			hasPeak: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := FitUSL(tt.n, tt.x)
			if err != nil {
				t.Fatalf("FitUSL: %v", err)
			}
			if math.Abs(f.Sigma-tt.sigma) > tt.sigmaTol {
				t.Errorf("Sigma = %.10g, published %v ± %v", f.Sigma, tt.sigma, tt.sigmaTol)
			}
			if math.Abs(f.Kappa-tt.kappa) > tt.kappaTol {
				t.Errorf("Kappa = %.10g, published %v ± %v", f.Kappa, tt.kappa, tt.kappaTol)
			}
			if math.Abs(f.Lambda-tt.lambda) > tt.lambdaTol {
				t.Errorf("Lambda = %.10g, published %v ± %v", f.Lambda, tt.lambda, tt.lambdaTol)
			}
			if f.HasPeak != tt.hasPeak {
				t.Errorf("HasPeak = %v, want %v", f.HasPeak, tt.hasPeak)
			}
			if tt.hasPeak {
				want := math.Sqrt((1 - f.Sigma) / f.Kappa)
				if math.Abs(f.PeakN-want) > 1e-9*want || math.Abs(f.PeakThroughput-f.Throughput(want)) > 1e-9*f.PeakThroughput {
					t.Errorf("PeakN, PeakThroughput = %v, %v; want sqrt((1-σ)/κ) = %v and X there", f.PeakN, f.PeakThroughput, want)
				}
			}
			if f.Points != len(tt.n) || f.Levels != len(tt.n) {
				t.Errorf("Points, Levels = %d, %d; want %d, %d", f.Points, f.Levels, len(tt.n), len(tt.n))
			}
			if tt.check != nil {
				tt.check(t, f)
			}
			checkFinite(t, f)
		})
	}
}

func TestFitUSLRecoversKnownModels(t *testing.T) {
	threads := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 16}
	tests := []struct {
		name                 string
		lambda, sigma, kappa float64
		noise                float64 // relative, uniform
		tolerance            float64 // relative, on each coefficient
		warning              string  // a substring of one warning, or ""
	}{
		{"retrograde", 100, 0.05, 0.005, 0, 1e-7, ""},
		{"peak beyond the data", 1000, 0.01, 0.0001, 0, 1e-7, "beyond the largest measured concurrency"},
		{"amdahl only", 500, 0.1, 0, 0, 1e-7, "κ = 0"},
		{"linear", 250, 0, 0, 0, 1e-7, "σ = κ = 0"},
		{"coherency only", 40, 0, 0.01, 0, 1e-7, ""},
		{"noisy retrograde", 100, 0.05, 0.005, 0.01, 0.5, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			random := rand.New(rand.NewPCG(1, 2))
			var n, x []float64
			for _, threads := range threads {
				for range 3 { // three repeats per level, as an experiment runs them
					noise := 1 + tt.noise*(2*random.Float64()-1)
					n = append(n, threads)
					x = append(x, uslThroughput(tt.lambda, tt.sigma, tt.kappa, threads)*noise)
				}
			}
			f, err := FitUSL(n, x)
			if err != nil {
				t.Fatalf("FitUSL: %v", err)
			}
			for _, c := range []struct {
				name      string
				got, want float64
				scale     float64 // what a zero coefficient is compared against
			}{
				{"Lambda", f.Lambda, tt.lambda, tt.lambda},
				{"Sigma", f.Sigma, tt.sigma, 0.01},
				{"Kappa", f.Kappa, tt.kappa, 0.0001},
			} {
				if math.Abs(c.got-c.want) > tt.tolerance*math.Max(math.Abs(c.want), c.scale) {
					t.Errorf("%s = %.8g, want %v within %v", c.name, c.got, c.want, tt.tolerance)
				}
			}
			if tt.noise == 0 && f.RSquared < 1-1e-9 {
				t.Errorf("RSquared = %v, want 1 for exact data", f.RSquared)
			}
			if tt.noise > 0 && f.RSquared < 0.99 {
				t.Errorf("RSquared = %v, want >= 0.99 with 1%% noise", f.RSquared)
			}
			if f.Points != 3*len(threads) || f.Levels != len(threads) {
				t.Errorf("Points, Levels = %d, %d; want %d, %d", f.Points, f.Levels, 3*len(threads), len(threads))
			}
			if tt.warning != "" && !strings.Contains(strings.Join(f.Warnings, "\n"), tt.warning) {
				t.Errorf("Warnings = %q, want one containing %q", f.Warnings, tt.warning)
			}
			if tt.warning == "" && len(f.Warnings) != 0 {
				t.Errorf("Warnings = %q, want none", f.Warnings)
			}
			checkFinite(t, f)
		})
	}
}

func TestFitUSLDescribesThePeak(t *testing.T) {
	tests := []struct {
		name    string
		n, x    []float64
		hasPeak bool
		peakN   float64
		ceiling float64
		text    string
	}{
		{"flat throughput: concurrency never helps", []float64{1, 2, 4, 8}, []float64{50, 50, 50, 50}, true, 1, 0,
			"peak throughput 50 at N=1"},
		{"falling throughput", []float64{1, 2, 4, 8}, []float64{100, 80, 60, 40}, true, 1, 0,
			"at N=1"},
		{"linear scaling", []float64{1, 2, 3, 4}, []float64{10, 20, 30, 40}, false, 0, 0,
			"no peak (σ=κ=0): throughput scales linearly"},
		{"amdahl", []float64{1, 2, 4, 8, 16}, []float64{
			uslThroughput(10, 0.2, 0, 1), uslThroughput(10, 0.2, 0, 2), uslThroughput(10, 0.2, 0, 4),
			uslThroughput(10, 0.2, 0, 8), uslThroughput(10, 0.2, 0, 16)}, false, 0, 50,
			"no peak (κ=0): throughput rises toward λ/σ=50"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := FitUSL(tt.n, tt.x)
			if err != nil {
				t.Fatalf("FitUSL: %v", err)
			}
			if f.HasPeak != tt.hasPeak || math.Abs(f.PeakN-tt.peakN) > 1e-6 || math.Abs(f.Ceiling-tt.ceiling) > 1e-6 {
				t.Errorf("HasPeak, PeakN, Ceiling = %v, %v, %v; want %v, %v, %v (fit %v)",
					f.HasPeak, f.PeakN, f.Ceiling, tt.hasPeak, tt.peakN, tt.ceiling, f)
			}
			if !strings.Contains(f.String(), tt.text) {
				t.Errorf("String() = %q, want it to contain %q", f.String(), tt.text)
			}
			checkFinite(t, f)
		})
	}
}

func TestFitUSLRejectsInputItCannotFit(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name    string
		n, x    []float64
		message string
	}{
		{"nil", nil, nil, "need at least 3 distinct concurrency levels for 3 parameters, got 0"},
		{"lengths differ", []float64{1, 2, 3}, []float64{1, 2}, "3 concurrency values but 2 throughput values"},
		{"two levels", []float64{1, 1, 2, 2, 2}, []float64{10, 11, 19, 20, 21}, "need at least 3 distinct concurrency levels for 3 parameters, got 2"},
		{"zero throughput", []float64{1, 2, 3}, []float64{10, 0, 30}, "throughput[1] (at concurrency 2) is 0, want a positive finite number"},
		{"negative throughput", []float64{1, 2, 3}, []float64{10, 20, -30}, "throughput[2] (at concurrency 3) is -30"},
		{"NaN throughput", []float64{1, 2, 3}, []float64{nan, 20, 30}, "throughput[0] (at concurrency 1) is NaN"},
		{"infinite throughput", []float64{1, 2, 3}, []float64{10, inf, 30}, "throughput[1] (at concurrency 2) is +Inf"},
		{"zero concurrency", []float64{0, 1, 2}, []float64{10, 20, 30}, "concurrency[0] is 0, want a positive finite number"},
		{"negative concurrency", []float64{1, -2, 3}, []float64{10, 20, 30}, "concurrency[1] is -2"},
		{"NaN concurrency", []float64{1, 2, nan}, []float64{10, 20, 30}, "concurrency[2] is NaN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := FitUSL(tt.n, tt.x)
			if !errors.Is(err, ErrCannotFit) {
				t.Fatalf("FitUSL = %v, %v; want an error wrapping ErrCannotFit", f, err)
			}
			if !strings.Contains(err.Error(), tt.message) {
				t.Errorf("error %q does not say %q", err, tt.message)
			}
			if f.Lambda != 0 || f.Points != 0 {
				t.Errorf("FitUSL returned a fit with its error: %+v", f)
			}
		})
	}
}

func TestFitUSLDoesNotModifyItsInput(t *testing.T) {
	n := []float64{8, 1, 4, 2}
	x := []float64{300, 100, 250, 180}
	if _, err := FitUSL(n, x); err != nil {
		t.Fatal(err)
	}
	if n[0] != 8 || n[1] != 1 || x[0] != 300 || x[1] != 100 {
		t.Errorf("input changed: %v %v", n, x)
	}
}

// TestFitUSLOnArbitraryData fits random positive data, most of which no
// USL curve describes well, and checks that every fit still honours the
// constraints and stays finite.
func TestFitUSLOnArbitraryData(t *testing.T) {
	random := rand.New(rand.NewPCG(3, 4))
	for trial := range 300 {
		levels := 3 + random.IntN(10)
		var n, x []float64
		for level := range levels {
			n = append(n, float64(level+1)*(0.5+random.Float64()))
			x = append(x, math.Exp(10*random.Float64()-3))
		}
		f, err := FitUSL(n, x)
		if err != nil {
			if errors.Is(err, ErrCannotFit) && strings.Contains(err.Error(), "distinct") {
				continue // two random levels can coincide
			}
			t.Fatalf("trial %d: FitUSL(%v, %v): %v", trial, n, x, err)
		}
		if !(f.Lambda > 0) || f.Sigma < 0 || f.Kappa < 0 || f.RSquared > 1 {
			t.Errorf("trial %d: constraints broken: %+v", trial, f)
		}
		if f.HasPeak && (f.PeakN < 1 || !(f.PeakThroughput > 0)) {
			t.Errorf("trial %d: peak %v at %v", trial, f.PeakThroughput, f.PeakN)
		}
		checkFinite(t, f)
	}
}

// TestRSquaredIsPrintedAsItIs: R² keeps enough digits not to read as a
// perfect fit, and a fit to flat throughput, whose R² is 0/0, says so in
// words (and stores 0, which JSON can hold, not NaN).
func TestRSquaredIsPrintedAsItIs(t *testing.T) {
	for _, tt := range []struct {
		r2   float64
		want string
	}{
		{0.9964, "0.9964"}, {0.98, "0.9800"}, {0.99996, "0.99996"}, {0.9999999, "0.9999999"}, {1, "1"}, {0.5, "0.5000"}, {-0.25, "-0.2500"},
	} {
		if got := FormatRSquared(tt.r2); got != tt.want {
			t.Errorf("FormatRSquared(%v) = %q, want %q", tt.r2, got, tt.want)
		}
	}
	f, err := FitUSL([]float64{1, 2, 4, 8}, []float64{50, 50, 50, 50})
	if err != nil {
		t.Fatal(err)
	}
	if f.RSquaredDefined || f.RSquared != 0 || !strings.Contains(f.String(), "R² undefined (every throughput equal)") || strings.Contains(f.String(), "NaN") {
		t.Errorf("flat throughput: R² %v (defined %v), %q", f.RSquared, f.RSquaredDefined, f.String())
	}
	if _, err := json.Marshal(f); err != nil {
		t.Errorf("the fit does not encode as JSON: %v", err)
	}
	g, err := FitUSL([]float64{1, 2, 3, 4, 5}, []float64{100, 190, 262, 330, 371})
	if err != nil {
		t.Fatal(err)
	}
	if !g.RSquaredDefined || !strings.Contains(g.String(), "R²="+FormatRSquared(g.RSquared)+":") {
		t.Errorf("fit %q: R² %v", g.String(), g.RSquared)
	}
}
