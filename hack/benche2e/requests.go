package main

import (
	"net/http"
	"strings"
	"sync"
)

// requestCounter counts the requests of a process: discovery documents, and
// the distinct resources listed or watched (one per informer).
type requestCounter struct {
	mu        sync.Mutex
	discovery int
	resources map[string]bool
}

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		c.count(req.URL.Path)
		return rt.RoundTrip(req)
	})
}

// count files a request by its path: /api, /apis, /api/v1 and /apis/g/v are
// discovery; anything longer names a resource.
func (c *requestCounter) count(path string) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case len(parts) == 0 || (parts[0] != "api" && parts[0] != "apis"):
	case parts[0] == "api" && len(parts) <= 2, parts[0] == "apis" && len(parts) <= 3:
		c.discovery++
	default:
		c.resources[path] = true
	}
}

func (c *requestCounter) counts() (discovery, resources int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.discovery, len(c.resources)
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
