package report

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// chromium returns the path of a Chromium to render the page with. Without
// one the test skips, unless HUDDLE_REQUIRE_CHROMIUM=1 (CI installs it)
// makes that a failure.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("HUDDLE_REQUIRE_CHROMIUM") == "1" {
		t.Fatal("no chromium on this machine (/usr/bin/chromium, or on PATH), and HUDDLE_REQUIRE_CHROMIUM=1: install Debian's chromium package")
	}
	t.Skip("no chromium on this machine (/usr/bin/chromium, or on PATH): the page is not rendered (apt-get install chromium; HUDDLE_REQUIRE_CHROMIUM=1 makes this a failure)")
	return ""
}

// runChromium runs headless Chromium on the page with extra flags and
// returns its standard output.
func runChromium(t *testing.T, bin, page string, flags ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir()}, flags...)
	cmd := exec.CommandContext(ctx, bin, append(args, "file://"+page)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(flags, " "), err, stderr.Bytes())
	}
	return stdout.Bytes()
}

// TestChromiumRendersReport renders a synthetic run's report in headless
// Chromium: the DOM Chromium built holds every plot as an SVG element
// with its paths and text, the empty-data notes are absent, and a
// screenshot of the page is not blank.
func TestChromiumRendersReport(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	synthetic(t, dir, 2)
	rep, err := Write(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	page, _ := filepath.Abs(rep.HTML)
	dom := string(runChromium(t, bin, page, "--dump-dom"))
	if !strings.Contains(dom, "<h1>huddle report: ") {
		t.Fatalf("Chromium's DOM is not the report:\n%.2000s", dom)
	}
	svgs := regexp.MustCompile(`(?s)<svg class="plot".*?</svg>`).FindAllString(dom, -1)
	drawn := 0
	for _, ch := range rep.Charts {
		if ch.Empty == "" {
			drawn++
		}
	}
	if len(svgs) != drawn || drawn != 7 {
		t.Errorf("Chromium's DOM has %d plots; the report drew %d, want 7", len(svgs), drawn)
	}
	for i, svg := range svgs {
		if strings.Count(svg, "<path") < 5 || !strings.Contains(svg, "<text") {
			t.Errorf("plot %d in Chromium's DOM has %d paths and no text: not drawn\n%.500s", i+1, strings.Count(svg, "<path"), svg)
		}
	}
	if strings.Contains(dom, `class="empty"`) {
		t.Error("a plot of the synthetic run says it has no data")
	}

	shot := filepath.Join(t.TempDir(), "report.png")
	runChromium(t, bin, page, "--hide-scrollbars", "--window-size=1000,3000", "--screenshot="+shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("the screenshot: %v", err)
	}
	if ink, colours := inked(img); ink < 0.03 || colours < 8 {
		t.Errorf("the screenshot is %.1f %% ink in %d colours: blank, or the plots were not drawn", 100*ink, colours)
	}
}

// inked returns the fraction of img's pixels that are not white, and how
// many distinct colours it has (up to 1000).
func inked(img image.Image) (float64, int) {
	b := img.Bounds()
	ink, n := 0, 0
	colours := map[color.RGBA]bool{}
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			n++
			if r>>8 < 245 || g>>8 < 245 || bl>>8 < 245 {
				ink++
			}
			if len(colours) < 1000 {
				colours[color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), 255}] = true
			}
		}
	}
	return float64(ink) / float64(n), len(colours)
}
