package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// dynwatch_pending and dynwatch_firing are each timed rule's counts, as the
// source gives them at the scrape.
func TestTimedSeries(t *testing.T) {
	counts := map[string][2]int{"stuck": {3, 1}, "idle": {0, 0}}
	srv := httptest.NewServer(New(Sources{Timed: func() map[string][2]int { return counts }}).Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	body := string(b)
	for _, want := range []string{
		"# TYPE dynwatch_pending gauge", "# TYPE dynwatch_firing gauge",
		`dynwatch_pending{rule="stuck"} 3`, `dynwatch_firing{rule="stuck"} 1`,
		`dynwatch_pending{rule="idle"} 0`, `dynwatch_firing{rule="idle"} 0`,
	} {
		if !strings.Contains(body, "\n"+want+"\n") {
			t.Errorf("/metrics lacks %q:\n%s", want, grepLines(body, "dynwatch_pending")+"\n"+grepLines(body, "dynwatch_firing"))
		}
	}
}
