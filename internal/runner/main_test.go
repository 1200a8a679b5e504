package runner

import (
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/target/targettest"
)

// envBurn makes the test binary a CPU burner: every CPU spun for the
// duration it holds (at most 10 s), then exit.
const envBurn = "LOADLAB_RUNNER_TEST_BURN"

func TestMain(m *testing.M) {
	targettest.Main()
	if d, err := time.ParseDuration(os.Getenv(envBurn)); err == nil {
		burn(min(d, 10*time.Second))
		os.Exit(0)
	}
	os.Exit(targettest.RunInTempDir(m))
}

// burn keeps every CPU busy for d.
func burn(d time.Duration) {
	end := time.Now().Add(d)
	done := make(chan struct{})
	for range runtime.NumCPU() {
		go func() {
			for x := 0; time.Now().Before(end); x++ {
				_ = x * x
			}
			done <- struct{}{}
		}()
	}
	for range runtime.NumCPU() {
		<-done
	}
}
