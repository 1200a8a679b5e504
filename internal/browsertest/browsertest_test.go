package browsertest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestPlaywrightDrivesChromium: the installed Playwright launches the system
// Chromium, loads a loopback page and reads what its script wrote.
func TestPlaywrightDrivesChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><p id=x></p><script>document.getElementById('x').textContent = 6*7</script>`)
	})}
	go srv.Serve(ln)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	script := `
const { chromium } = require('playwright-core');
(async () => {
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM, args: JSON.parse(process.env.CHROMIUM_ARGS) });
  const page = await browser.newPage();
  await page.goto(process.argv[1]);
  console.log('text=' + await page.textContent('#x'));
  await browser.close();
})().catch(e => { console.error(e); process.exit(1); });`
	out, err := Command(ctx, t, script, "http://"+ln.Addr().String()+"/").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "text=42") {
		t.Fatalf("page text not read: %s", out)
	}
}
