package dashboard

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
)

func newJar() http.CookieJar {
	j, _ := cookiejar.New(nil)
	return j
}

func drainInto(b *strings.Builder, resp *http.Response) (int64, error) {
	defer resp.Body.Close()
	return io.Copy(b, resp.Body)
}

func getBody(t *testing.T, u string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	b := new(strings.Builder)
	_, _ = drainInto(b, resp)
	return resp, b.String()
}
