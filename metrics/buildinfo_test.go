package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

// dynwatch_build_info is 1, labelled with the version and commit the daemon
// was given and the Go version of the binary, on a scrape of the handler.
func TestBuildInfo(t *testing.T) {
	srv := httptest.NewServer(New(Sources{Build: Build{Version: "v0.2.0", Commit: "0123456789ab"}}).Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/metrics = %d, %v", resp.StatusCode, err)
	}
	want := `dynwatch_build_info{commit="0123456789ab",goversion="` + runtime.Version() + `",version="v0.2.0"} 1`
	if n := strings.Count(string(body), "\ndynwatch_build_info{"); n != 1 || !strings.Contains(string(body), "\n"+want+"\n") {
		t.Errorf("/metrics has %d dynwatch_build_info series, want one: %s\n%s", n, want, grepLines(string(body), "dynwatch_build_info"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
